"""The one place a sweep section becomes Tune search-space objects: the arms suggested in order for random search
(``ArmsInOrder``), or the method's space behind a baseline-first wrapper for a search algorithm (Optuna)."""

from __future__ import annotations

import copy
import itertools
import json
import pickle
import random
import zlib
from typing import Any

import numpy as np
from ray import tune
from ray.tune.search import Searcher

from raycomp.base.errors import ConfigError
from raycomp.base.keys import BASELINE, CONTROL, FRONTIER, METHOD
from raycomp.config import ExperimentConfig, SearchDomain, SweepConfig, trial_config
from raycomp.config.arm import Arm
from raycomp.config.flat import plain
from raycomp.config.sweep import swept_algorithm
from raycomp.launch.sweep.ledger import CONFIG_DIGEST
from raycomp.launch.training_record import training_config_digest


def tune_domain(domain: SearchDomain) -> Any:
    """A Tune sampler for one non-grid domain (grids are expanded into arms by ``sweep_arms``)."""
    samplers = {
        "choice": lambda values: tune.choice(list(values)),
        "uniform": lambda values: tune.uniform(*values),
        "loguniform": lambda values: tune.loguniform(*values),
        "randint": lambda values: tune.randint(*values),
    }
    return samplers[domain.kind](domain.values)


def sweep_arms(config: ExperimentConfig) -> list[Arm]:
    """The arms a sweep trains: every configuration at every repeat's seed, interleaved in time.

    The configurations: the baseline, its ``control`` twin, its ``frontier`` budgets, and every grid
    combination ``num_samples`` times with its random domains drawn here (by Tune's samplers, seeded by
    the experiment's seed), so that each drawn configuration trains again at each seed. Arms go seed by
    seed, each seed's block in its own shuffled order, so the baseline does not always run first and a
    slow spell of the machine does not land on one configuration.
    """
    sweep = config.sweep_or_default
    blank = dict.fromkeys(sweep.space)  # non-method arms: the same table columns as every other arm
    configs: list[Arm] = []
    if sweep.baseline:
        configs.append(Arm(BASELINE, BASELINE, blank))
        if sweep.control:
            configs.append(Arm(CONTROL, CONTROL, blank))
        configs += [Arm(FRONTIER, f"{FRONTIER}-{budget:g}", blank, budget=budget) for budget in sweep.frontier_budgets]
    configs += _method_configs(sweep, config.seed)
    arms = []
    for repeat in range(sweep.repeats):
        block = [arm.replace(repeat=repeat) for arm in configs]
        if sweep.repeats > 1:
            random.Random(config.seed * 7919 + repeat).shuffle(block)
        arms += block
    return arms


def check_arms(config: ExperimentConfig) -> None:
    """Every configuration's trial config, built at the driver before anything starts.

    Grid combinations are checked with the config; values drawn from random domains exist only here, so a
    draw that breaks a rule between keys (SelectiveBackprop's ``start`` drawn above a fixed ``end``) is
    one ``ConfigError`` naming the configuration and its values, not a trial that ends ERROR mid-sweep.
    """
    problems = []
    for arm in sweep_arms(config):
        if arm.repeat != 0:
            continue  # another seed of a configuration already built
        try:
            trial_config(config, arm)
        except ConfigError as error:
            values = ", ".join(f"{path}={_shown(value)}" for path, value in arm.applied.items())
            problems += [f"sweep configuration {arm.config_id} ({values}): {problem}" for problem in error.problems]
    if problems:
        raise ConfigError(problems)


