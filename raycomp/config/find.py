"""The ``find`` section: which methods a recipe search tries, how long it may take and how it judges them.

An experiment with a ``find`` section is what ``python -m raycomp.find`` runs (docs/find.md). ``methods`` is
``auto`` (every registered method that applies to the model and data), a list of names, or a mapping of names to
the arguments each starts from (``selective_backprop: {scale_factor: 1.0}`` on token ids, which cannot be
downsampled); an argument given there is kept through the search. ``budget`` is the find's wall time
(``30m``, ``2h``, ``900s`` or seconds); each stage's seeds are ``[first, last]``: its first look and its last.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from raycomp.base import keys
from raycomp.config.judging import MAX_BUDGET, JudgingSection
from raycomp.config.messages import Invalid, Problem, show, suggest
from raycomp.config.sections import Section
from raycomp.config.sweep import MAX_REPEATS

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|h)")
_SECONDS = {"s": 1, "m": 60, "h": 3600}
MAX_FIND_S = 7 * 24 * 3600.0
AUTO = "auto"


def parse_budget(value: Any) -> float:
    """Seconds from ``30m``, ``2h``, ``900s`` or a number of seconds."""
    if isinstance(value, str) and (match := _DURATION.fullmatch(value.strip())):
        value = float(match[1]) * _SECONDS[match[2]]
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_FIND_S:
        raise ValueError(f"must be a time such as '30m', '2h' or '900s' (at most a week), got {show(value)}")
    return float(value)


SEARCH_STAGES = ("screen", "tune", "compose")  # the stages a proxy may serve; Confirm always runs the full length


class ProxyConfig(Section):
    """A cheaper run the search stages race on (``find.proxy``): ``max_duration`` a fraction of the experiment's
    (``0.25dur``) or a shorter time in its own unit (``1ep`` of ``4ep``, ``500ba``). Confirm trains at full length,
    on fresh seeds, and the answer says whether the proxy's verdict held (docs/find.md)."""

    max_duration: str = "0.25dur"
    data_fraction: float = Field(1.0, gt=0, le=1)  # and a seeded share of the training set (datasets, not modules)
    stages: list[Literal["screen", "tune", "compose"]] = Field(default_factory=lambda: list(SEARCH_STAGES))

    @field_validator("max_duration")
    @classmethod
    def _a_shorter_time(cls, value: str) -> str:
        from raycomp.core.time import Time, TimeUnit

        try:
            time = Time.from_timestring(value)
        except ValueError:
            time = None
        if time is None or time.unit not in (TimeUnit.DURATION, TimeUnit.EPOCH, TimeUnit.BATCH) or time.value <= 0:
            raise ValueError(
                f"must be a fraction of the run such as '0.25dur', or a time in ep or ba, got {show(value)}"
            )
        if time.unit is TimeUnit.DURATION and time.value >= 1:
            raise ValueError(f"must be shorter than the run (under 1dur), got {show(value)}")
        return value

    @field_validator("stages")
    @classmethod
    def _search_stages_in_order(cls, stages: list[str]) -> list[str]:
        if not stages or list(stages) != [stage for stage in SEARCH_STAGES if stage in stages]:
            raise ValueError(f"must be search stages in their order ({', '.join(SEARCH_STAGES)}), got {show(stages)}")
        return stages


