"""The one place a sweep section becomes Tune search-space objects: a grid over arms for random search,
or the method's space behind a baseline-first wrapper for a search algorithm (Optuna)."""

from __future__ import annotations

import copy
import itertools
from typing import Any

from ray import tune
from ray.tune.search import Searcher

from raycomp.config import ExperimentConfig, SearchDomain, SweepConfig
from raycomp.keys import BASELINE, METHOD


def tune_domain(domain: SearchDomain) -> Any:
    """A Tune sampler for one non-grid domain (grids are expanded into arms by ``sweep_arms``)."""
    samplers = {
        "choice": lambda values: tune.choice(list(values)),
        "uniform": lambda values: tune.uniform(*values),
        "loguniform": lambda values: tune.loguniform(*values),
        "randint": lambda values: tune.randint(*values),
    }
    return samplers[domain.kind](domain.values)


def sweep_arms(sweep: SweepConfig) -> list[dict[str, Any]]:
    """The arms Tune grids over: the baseline once, then every grid combination ``num_samples`` times.

    Random domains stay Tune samplers inside each method arm; Tune resolves them per trial. Expanding
    the grid here keeps the baseline out of the ``num_samples`` repetition.
    """
    grids = {path: domain.values for path, domain in sweep.space.items() if domain.kind == "grid"}
    samplers = {path: tune_domain(domain) for path, domain in sweep.space.items() if domain.kind != "grid"}
    arms = [baseline_arm(sweep)] if sweep.baseline else []
    for combination in itertools.product(*grids.values()):
        for _ in range(sweep.num_samples):
            overrides = {**dict(zip(grids, combination, strict=True)), **copy.deepcopy(samplers)}
            arms.append({"variant": METHOD, "overrides": overrides})
    return arms


def baseline_arm(sweep: SweepConfig) -> dict[str, Any]:
    # The baseline ignores overrides; its None values only give Tune's table the same columns for every arm.
    return {"variant": BASELINE, "overrides": dict.fromkeys(sweep.space)}


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


def search_space(config: ExperimentConfig) -> tuple[dict[str, Any], Any, int]:
    """Tune's ``param_space``, search algorithm and ``num_samples`` for the sweep.

    Random search grids over the arms (``sweep_arms``); a search algorithm gets the method arm's
    space and suggests the baseline first (``BaselineFirst``), so the baseline counts as one sample.
    """
    sweep = config.sweep or SweepConfig()
    if sweep.search_alg != "optuna":
        from ray.tune.search import BasicVariantGenerator

        searcher = BasicVariantGenerator(random_state=config.seed)  # the same samples on every run of the file
        return {"arm": tune.grid_search(sweep_arms(sweep))}, searcher, 1
    from ray.tune.search.optuna import OptunaSearch

    space = {"arm": {"variant": METHOD, "overrides": {p: tune_domain(d) for p, d in sweep.space.items()}}}
    searcher: Searcher = OptunaSearch(seed=config.seed)
    if not sweep.baseline:
        return space, searcher, sweep.num_samples
    return space, BaselineFirst(searcher, baseline_arm(sweep)), sweep.num_samples + 1
