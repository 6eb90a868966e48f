"""Training time as value objects: ``Time("10ep")`` and the ``Timestamp`` of loop counters.

After Composer's ``core/time.py``, kept small: a ``Time`` is a number with a unit,
and a ``Timestamp`` is an immutable snapshot of every counter the loop advances.
"""

from __future__ import annotations

import dataclasses
import re
from enum import Enum
from typing import Any


class TimeUnit(Enum):
    EPOCH = "ep"
    BATCH = "ba"
    SAMPLE = "sp"
    TOKEN = "tok"
    DURATION = "dur"  # a fraction of max_duration, in [0, 1]


_TIMESTRING = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ep|ba|sp|tok|dur)\s*$")
_UNITS = ", ".join(f"'{u.value}'" for u in TimeUnit)


@dataclasses.dataclass(frozen=True)
class Time:
    """A non-negative amount of training time: whole epochs/batches/samples/tokens, or a duration fraction."""

    value: int | float
    unit: TimeUnit

    def __post_init__(self) -> None:
        unit = self.unit if isinstance(self.unit, TimeUnit) else TimeUnit(self.unit)
        object.__setattr__(self, "unit", unit)
        if self.value < 0:
            raise ValueError(f"Time cannot be negative, got {self.value}{unit.value}")
        if unit is TimeUnit.DURATION:
            object.__setattr__(self, "value", float(self.value))
        else:
            if float(self.value) != int(self.value):
                raise ValueError(f"{unit.name.lower()}s must be a whole number, got {self.value}{unit.value}")
            object.__setattr__(self, "value", int(self.value))

    @classmethod
    def from_timestring(cls, timestring: str) -> Time:
        """Parse ``"10ep"``, ``"500ba"``, ``"4096sp"``, ``"1000tok"`` or ``"0.5dur"``."""
        match = _TIMESTRING.match(timestring) if isinstance(timestring, str) else None
        if match is None:
            raise ValueError(
                f"Invalid time string {timestring!r}: expected a number followed by one of {_UNITS}, "
                "e.g. '10ep', '500ba', '0.5dur'"
            )
        number, unit = match.groups()
        return cls(float(number) if unit == "dur" else _whole(number, timestring), TimeUnit(unit))

    @classmethod
    def from_input(cls, value: str | Time) -> Time:
        return value if isinstance(value, Time) else cls.from_timestring(value)

    def _same_unit(self, other: Any, op: str) -> Time:
        if isinstance(other, str):
            other = Time.from_timestring(other)
        if not isinstance(other, Time):
            return NotImplemented
        if other.unit is not self.unit:
            raise TypeError(f"Cannot {op} {self} and {other}: units differ")
        return other

    def __add__(self, other: Time | str) -> Time:
        other = self._same_unit(other, "add")
        return other if other is NotImplemented else Time(self.value + other.value, self.unit)

    def __sub__(self, other: Time | str) -> Time:
        other = self._same_unit(other, "subtract")
        return other if other is NotImplemented else Time(self.value - other.value, self.unit)

    def __mul__(self, factor: float) -> Time:
        if not isinstance(factor, int | float):
            return NotImplemented
        product = self.value * factor
        return Time(product if self.unit is TimeUnit.DURATION else round(product), self.unit)

    __rmul__ = __mul__

    def __truediv__(self, other: Time | str) -> float:
        """The ratio of two times of one unit (``Time(5, 'ep') / Time(10, 'ep') == 0.5``)."""
        other = self._same_unit(other, "divide")
        return other if other is NotImplemented else self.value / other.value

    def _compare(self, other: Any) -> tuple[float, float] | None:
        checked = self._same_unit(other, "compare")
        return None if checked is NotImplemented else (self.value, checked.value)

    def __lt__(self, other: Time | str) -> bool:
        pair = self._compare(other)
        return NotImplemented if pair is None else pair[0] < pair[1]

    def __le__(self, other: Time | str) -> bool:
        pair = self._compare(other)
        return NotImplemented if pair is None else pair[0] <= pair[1]

    def __gt__(self, other: Time | str) -> bool:
        pair = self._compare(other)
        return NotImplemented if pair is None else pair[0] > pair[1]

    def __ge__(self, other: Time | str) -> bool:
        pair = self._compare(other)
        return NotImplemented if pair is None else pair[0] >= pair[1]

    def __str__(self) -> str:
        return f"{self.value}{self.unit.value}"


def _whole(number: str, timestring: str) -> int:
    if float(number) != int(float(number)):
        raise ValueError(f"Invalid time string {timestring!r}: only 'dur' takes a fraction")
    return int(float(number))


@dataclasses.dataclass(frozen=True)
class Timestamp:
    """Every counter of training progress at one moment; advanced by returning a new Timestamp."""

    epoch: int = 0
    batch: int = 0
    sample: int = 0
    token: int = 0
    batch_in_epoch: int = 0
    sample_in_epoch: int = 0
    token_in_epoch: int = 0
    total_wct: float = 0.0  # wall-clock seconds spent in training batches

    def get(self, unit: TimeUnit | str) -> Time:
        """This timestamp's count in ``unit`` (duration needs max_duration: see ``State.get_elapsed_duration``)."""
        unit = TimeUnit(unit)
        counts = {
            TimeUnit.EPOCH: self.epoch,
            TimeUnit.BATCH: self.batch,
            TimeUnit.SAMPLE: self.sample,
            TimeUnit.TOKEN: self.token,
        }
        if unit not in counts:
            raise ValueError("A Timestamp does not know its duration fraction; use State.get_elapsed_duration()")
        return Time(counts[unit], unit)

    def reached(self, time: Time) -> bool:
        """Whether this timestamp is at or past ``time`` (epochs, batches, samples or tokens)."""
        return self.get(time.unit) >= time

    def to_next_batch(self, samples: int, tokens: int = 0, duration_s: float = 0.0) -> Timestamp:
        return dataclasses.replace(
            self,
            batch=self.batch + 1,
            sample=self.sample + samples,
            token=self.token + tokens,
            batch_in_epoch=self.batch_in_epoch + 1,
            sample_in_epoch=self.sample_in_epoch + samples,
            token_in_epoch=self.token_in_epoch + tokens,
            total_wct=self.total_wct + duration_s,
        )

    def to_next_epoch(self) -> Timestamp:
        return dataclasses.replace(self, epoch=self.epoch + 1, batch_in_epoch=0, sample_in_epoch=0, token_in_epoch=0)

    def state_dict(self) -> dict[str, int | float]:
        return dataclasses.asdict(self)

    @classmethod
    def from_state_dict(cls, state: dict[str, int | float]) -> Timestamp:
        return cls(**state)