class FindConfig(JudgingSection):
    """A recipe search over ``methods`` against the experiment as its baseline (``python -m raycomp.find``); its
    judging keys are ``JudgingSection``'s."""

    methods: Literal["auto"] | list[str] | dict[str, dict[str, Any]] = AUTO
    budget: float = 1800.0
    accuracy_tolerance: float | Literal["auto"] = keys.DEFAULT_TOLERANCE  # type: ignore[assignment]  # or auto
    baseline_budgets: list[float] = Field(default_factory=lambda: [0.5, 0.75, 1.5])  # a find always has a frontier
    control: bool = True  # and a control: every recommendation rests on the machine's timing holding
    screen: list[int] = Field(default_factory=lambda: [3, 6])
    tune: list[int] = Field(default_factory=lambda: [3, 6])
    compose: list[int] = Field(default_factory=lambda: [3, 6])
    confirm: list[int] = Field(default_factory=lambda: [3, 8])
    max_settings: int = Field(6, ge=1, le=50)  # argument settings Tune tries per method, its defaults included
    max_concurrent_trials: int | None = Field(None, ge=1)
    proxy: ProxyConfig | None = None  # race the search stages on a shorter run, confirm at full length

    @field_validator("accuracy_tolerance", mode="before")
    @classmethod
    def _tolerance(cls, value: Any) -> Any:
        if value == AUTO:
            return value
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            shown = show(value)
            raise ValueError(f"must be a number >= 0 in the metric's units (0.005: half a point), or auto, got {shown}")
        return float(value)

    @field_validator("budget", mode="before")
    @classmethod
    def _budget(cls, value: Any) -> float:
        return parse_budget(value)

    @field_validator("methods", mode="before")
    @classmethod
    def _methods(cls, value: Any) -> Any:
        """Known names, each once, with valid arguments (each at its key); ``name: null`` means its defaults."""
        from raycomp.algorithms.registry import ALGORITHMS
        from raycomp.config.algorithm_arguments import algorithm_problems

        if value == AUTO:
            return value
        where: dict[Any, tuple[Any, ...]] = {}
        if isinstance(value, list) and all(isinstance(name, str) for name in value):
            if len(set(value)) != len(value):
                raise Invalid([((), f"names a method twice, got {show(value)}")])
            where = {name: (index,) for index, name in enumerate(value)}
            value = {name: {} for name in value}
        if not isinstance(value, Mapping) or not value:
            raise Invalid(
                [((), f"must be auto, a list of method names or a mapping of names to arguments, got {show(value)}")]
            )
        problems: list[Problem] = []
        methods = {}
        for name, args in value.items():
            args = {} if args is None else args
            at = where.get(name, (name,))
            if name not in ALGORITHMS:
                problems.append((at, f"unknown method {suggest(name, ALGORITHMS, 'methods')}"))
            elif not isinstance(args, Mapping):
                problems.append((at, f"must map argument names to values (or be empty), got {show(args)}"))
            else:
                problems += [((*at, *path), message) for path, message in algorithm_problems(name, args)]
            methods[name] = dict(args) if isinstance(args, Mapping) else args
        if problems:
            raise Invalid(problems)
        return methods

    @model_validator(mode="after")
    def _stages(self) -> FindConfig:
        problems: list[Problem] = []
        for stage in ("screen", "tune", "compose", "confirm"):
            seeds = getattr(self, stage)
            if len(seeds) != 2 or not 2 <= seeds[0] <= seeds[1] <= MAX_REPEATS:
                problems.append(
                    (
                        (stage,),
                        f"must be [first, last] seeds with 2 <= first <= last <= {MAX_REPEATS}, got {show(seeds)}",
                    )
                )
        for index, budget in enumerate(self.baseline_budgets):
            if not 0 < budget <= MAX_BUDGET or budget == 1:
                problems.append(
                    (("baseline_budgets", index), f"must be in (0, {MAX_BUDGET:g}] and not 1, got {show(budget)}")
                )
        if problems:
            raise Invalid(problems)
        return self

    @property
    def numeric_tolerance(self) -> float:
        """``accuracy_tolerance``, or its default under ``auto`` (until the find's spread check sets one)."""
        tolerance = self.accuracy_tolerance
        return keys.DEFAULT_TOLERANCE if tolerance == AUTO else tolerance  # type: ignore[return-value]

    def chosen_methods(self) -> dict[str, dict[str, Any]] | None:
        """The methods named and the arguments each starts from; None for ``auto``."""
        return None if self.methods == AUTO else dict(self.methods)  # type: ignore[arg-type]
