import re

import pytest

from raycomp.core import Time, Timestamp, TimeUnit


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("10ep", 10, TimeUnit.EPOCH),
        ("500ba", 500, TimeUnit.BATCH),
        ("4096sp", 4096, TimeUnit.SAMPLE),
        ("1000tok", 1000, TimeUnit.TOKEN),
        ("0.5dur", 0.5, TimeUnit.DURATION),
        (" 1dur ", 1.0, TimeUnit.DURATION),
    ],
)
def test_parse(text, value, unit):
    time = Time.from_timestring(text)
    assert (time.value, time.unit) == (value, unit)
    assert type(time.value) is (float if unit is TimeUnit.DURATION else int)


@pytest.mark.parametrize("text", ["10", "ep", "10 epochs", "-3ba", "1.5ep", "10EP", "", "1e3ba"])
def test_bad_strings_name_themselves(text):
    with pytest.raises(ValueError, match=re.escape(f"Invalid time string {text!r}")):
        Time.from_timestring(text)


def test_bad_string_message_is_helpful():
    with pytest.raises(ValueError, match=r"Invalid time string '10 epochs'.*'ep'.*'dur'"):
        Time.from_timestring("10 epochs")


def test_constructor_validates():
    assert Time(3, "ba") == Time(3, TimeUnit.BATCH)
    with pytest.raises(ValueError, match="negative"):
        Time(-1, "ep")
    with pytest.raises(ValueError, match="whole number"):
        Time(1.5, "ba")
    with pytest.raises(ValueError):
        Time(1, "weeks")


def test_arithmetic_and_comparison():
    assert Time(3, "ep") + Time(2, "ep") == Time(5, "ep")
    assert Time(3, "ep") + "2ep" == Time(5, "ep")
    assert Time(5, "ba") - Time(2, "ba") == Time(3, "ba")
    assert Time(4, "sp") * 2 == Time(8, "sp") == 2 * Time(4, "sp")
    assert Time(0.25, "dur") * 2 == Time(0.5, "dur")
    assert Time(5, "ep") / Time(10, "ep") == 0.5
    assert Time(3, "ep") < Time(4, "ep") <= Time(4, "ep")
    assert Time(9, "ba") > "8ba"
    assert Time(9, "ba") >= Time(9, "ba")
    assert sorted([Time(3, "ba"), Time(1, "ba")]) == [Time(1, "ba"), Time(3, "ba")]
    assert str(Time(10, "ep")) == "10ep"


def test_mixing_units_raises():
    with pytest.raises(TypeError, match="units differ"):
        Time(1, "ep") + Time(1, "ba")
    with pytest.raises(TypeError, match="units differ"):
        _ = Time(1, "ep") < Time(1, "ba")
    with pytest.raises(ValueError, match="negative"):
        Time(1, "ep") - Time(2, "ep")


def test_timestamp_advances_immutably():
    start = Timestamp()
    after = start.to_next_batch(samples=16, tokens=0, duration_s=0.5).to_next_batch(samples=8)
    assert start.batch == 0
    assert (after.batch, after.sample, after.batch_in_epoch, after.sample_in_epoch) == (2, 24, 2, 24)
    assert after.total_wct == 0.5
    next_epoch = after.to_next_epoch()
    assert (next_epoch.epoch, next_epoch.batch, next_epoch.batch_in_epoch, next_epoch.sample) == (1, 2, 0, 24)
    assert next_epoch.get("ep") == Time(1, "ep")
    assert next_epoch.reached(Time(2, "ba")) and not next_epoch.reached(Time(25, "sp"))
    assert Timestamp.from_state_dict(next_epoch.state_dict()) == next_epoch
    with pytest.raises(ValueError, match="get_elapsed_duration"):
        next_epoch.get(TimeUnit.DURATION)
