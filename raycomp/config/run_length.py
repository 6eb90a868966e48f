"""A run's length as its config tells it before any trial starts, and the methods' time arguments that outlast it.

A method's time argument is fixed in batches or epochs, but its run may be short: EMA's default half-life of 1000
batches on a 32-batch run evaluates nearly the weights it started from (issue 55: 78 points below the baseline).
Such a config is valid, so this is a warning, printed before a sweep or a find starts, one line per key. A time
in ``dur`` (a fraction of the run) fits every run and is never one.

The length in batches is known from the config alone when ``max_duration`` is in batches, or in epochs of the
built-in synthetic or CIFAR-10 data, whose size, sharding and batch the config fixes. Other data (a data module, a
corpus, a folder) is only counted by the trial's own loader: there an argument in epochs is still compared with a
run in epochs, and one in batches with nothing.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from raycomp.algorithms.registry import arguments_schema
from raycomp.config.messages import KeyPath, dotted
from raycomp.config.sweep import SPACE
from raycomp.core.time import Time, TimeUnit

if TYPE_CHECKING:
    from raycomp.config.schema import ExperimentConfig

_COUNTED_DATA = ("synthetic", "cifar10")  # data whose batches per epoch the config fixes


@dataclasses.dataclass(frozen=True)
class RunLength:
    """A run's length in batches and in epochs, each None where the config does not tell it."""

    batches: int | None
    epochs: float | None

    def __str__(self) -> str:
        shown = [f"{self.epochs:g}ep"] if self.epochs is not None and self.epochs == int(self.epochs) else []
        return ", ".join([*shown, *([f"{self.batches}ba"] if self.batches is not None else [])])

    def outlasted_by(self, value: Any) -> str | None:
        """``longer than``/``as long as`` when ``value`` (a time string in ``ba`` or ``ep``) reaches the run's end."""
        if not isinstance(value, str):
            return None
        try:
            time = Time.from_timestring(value)
        except ValueError:
            return None
        length = {TimeUnit.BATCH: self.batches, TimeUnit.EPOCH: self.epochs}.get(time.unit)
        if length is None or time.value < length:
            return None
        return "longer than" if time.value > length else "as long as"


def steps_per_epoch(config: ExperimentConfig) -> int | None:
    """Batches per epoch of each worker, as ``recipe.build_dataloader`` shards and batches the built-in data
    (``DistributedSampler`` pads, or drops with ``compile``'s full batches); None for any other data."""
    data = config.data
    if data.class_path is not None or data.name not in _COUNTED_DATA:
        return None
    world, drop_last = max(1, config.scaling.num_workers), config.compile is not False
    per_worker = data.train_size // world if drop_last else math.ceil(data.train_size / world)
    return per_worker // data.batch_size if drop_last else math.ceil(per_worker / data.batch_size)


def run_length(config: ExperimentConfig) -> RunLength:
    """``max_duration`` (epochs or batches) in both units, where the config tells ``steps_per_epoch``."""
    duration, steps = config.max_duration, steps_per_epoch(config)
    if duration.unit is TimeUnit.BATCH:
        return RunLength(int(duration.value), duration.value / steps if steps else None)
    return RunLength(int(duration.value * steps) if steps is not None else None, float(duration.value))


def long_arguments(config: ExperimentConfig, where: KeyPath, name: str, given: Mapping[str, Any]) -> list[str]:
    """A warning for each time argument of method ``name`` (``given`` over its defaults) that reaches the end of
    ``config``'s run; ``where`` is the key its arguments are given at (a find's ``find.methods.<name>``)."""
    length, fields = run_length(config), arguments_schema(name).model_fields
    values = {arg: field.default for arg, field in fields.items() if not field.is_required()} | dict(given)
    found = [_outlasting(length, (*where, arg), value, arg not in given) for arg, value in values.items()]
    return [line for line in found if line]


