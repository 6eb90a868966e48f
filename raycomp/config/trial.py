"""The config one trial of a sweep trains: its arm applied to the driver's validated config, sweep dropped.

A trial validates only its own values, once: it never re-checks the domains of the other trials, nor the
scheduler options the driver filled in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raycomp.base import keys
from raycomp.config.arm import Arm
from raycomp.core.time import Time, TimeUnit

if TYPE_CHECKING:
    from raycomp.config.schema import ExperimentConfig


def trial_config(base: ExperimentConfig, arm: Arm) -> ExperimentConfig:
    """The config one trial of ``base``'s sweep trains: ``sweep`` dropped, the arm applied, validated once.

    The baseline, its ``control`` twin and its ``frontier`` budgets drop the swept algorithms (all of them
    if none is swept) and ignore the overrides; a ``frontier`` arm trains ``budget`` of ``max_duration``
    with its own complete schedule (resolved here when the config can name it, else by its workers from their
    train loader: ``worker_budget``); a ``method`` arm applies its sampled values, and runs only the algorithms
    its ``algorithms`` value lists when the sweep selects them. Every trial trains with
    seed ``base.seed + arm.repeat`` on the base's data (``data.seed``).
    """
    variant = arm.variant
    swept = base.sweep.swept_algorithms() if base.sweep else []
    data_seed = base.seed if base.data.seed is None else base.data.seed
    repeat = {"seed": base.seed + arm.repeat, "data.seed": data_seed}
    unswept = base.model_copy(update={"sweep": None})
    if variant == keys.METHOD:
        dropped, overrides = base.sweep.left_out(dict(arm.overrides)) if base.sweep else ([], dict(arm.overrides))
        chosen = unswept.without_algorithms(dropped) if dropped else unswept  # space.algorithms: this arm's list
        return chosen.with_overrides({**(overrides or {}), **repeat})
    duration = budget_duration(base.max_duration, float(arm.budget or 1.0)) if variant == keys.FRONTIER else None
    if duration is not None:  # else the baseline's, which the trial's workers scale (``worker_budget``)
        repeat["max_duration"] = str(duration)
    return unswept.without_algorithms(swept or list(base.algorithms)).with_overrides(repeat)


def worker_budget(base: ExperimentConfig, arm: Arm) -> float | None:
    """The budget a frontier trial's workers still have to turn into batches (``budget_duration`` with their own
    train loader's length), None when ``trial_config`` could name the duration itself (or the arm is no frontier).

    Only a worker has the loader the baseline really steps through: a data module's or callable's, batching by
    its own batch size, sharded under DDP; the config's ``data.batch_size`` and dataset size say nothing of it.
    """
    if arm.variant != keys.FRONTIER:
        return None
    budget = float(arm.budget or 1.0)
    return budget if budget_duration(base.max_duration, budget) is None else None


def budget_duration(duration: Time, budget: float, steps_per_epoch: int | None = None) -> Time | None:
    """``budget`` of the baseline's ``duration``, counted in the steps the baseline really takes.

    Whole epochs when ``duration`` x ``budget`` comes out whole; batches, samples or tokens scaled (rounded,
    >= 1); else ``round(budget x epochs x steps_per_epoch)`` batches, where ``steps_per_epoch`` is the length of
    the train loader a worker trains with (gradient accumulation splits a batch, not the steps), and None
    without it: a guess from the config's batch size priced a data module batching by 32 as if it batched by 128.
    """
    scaled = duration.value * budget
    if duration.unit is not TimeUnit.EPOCH:
        return Time(max(1, round(scaled)), duration.unit)
    if abs(scaled - round(scaled)) < 1e-9:
        return Time(max(1, round(scaled)), TimeUnit.EPOCH)
    if steps_per_epoch is None:
        return None
    return Time(max(1, round(scaled * steps_per_epoch)), TimeUnit.BATCH)
