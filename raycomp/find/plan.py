"""How a find races its candidates: the seeds of each stage, the judging keys, the budget (``FindPlan``).

The seeds are indices (a trial trains with seed ``experiment.seed + index``) and pair trials across recipes, as a
sweep's repeats do. The search stages (Screen, Tune, Compose) share seeds ``0 .. search_seeds - 1``, so one
baseline at each seed serves them all; Confirm runs on the next seeds, which no choice ever saw.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping

from raycomp.base import keys
from raycomp.find.recipes import Candidate
from raycomp.results.intervals import look_confidence
from raycomp.results.judging import Judging


@dataclasses.dataclass(frozen=True)
class Seeds:
    """A stage's looks: the first at ``first`` paired seeds, then one more seed at a time up to ``last``."""

    first: int
    last: int

    def __post_init__(self) -> None:
        if not 2 <= self.first <= self.last:
            raise ValueError(f"a stage needs 2 <= first <= last seeds, got {self.first}, {self.last}")

    def level(self, n: int, confidence: float) -> float:
        """The interval level of the look at ``n`` seeds: alpha spent over the looks (group-sequential)."""
        return look_confidence(n, self.first, self.last, confidence)


PROXY_SUFFIX = "@proxy"  # a proxy trial's arm: the recipe's (or reference's) name, trained on the shorter run


@dataclasses.dataclass(frozen=True)
class Proxy:
    """The shorter run the search ``stages`` race on: ``fraction`` of the experiment's steps (``find.proxy``).
    Its trials are arms of their own (``name@proxy``), so they never mix with the full run's in a verdict."""

    fraction: float
    stages: frozenset[str] = frozenset({"screen", "tune", "compose"})
    duration: str = ""  # as the find section gave it (``0.25dur``, ``1ep``), for the answer's words
    data_fraction: float = 1.0  # the share of the training set it trains on
    share: float | None = None  # of a full run's steps a proxy trial trains (None: ``fraction``): fewer data, fewer
    # steps an epoch when the run is counted in epochs

    def arm(self, name: str) -> str:
        return f"{name}{PROXY_SUFFIX}"

    @property
    def words(self) -> str:
        """``0.25dur of the run``, or ``0.25dur of the run on 0.5 of the training data``: how the answer names it."""
        return proxy_words(self.duration, self.data_fraction)


def proxy_words(duration: str, data_fraction: float = 1.0) -> str:
    data = f" on {data_fraction:g} of the training data" if data_fraction != 1 else ""
    return f"{duration} of the run{data}"


def full_arm(arm: str) -> str:
    """The arm a proxy arm stands for (itself when it is not one)."""
    return arm.removesuffix(PROXY_SUFFIX)


@dataclasses.dataclass(frozen=True)
class FindPlan:
    """The candidates and the rules of the race. ``budget_s`` (None: no limit) is the find's wall time: the search
    stages start no new look after ``search_share`` of it, Confirm none after all of it."""

    candidates: tuple[Candidate, ...]
    screen: Seeds = Seeds(3, 6)
    tune: Seeds = Seeds(3, 6)  # successive halving: rungs at first, 2 x first, ... seeds, up to last
    compose: Seeds = Seeds(3, 6)
    confirm: Seeds = Seeds(3, 8)
    halving: int = 3  # each rung of Tune keeps the best third of the settings
    # the find section's judging keys (``Judging.of``); each stage has its own looks
    judging: Judging = dataclasses.field(default_factory=Judging)
    mode: str = keys.DEFAULT_MODE
    tolerance_auto: bool = False  # find.accuracy_tolerance: auto (the tolerance Confirm's seeds can reach)
    frontier_budgets: tuple[float, ...] = (0.5, 0.75, 1.5)
    control: bool = True
    budget_s: float | None = None
    search_share: float = 0.6
    proxy: Proxy | None = None  # the search stages' shorter run (None: they race at full length)
    # After a proxy's recipe that did not hold: how many more recipes Confirm may run on the same fresh seeds. Each
    # is one more test on those seeds (a chain of them would bring back the winner's curse) and its cost is counted
    # in ``most_runs`` (issue 57: "names the next candidate and, budget permitting, confirms that one").
    second_guesses: int = 1

    @functools.cached_property
    def by_name(self) -> Mapping[str, Candidate]:
        return {candidate.name: candidate for candidate in self.candidates}

    def on_proxy(self, stage: str) -> bool:
        """Whether ``stage``'s trials train on the proxy."""
        return self.proxy is not None and stage in self.proxy.stages

    def arm_for(self, stage: str, name: str) -> str:
        """The arm ``stage`` trains ``name`` (a recipe's key or a reference) as: its proxy arm on the proxy."""
        return self.proxy.arm(name) if self.proxy is not None and stage in self.proxy.stages else name

    @property
    def search_seeds(self) -> int:
        """How many seeds the search stages may use; Confirm's fresh seeds come after them."""
        return max(self.screen.last, self.tune.last, self.compose.last)

    def confirm_seeds(self, n: int) -> tuple[int, ...]:
        return tuple(range(self.search_seeds, self.search_seeds + n))

    @property
    def references(self) -> int:
        """The reference trials a seed of a look adds: the baseline and its frontier."""
        return 1 + len(self.frontier_budgets)

    @property
    def confirm_seed_trials(self) -> int:
        """The trials one more Confirm seed costs: the recipe, its references and the control."""
        return 1 + self.references + self.control

    @property
    def search_limit_s(self) -> float | None:
        """When the search stages start no new look: ``search_share`` of the budget (None: no budget)."""
        return None if self.budget_s is None else self.search_share * self.budget_s

    def most_runs(self) -> dict[str, float]:
        """The most each part of the race can train, in full runs (a proxy trial counts its share; a frontier trial
        its budget): each search stage's candidates at its last look, the references at the search seeds, and
        Confirm at its last (the control included); after a proxy also each candidate alone at Confirm's first
        seeds and each second guess's recipe at Confirm's last look (its references are the first recipe's)."""
        candidates = len(self.candidates)
        settings = sum(len(candidate.settings) for candidate in self.candidates)
        reference = 1 + sum(self.frontier_budgets)

        def length(stage: str) -> float:
            proxy = self.proxy
            return (proxy.share or proxy.fraction) if proxy is not None and stage in proxy.stages else 1.0

        return {
            "screen": candidates * self.screen.last * length("screen"),
            "tune": settings * self.tune.last * length("tune"),
            "compose": max(0, candidates - 1) * 2 * self.compose.last * length("compose"),
            "references": self.search_seeds * reference * length("screen"),
            "confirm": self.confirm.last * (1 + reference + self.control)
            + (candidates * self.confirm.first + self.second_guesses * self.confirm.last if self.proxy else 0),
        }
