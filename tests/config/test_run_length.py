"""A run's length from its config alone, and the warning for a method's time argument that reaches the run's end
(raycomp.config.run_length): EMA's default half-life of 1000 batches on a 32-batch run (issue 55)."""

from __future__ import annotations

import pytest

from raycomp.config import ExperimentConfig
from raycomp.config.run_length import RunLength, duration_warnings, long_arguments, run_length

SHORT = {"data": {"num_train": 2000, "batch_size": 128}, "max_duration": "2ep", "scaling": {"num_workers": 0}}


def config(**changes: object) -> ExperimentConfig:
    return ExperimentConfig.from_dict({**SHORT, **changes})


@pytest.mark.parametrize(
    ("changes", "batches", "epochs"),
    [
        ({}, 32, 2.0),  # 16 batches of 128 (the last one partial) per epoch
        ({"compile": True}, 30, 2.0),  # compiled: full batches only, 15 per epoch
        ({"scaling": {"num_workers": 3}}, 12, 2.0),  # 667 samples per worker (padded): 6 batches
        ({"max_duration": "40ba"}, 40, 2.5),
    ],
)
def test_the_run_s_length_as_the_config_tells_it(changes, batches, epochs):
    assert run_length(config(**changes)) == RunLength(batches, epochs)


def test_a_data_module_s_batches_are_unknown_before_the_trial_but_its_epochs_are_not():
    user_data = {"class_path": "raycomp.data.synthetic.SyntheticCIFAR", "init_args": {"num_samples": 64}}
    length = run_length(ExperimentConfig.from_dict({**SHORT, "data": user_data}))
    assert length == RunLength(None, 2.0)
    assert length.outlasted_by("1000ba") is None and length.outlasted_by("3ep") == "longer than"


def test_a_default_half_life_longer_than_the_run_is_one_warning_at_its_key():
    (line,) = duration_warnings(config(algorithms={"ema": {}}))
    assert line.startswith("algorithms.ema.half_life: 1000ba (its default) is longer than the run (2ep, 32ba)")
    assert "'0.1dur'" in line


@pytest.mark.parametrize(
    ("ema", "warned"),
    [
        ({"half_life": "5ba"}, []),
        ({"half_life": "0.5dur"}, []),  # a share of the run: never too long
        ({"half_life": "32ba"}, ["algorithms.ema.half_life: 32ba is as long as"]),
        (
            {"half_life": "3ep", "ema_start": "40ba"},
            ["algorithms.ema.half_life: 3ep is longer than", "algorithms.ema.ema_start: 40ba is longer than"],
        ),
        (
            {"half_life": None, "smoothing": 0.9, "update_interval": "2ep"},
            ["algorithms.ema.update_interval: 2ep is as long as"],
        ),
    ],
)
def test_each_time_argument_is_measured_against_the_run(ema, warned):
    found = duration_warnings(config(algorithms={"ema": ema}))
    assert [line.split(" the run (2ep, 32ba): ")[0] for line in found] == warned


def test_a_swept_time_argument_is_checked_at_each_value_the_sweep_can_draw():
    sweep = {"space": {"algorithms.ema.half_life": {"choice": ["5ba", "100ba", "0.1dur"]}}}
    found = duration_warnings(config(algorithms={"ema": {}}, sweep=sweep))
    assert found == [
        "sweep.space.algorithms.ema.half_life.choice[1]: 100ba is longer than the run (2ep, 32ba): shorten it, or "
        "give it as a fraction of the run where it takes one (e.g. '0.1dur')"
    ]  # the configured default (1000ba) is never trained: every trial draws its own


def test_a_find_method_s_arguments_are_measured_over_its_defaults():
    short = config()
    assert long_arguments(short, ("find", "methods", "ema"), "ema", {}) == [
        "find.methods.ema.half_life: 1000ba (its default) is longer than the run (2ep, 32ba): shorten it, or give it "
        "as a fraction of the run where it takes one (e.g. '0.1dur')"
    ]
    assert long_arguments(short, ("find", "methods", "ema"), "ema", {"half_life": "0.1dur"}) == []
    assert long_arguments(short, ("find", "methods", "mixup"), "mixup", {}) == []


@pytest.mark.parametrize(
    ("proxy", "fraction", "duration", "problem"),
    [
        ("0.25dur", 0.25, "2ep", ""),
        ("2ep", 0.25, "2ep", ""),
        ("32ba", 0.25, "2ep", ""),  # 128 batches in 8 epochs of 16
        ("0.1dur", 0.1, "13ba", ""),  # 0.8 epochs: batches
        ("8ep", None, None, "8ep is not shorter than max_duration 8ep"),
    ],
)
def test_a_proxy_is_its_share_of_the_run_in_the_runs_own_units(proxy, fraction, duration, problem):
    """Issue 57: find.proxy.max_duration as a share of the run, and the run it trains."""
    from raycomp.config.run_length import proxy_duration, proxy_fraction

    found = config(max_duration="8ep", find={"methods": ["mixup"], "proxy": {"max_duration": proxy}})
    share, why = proxy_fraction(found)
    assert why == problem and (share is None if fraction is None else share == pytest.approx(fraction))
    if duration is not None:
        assert str(proxy_duration(found, share)) == duration


def test_a_proxy_in_batches_of_a_run_counted_in_epochs_of_uncounted_data_is_refused_with_the_fix():
    from raycomp.config.run_length import proxy_fraction

    text = {"data": {"name": "stdlib_text", "batch_size": 8}, "model": {"name": "gpt"}}  # its batches: the loader's
    found = config(**text, find={"methods": ["mixup"], "proxy": {"max_duration": "32ba"}})
    assert proxy_fraction(found) == (
        None,
        "32ba cannot be compared with max_duration 2ep: give it as a fraction of the run (0.25dur)",
    )
    assert proxy_fraction(config(**text)) == (None, "")  # no find section: no proxy