def duration_warnings(config: ExperimentConfig) -> list[str]:
    """The time arguments of the experiment's algorithms that reach the end of its run, given or default, and
    each value a sweep can draw for one (``sweep.space.algorithms.<name>.<argument>``) that does."""
    length, found = run_length(config), []
    space = config.sweep.space if config.sweep is not None else {}
    for name, arguments in config.algorithms.items():
        given = arguments.given()
        for arg, value in dict(arguments).items():
            path = f"algorithms.{name}.{arg}"
            domain = space.get(path)
            if domain is None:
                found.append(_outlasting(length, ("algorithms", name, arg), value, arg not in given))
            elif domain.kind in ("grid", "choice"):  # a range draws numbers: never a time
                found += [
                    _outlasting(length, (*SPACE, path, domain.kind, index), drawn, False)
                    for index, drawn in enumerate(domain.values)
                ]
    return [line for line in found if line]


def _outlasting(length: RunLength, where: KeyPath, value: Any, default: bool) -> str | None:
    outlasts = length.outlasted_by(value)
    if outlasts is None:
        return None
    return (
        f"{dotted(where)}: {value}{' (its default)' if default else ''} is {outlasts} the run ({length}): shorten "
        "it, or give it as a fraction of the run where it takes one (e.g. '0.1dur')"
    )


def proxy_arguments(config: ExperimentConfig, name: str, given: Mapping[str, Any]) -> dict[str, str]:
    """Method ``name``'s time arguments in batches or epochs (``given`` over its defaults) as their share of
    ``config``'s run, for a proxy (a shorter run) to keep: ``1000ba`` of a 4,000-batch run is ``0.25dur``, which
    a fixed 1000 batches on a quarter of the run would outlast. An argument whose share the config cannot tell
    (batches of a run counted in epochs of data it cannot count) is left as it is; a fraction (``dur``) needs none."""
    length, fields = run_length(config), arguments_schema(name).model_fields
    values = {arg: field.default for arg, field in fields.items() if not field.is_required()} | dict(given)
    scaled = {}
    for arg, value in values.items():
        try:
            time = Time.from_timestring(value) if isinstance(value, str) else None
        except ValueError:
            time = None
        total = {TimeUnit.BATCH: length.batches, TimeUnit.EPOCH: length.epochs}.get(time.unit) if time else None
        if time is not None and total:
            scaled[arg] = f"{min(1.0, time.value / total):.6g}dur"
    return scaled


def proxy_fraction(config: ExperimentConfig) -> tuple[float | None, str]:
    """The share of ``config``'s run its ``find.proxy`` trains, and "" or why it cannot be told (at its key)."""
    proxy = config.find.proxy if config.find is not None else None
    if proxy is None:
        return None, ""
    time, full = Time.from_timestring(proxy.max_duration), config.max_duration
    if time.unit is TimeUnit.DURATION:
        return time.value, ""
    if time.unit is full.unit:
        fraction = time.value / full.value
    else:
        length = run_length(config)
        total = {TimeUnit.BATCH: length.batches, TimeUnit.EPOCH: length.epochs}.get(time.unit)
        if not total:
            fix = "give it as a fraction of the run (0.25dur)"
            return None, f"{proxy.max_duration} cannot be compared with max_duration {full}: {fix}"
        fraction = time.value / total
    if fraction >= 1:
        return None, f"{proxy.max_duration} is not shorter than max_duration {full}"
    return fraction, ""


def proxy_duration(config: ExperimentConfig, fraction: float) -> Time:
    """``fraction`` of ``config``'s run as its own ``max_duration``: whole epochs where they come out whole, else
    batches (at least one)."""
    full = config.max_duration
    scaled = full.value * fraction
    if full.unit is TimeUnit.EPOCH and abs(scaled - round(scaled)) > 1e-9:
        batches = run_length(config).batches
        if batches is not None:
            return Time(max(1, round(batches * fraction)), TimeUnit.BATCH)
    return Time(max(1, round(scaled)), full.unit)
