"""Adaptive repeats (``sweep.max_repeats``): seeds go only where the verdict is still open.

After the sweep's first ``repeats`` seeds, the driver judges every configuration (the same
``summarize_configs`` the report uses, each at its own look's level: ``intervals.look_confidence`` spends
alpha over the looks, so looking again does not raise false verdicts) and trains one more paired seed of
each configuration still ``no evidence``, with the baseline, its frontier budgets and the control at that
seed. It repeats until every configuration is resolved (``faster``, ``slower``, ``equivalent``,
``trade-off`` or ``less accurate``: clearly worse ones stop too), reaches ``max_repeats``, or the sweep has
run ``max_sweep_s``. Each round is one more Tune experiment in the sweep's folder (``ledger.py``'s
``more-<k>``, as ``--extend`` adds; several past ``runner.TRIALS_PER_EXPERIMENT`` arms), so ``--resume``
restores it like any other and then goes on looking.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from raycomp.base import keys
from raycomp.config import ExperimentConfig
from raycomp.config.arm import Arm
from raycomp.launch.sweep.ledger import next_folder, relabeled, result_arm
from raycomp.results.configs import SweepVerdicts
from raycomp.results.verdicts import RESOLVED

if TYPE_CHECKING:
    from raycomp.launch.sweep.outcome import ExperimentResults, SweepOutcome

TrainRound = Callable[[list[Arm], tuple[str, str]], "SweepOutcome"]  # a round's arms, its first folder


def judge(config: ExperimentConfig, grids: list[ExperimentResults]) -> SweepVerdicts:
    """The sweep's verdicts so far, judged as its end will judge them."""
    from raycomp.launch.sweep.outcome import trial_records
    from raycomp.results.configs import judge_sweep
    from raycomp.results.summary import summarize

    metric, mode = config.objective
    return judge_sweep(summarize(trial_records(grids), metric, mode), mode, config.sweep_or_default)


def first_look_spread(config: ExperimentConfig, grids: list[ExperimentResults]) -> str | None:
    """The baseline's spread at the first look, and the seeds it takes to show equal accuracy (results/spread.py)."""
    from raycomp.launch.sweep.outcome import trial_records
    from raycomp.results.judging import Judging
    from raycomp.results.spread import sweep_spread
    from raycomp.results.summary import summarize

    metric, mode = config.objective
    return sweep_spread(summarize(trial_records(grids), metric, mode), Judging.of(config.sweep_or_default))


def open_configs(verdicts: SweepVerdicts, max_repeats: int) -> dict[str, int]:
    """Each method configuration that needs another seed, with the seed (repeat index) it gets next."""
    wanted = {}
    for config in verdicts.configs:
        verdict = config.verdict
        if config.variant != keys.METHOD or verdict is None or verdict.verdict in RESOLVED:
            continue
        if verdict.n == 0:  # every trial failed (or was stopped): another seed would fail the same way
            continue
        if len(config.seeds) < max_repeats:
            wanted[config.config_id] = max(config.seeds, default=-1) + 1
    return wanted


def next_arms(config: ExperimentConfig, wanted: dict[str, int], trained: list[Arm]) -> list[Arm]:
    """The arms of the next round: each wanted configuration at its next seed, and the references (baseline,
    control, frontier budgets) at every such seed they lack; in the sweep's shuffled order of each seed."""
    from raycomp.launch.sweep.space import sweep_arms

    sweep = config.sweep_or_default
    seeds = set(wanted.values())
    deepest = max(seeds) + 1
    longer = config.model_copy(update={"sweep": sweep.model_copy(update={"repeats": deepest})})
    have = {arm.key() for arm in trained}
    arms = []
    for arm in relabeled(sweep_arms(longer), trained):
        if arm.key() in have or arm.repeat not in seeds:
            continue
        if arm.variant == keys.METHOD and wanted.get(arm.config_id) != arm.repeat:
            continue
        arms.append(arm)
    return arms


def adapt(
    config: ExperimentConfig, grids: list[ExperimentResults], train_round: TrainRound, *, started: float
) -> SweepOutcome | None:
    """Adds rounds of seeds to ``grids`` (in place) until nothing is open; returns the last round's outcome when
    an interrupt (Ctrl-C, SIGTERM) stopped it, else None. A round past ``runner.TRIALS_PER_EXPERIMENT`` arms
    trains in parts, as the sweep's own arms do."""
    sweep = config.sweep_or_default
    max_repeats = sweep.max_repeats or sweep.repeats
    first_look = True
    while True:
        verdicts = judge(config, grids)
        if first_look and (spread := first_look_spread(config, grids)):
            print(f"adaptive repeats: {spread}", flush=True)  # what the seeds can show, before more are spent
        first_look = False
        wanted = open_configs(verdicts, max_repeats)
        if not wanted:
            print("adaptive repeats: every configuration resolved or at max_repeats", flush=True)
            return None
        if sweep.max_sweep_s is not None and time.monotonic() - started >= sweep.max_sweep_s:
            spent = f"sweep.max_sweep_s ({sweep.max_sweep_s:g} s) spent"
            print(f"adaptive repeats: {spent}; {len(wanted)} configuration(s) still open", flush=True)
            return None
        trained = [arm for grid in grids for arm in map(result_arm, grid) if arm is not None]
        arms = next_arms(config, wanted, trained)
        if not arms:
            return None
        listed = ", ".join(f"{config_id} (seed {seed})" for config_id, seed in wanted.items())
        print(f"adaptive repeats: one more seed for {listed}", flush=True)
        done = train_round(arms, next_folder(config.layout.run_dir))
        grids.extend(done.grids)
        if done.interrupted:
            return done
