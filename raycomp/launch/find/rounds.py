"""One round of a find as a sweep round: its requests become sweep ``Arm``s of a config whose ``sweep`` section
selects the round's recipes, trained by the sweep's own Tuner in a Tune experiment of the find's folder.

Every candidate is selectable in every round's config (``sweep.space.algorithms``), so the baseline, its frontier
and the control drop them all and keep only the experiment's own algorithms; a method arm runs its recipe's
algorithms with its arguments (``config.trial_config``). Rounds live in the folders a sweep's continuations use
(``ledger.next_folder``: the run folder, then ``more-<k>``), so a round cut short is restored as a sweep is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from raycomp.base import keys
from raycomp.base.errors import FrontierOutOfOrder
from raycomp.config import ExperimentConfig
from raycomp.config.arm import Arm
from raycomp.config.run_length import proxy_arguments, proxy_duration
from raycomp.find.observations import Trial
from raycomp.find.plan import Proxy
from raycomp.find.race import Request
from raycomp.find.recipes import Candidate, Recipe
from raycomp.launch.sweep.ledger import has_state, missing_arms, next_folder, result_arm, set_aside_damaged_state
from raycomp.launch.sweep.outcome import ExperimentResults, trial_records
from raycomp.launch.sweep.runner import fit_experiment
from raycomp.launch.sweep.tuner import build_tuner, restore_tuner
from raycomp.results.frontier_steps import frontier_out_of_order
from raycomp.results.judging import run_of
from raycomp.results.summary import TrialSummary, summarize
from raycomp.tracking.ref import RunRef

Folder = tuple[str, str]  # (storage_path, name) of a Tune experiment, as its RunConfig takes them


def round_config(
    config: ExperimentConfig, candidates: Sequence[Candidate], recipes: Iterable[Recipe], proxy: Proxy | None = None
) -> ExperimentConfig:
    """The config a round's trials train from: the experiment (its ``find`` section dropped), every candidate
    selectable, and a ``sweep`` section holding the find's judging keys. On the ``proxy``, the run is its share
    of the experiment's, and the experiment's own algorithms keep their time arguments' share of it."""
    find = config.find
    assert find is not None
    lists = [[candidate.name] for candidate in candidates]
    lists += [list(recipe.names) for recipe in recipes if len(recipe.names) > 1]
    data = config.to_dict()
    data["find"] = None
    if proxy is not None:
        data["max_duration"] = str(proxy_duration(config, proxy.fraction))
        data["data"]["train_fraction"] = proxy.data_fraction
        for name, given in data["algorithms"].items():
            given.update(proxy_arguments(config, name, given))
    data["algorithms"] = {**data["algorithms"], **{candidate.name: {} for candidate in candidates}}
    data["sweep"] = {
        "space": {"algorithms": {"grid": [names for k, names in enumerate(lists) if names not in lists[:k]]}},
        **find.judging_keys(),
        "accuracy_tolerance": find.numeric_tolerance,  # unread: the race judges (an auto tolerance is its own)
        "max_concurrent_trials": find.max_concurrent_trials,
        "scheduler": {"name": "fifo"},  # every trial trains to its end: verdicts compare finished runs
    }
    return ExperimentConfig.from_dict(data, source="<find round>")


def arm_of(request: Request, proxy_of: ExperimentConfig | None = None) -> Arm:
    """A request as the sweep arm that trains it: a recipe's names and arguments, or a reference. On a proxy of
    ``proxy_of`` (the experiment), a method's time arguments keep their share of the run (``proxy_arguments``)."""
    if request.recipe is None:  # every swept column, as a sweep's references have them (Tune's table reads them)
        return Arm(request.variant, request.arm, {"algorithms": None}, repeat=request.seed, budget=request.budget)
    overrides: dict[str, Any] = {"algorithms": list(request.recipe.names)}
    for method in request.recipe.methods:
        given = dict(method.arguments)
        if proxy_of is not None:
            given |= proxy_arguments(proxy_of, method.name, given)
        overrides |= {f"algorithms.{method.name}.{arg}": value for arg, value in given.items()}
    return Arm(keys.METHOD, request.arm, overrides, repeat=request.seed)


def run_round(
    config: ExperimentConfig, parent: RunRef | None, arms: list[Arm], folder: Folder
) -> tuple[list[ExperimentResults], bool]:
    """Trains ``arms`` in the Tune experiment at ``folder``: anew, or restored when a killed or interrupted
    driver left it there (finished trials stay, unfinished ones resume from their checkpoints), then the arms it
    never got to in a further experiment. Returns the grids and whether an interrupt stopped it."""
    path = f"{folder[0].rstrip('/')}/{folder[1]}"
    grids: list[ExperimentResults] = []
    set_aside_damaged_state(path)
    if has_state(path):
        grid, interrupted = fit_experiment(restore_tuner(config, path, parent))
        grids.append(grid)
        if interrupted:
            return grids, True
        arms = missing_arms(arms, [arm for arm in map(result_arm, grid) if arm is not None])
        if not arms:
            return grids, False
        folder = next_folder(config.layout.run_dir)
    tuner = build_tuner(config, parent, arms=arms, folder=folder)
    grid, interrupted = fit_experiment(tuner)
    return [*grids, grid], interrupted


def observed(config: ExperimentConfig, grids: list[ExperimentResults]) -> list[Trial]:
    """Each trial that finished (its metric and time) or failed (its error), as the race's observations; one
    left unfinished is not observed, so the round asks for it again. ``FrontierOutOfOrder`` when its frontier's
    arms did not train more steps the larger their budget: the race would judge every recipe on that curve."""
    metric, mode = config.objective
    timing = config.sweep.timing if config.sweep else "steps"
    summaries = summarize(trial_records(grids), metric, mode)
    if refused := frontier_out_of_order(summaries):
        raise FrontierOutOfOrder(refused)
    return [_trial(summary, timing) for summary in summaries if summary.status in (keys.TERMINATED, keys.ERROR)]


def _trial(summary: TrialSummary, timing: str) -> Trial:
    """A trial as the race observes it: its arm, and its ``Run`` as a sweep's verdicts see it (``run_of``)."""
    run = run_of(summary, timing)
    done = summary.status == keys.TERMINATED
    return Trial(
        arm=summary.config_id or summary.variant,
        seed=run.seed,
        accuracy=run.accuracy,
        time_s=run.time_s,
        curve=run.curve,
        budget=run.budget,
        error=None if done else (summary.error_line or summary.error or "the trial failed"),
        trial_id=summary.trial_id,
    )
