"""The config one trial of a sweep trains: its arm applied to the driver's validated config, sweep dropped.

A trial validates only its own values, once: it never re-checks the domains of the other trials, nor the
scheduler options the driver filled in.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from raycomp.base import keys
from raycomp.config.arm import Arm
from raycomp.core.time import TimeUnit

if TYPE_CHECKING:
    from raycomp.config.schema import ExperimentConfig


def trial_config(base: ExperimentConfig, arm: Arm) -> ExperimentConfig:
    """The config one trial of ``base``'s sweep trains: ``sweep`` dropped, the arm applied, validated once.

    The baseline, its ``control`` twin and its ``frontier`` budgets drop the swept algorithms (all of them
    if none is swept) and ignore the overrides; a ``frontier`` arm trains ``budget`` of ``max_duration``
    with its own complete schedule; a ``method`` arm applies its sampled values, and runs only the algorithms
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
    if variant == keys.FRONTIER:
        repeat["max_duration"] = budget_duration(base, float(arm.budget or 1.0))
    return unswept.without_algorithms(swept or list(base.algorithms)).with_overrides(repeat)


def budget_duration(config: ExperimentConfig, budget: float) -> str:
    """``budget`` of ``max_duration``: whole epochs when it comes out whole, else batches (rounded, >= 1)."""
    duration = config.max_duration
    epochs = duration.value * budget
    if duration.unit is TimeUnit.EPOCH and abs(epochs - round(epochs)) < 1e-9:
        return f"{max(1, round(epochs))}ep"
    steps = duration.value
    if duration.unit is TimeUnit.EPOCH:
        per_worker = math.ceil(config.data.train_size / max(1, config.scaling.num_workers))
        steps *= math.ceil(per_worker / config.data.batch_size)  # DistributedSampler pads; no drop_last
    return f"{max(1, round(steps * budget))}ba"