def _shown(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _method_configs(sweep: SweepConfig, seed: int) -> list[Arm]:
    """Every grid combination ``num_samples`` times, the other domains drawn once per configuration.

    Each configuration's draws are seeded by the experiment's seed, its grid values and its sample index,
    so a sweep extended with more grid values or samples (``--extend``) keeps the draws it trained.
    """
    grids = {path: domain.values for path, domain in sweep.space.items() if domain.kind == "grid"}
    samplers = {path: tune_domain(domain) for path, domain in sweep.space.items() if domain.kind != "grid"}
    configs: list[Arm] = []
    listed: set[str] = set()  # what each configuration trains (Arm.key): 10,000 of them are checked in a set
    for combination in itertools.product(*grids.values()):
        for sample in range(sweep.num_samples):
            rng = np.random.RandomState(_draw_seed(seed, combination, sample))
            drawn = {path: plain(sampler.sample(random_state=rng)) for path, sampler in samplers.items()}
            overrides = {path: {**dict(zip(grids, combination, strict=True)), **drawn}[path] for path in sweep.space}
            dropped, _ = sweep.left_out(overrides)  # space.algorithms: the arguments of those it does not run
            overrides = {path: None if swept_algorithm(path) in dropped else v for path, v in overrides.items()}
            arm = Arm(METHOD, f"{METHOD}-{len(configs) + 1}", overrides)
            if dropped and arm.key(with_repeat=False) in listed:
                continue  # already listed: its values differed only for algorithms it does not run
            listed.add(arm.key(with_repeat=False))
            configs.append(arm)
    return configs


def _draw_seed(seed: int, combination: tuple[Any, ...], sample: int) -> int:
    text = json.dumps([seed, list(combination), sample], default=str)
    return zlib.crc32(text.encode())


def baseline_arm(sweep: SweepConfig) -> Arm:
    """The baseline arm a searcher suggests first (search_alg: optuna; one seed, no frontier or control)."""
    return Arm(BASELINE, BASELINE, dict.fromkeys(sweep.space))


class BaselineFirst(Searcher):
    """A search algorithm (e.g. Optuna) over the method arm that suggests the baseline arm first, once.

    The wrapped searcher never sees the baseline trial, so the baseline neither takes one of its
    samples nor teaches it anything about the method's arguments.
    """

    def __init__(self, searcher: Searcher, baseline: dict[str, Any]):
        super().__init__(metric=searcher.metric, mode=searcher.mode)
        self.searcher, self.baseline = searcher, baseline
        self.baseline_trial: str | None = None

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec: Any) -> bool:
        self._metric, self._mode = metric, mode
        return self.searcher.set_search_properties(metric, mode, config, **spec)

    def suggest(self, trial_id: str) -> dict | None:
        if self.baseline_trial is None:
            self.baseline_trial = trial_id
            return {"arm": copy.deepcopy(self.baseline)}
        return self.searcher.suggest(trial_id)

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        if trial_id != self.baseline_trial:
            self.searcher.on_trial_result(trial_id, result)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        if trial_id != self.baseline_trial:
            self.searcher.on_trial_complete(trial_id, result=result, error=error)

    # Tune saves a wrapper's state (this) and the wrapped searcher's (its own files) separately.
    def get_state(self) -> dict[str, Any]:
        return {"baseline_trial": self.baseline_trial, "baseline": self.baseline}

    def set_state(self, state: dict[str, Any]) -> None:
        self.baseline_trial, self.baseline = state["baseline_trial"], state["baseline"]


class ArmsInOrder(Searcher):
    """The sweep's arms suggested one at a time, in their order: a trial's config as a grid over them gave it.

    Not Tune's grid: Tune 2.60 deep-copies a grid's list of values for every variant it makes, after ``tune.run``
    rebuilt every dict in it (``inject_placeholders``), so a grid of n arms cost n² dict copies: minutes of the
    driver's CPU for an ASHA sweep of 10,000 in its one experiment (docs/benchmarks.md "At scale"). Tune copies a
    searcher's suggestion once.
    """

    def __init__(self, arms: list[dict[str, Any]]):
        super().__init__()
        self.arms, self.suggested = arms, 0

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec: Any) -> bool:
        self._metric, self._mode = metric, mode
        return True

    def suggest(self, trial_id: str) -> dict | str | None:
        if self.suggested == len(self.arms):
            return Searcher.FINISHED
        self.suggested += 1
        return {"arm": self.arms[self.suggested - 1]}

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        """Nothing to learn: the arms are fixed."""

    # Tune saves the innermost searcher with ``save`` at each experiment checkpoint; ``--resume`` goes on from it.
    def get_state(self) -> dict[str, Any]:
        return {"arms": self.arms, "suggested": self.suggested}

    def set_state(self, state: dict[str, Any]) -> None:
        self.arms, self.suggested = state["arms"], state["suggested"]

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as file:
            pickle.dump(self.get_state(), file)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as file:
            self.set_state(pickle.load(file))


def search_space(config: ExperimentConfig, arms: list[Arm] | None = None) -> tuple[dict[str, Any], Searcher, int]:
    """Tune's ``param_space``, search algorithm and ``num_samples`` for the sweep.

    Random search suggests the arms (``sweep_arms``) in order, one trial each (``ArmsInOrder``); a search
    algorithm gets the method arm's space and suggests the baseline first (``BaselineFirst``), so the baseline
    counts as one sample. ``arms`` replaces the sweep's own arms (a resumed or extended sweep trains only the
    missing ones).
    """
    sweep = config.sweep_or_default
    if sweep.search_alg != "optuna":
        # plain dicts, as a grid's trials had them after ``tune.run``: Tune copies a suggestion into the trial's config
        listed = [dict(arm.as_tune()) for arm in (sweep_arms(config) if arms is None else arms)]
        return {CONFIG_DIGEST: training_config_digest(config)}, ArmsInOrder(listed), len(listed)
    from ray.tune.search.optuna import OptunaSearch

    overrides = {p: tune_domain(d) for p, d in sweep.space.items()}
    arm = {"variant": METHOD, "config_id": tune.sample_from(_trial_id), "overrides": overrides, "repeat": 0}
    space = {"arm": arm, CONFIG_DIGEST: training_config_digest(config)}
    searcher: Searcher = OptunaSearch(seed=config.seed)
    if not sweep.baseline:
        return space, searcher, sweep.num_samples
    return space, BaselineFirst(searcher, baseline_arm(sweep).as_tune()), sweep.num_samples + 1


def _trial_id(spec: Any) -> str:
    """A searcher's configurations are one trial each: the config id is unique per suggestion."""
    return f"{METHOD}-{random.getrandbits(32):08x}"
