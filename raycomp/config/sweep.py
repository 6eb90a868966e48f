"""The sweep section: search domains over dotted config paths, their checks, and the config a trial trains.

The driver validates a sweep once, as a whole: every swept path must exist, and every listed value and
bound must make a valid config on its own. A trial then gets ``trial_config(base, arm)``: its own values,
validated once, with ``sweep`` dropped, so it never re-checks the domains of the other trials (nor the
scheduler options the driver filled in). Ray is not imported here: ``raycomp.launch`` turns a sweep into
Tune search-space objects.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from raycomp.config.judging import MAX_BUDGET, JudgingSection
from raycomp.config.messages import Invalid, KeyPath, Problem, show
from raycomp.config.search_domain import DOMAIN_KINDS, SearchDomain
from raycomp.config.sections import Section

# The sweep.space key whose values are lists of algorithms: the ones each configuration runs (each method alone,
# then together, against one baseline without any of them).
SELECTION = "algorithms"
SPACE: KeyPath = ("sweep", "space")


class TrialSchedulerConfig(Section):
    """A Tune trial scheduler; ``grace_period``/``max_t`` count reported training iterations (ASHA only)."""

    name: Literal["asha", "fifo"] = "asha"
    grace_period: int = Field(1, ge=1)
    reduction_factor: float = Field(2.0, gt=1)
    max_t: int | None = Field(None, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data  # `scheduler: asha` is shorthand

    @model_validator(mode="after")
    def _asha_options(self) -> TrialSchedulerConfig:
        stray = sorted(self.model_fields_set - {"name"})
        if self.name == "fifo" and stray:
            raise Invalid([((key,), "is an ASHA option; remove it or set name: asha") for key in stray])
        return self

    @model_serializer(mode="wrap")
    def _fifo_alone(self, to_data: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """FIFO is written without the ASHA defaults, which ``_asha_options`` would refuse on the way back."""
        return {"name": self.name} if self.name == "fifo" else to_data(self)


# Sane bounds: a typo (num_samples: 10000000) is refused at its key instead of a silent wait of hours.
MAX_SAMPLES = 1_000
MAX_REPEATS = 100
MAX_TRIALS = 10_000


class SweepConfig(JudgingSection):
    """A Ray Tune sweep: ``space`` maps dotted config key paths to search domains; its judging keys are
    ``JudgingSection``'s.

    ``max_concurrent_trials`` null runs as many trials as fit; ``baseline`` adds a trial without the swept
    algorithm(s), to measure what they buy. For verdicts that hold on a noisy machine: ``repeats`` runs every
    configuration with seeds ``seed .. seed+repeats-1`` (paired across configurations by seed),
    ``baseline_budgets`` trains the baseline again with complete schedules for these fractions of
    ``max_duration`` (its accuracy-against-time frontier; 1.0 is the baseline itself, above 1.0 prices
    accuracy gains), ``max_repeats`` adds seeds one at a time to configurations still unresolved (until
    ``max_sweep_s``), ``equivalence`` is the speed-up margin of "no practical difference", ``control`` adds an
    arm identical to the baseline (an A/A check of the machine's timing), and a configuration whose accuracy
    interval lies wholly below ``-accuracy_tolerance`` (in the metric's units) is judged less accurate.
    """

    space: dict[str, SearchDomain] = Field(default_factory=dict)
    num_samples: int = Field(1, ge=1, le=MAX_SAMPLES)
    scheduler: TrialSchedulerConfig | None = None
    max_concurrent_trials: int | None = Field(None, ge=1)
    search_alg: Literal["random", "optuna"] | None = None  # optuna needs `pip install raycomp[optuna]`
    baseline: bool = True
    repeats: int = Field(1, ge=1, le=MAX_REPEATS)
    max_repeats: int | None = Field(None, ge=1, le=MAX_REPEATS)  # adaptive: seeds added one at a time while unresolved
    max_sweep_s: float | None = Field(None, gt=0)  # adaptive: no new seeds once the sweep has run this long

    @model_validator(mode="after")
    def _arms_need_a_baseline(self) -> SweepConfig:
        problems: list[Problem] = []
        for index, budget in enumerate(self.baseline_budgets):
            if not 0 < budget <= MAX_BUDGET:
                problems.append((("baseline_budgets", index), f"must be in (0, {MAX_BUDGET:g}], got {show(budget)}"))
        if self.max_repeats is not None and self.max_repeats < self.repeats:
            problems.append((("max_repeats",), f"must be at least repeats ({self.repeats}), got {self.max_repeats}"))
        for key in ("baseline_budgets", "control"):
            if getattr(self, key) and not self.baseline:
                problems.append(((key,), "needs the baseline (set sweep.baseline: true)"))
        if self.search_alg == "optuna":
            for key, default in (("repeats", 1), ("baseline_budgets", []), ("control", False), ("max_repeats", None)):
                if getattr(self, key) != default:
                    problems.append(((key,), "needs search_alg: random (a searcher samples each trial anew)"))
        if problems:
            raise Invalid(problems)
        return self

    @model_validator(mode="after")
    def _trials_bounded(self) -> SweepConfig:
        grid = math.prod(len(domain.values) for domain in self.space.values() if domain.kind == "grid")
        seeds = max(self.repeats, self.max_repeats or 0)
        trials = (grid * self.num_samples + 2 + len(self.baseline_budgets)) * seeds
        if trials > MAX_TRIALS:
            message = (
                f"makes about {trials:,} trials (grid values x num_samples x repeats), more than {MAX_TRIALS:,}: "
                "lower num_samples, repeats or the grid"
            )
            raise Invalid([(("num_samples",), message)])
        return self

    @property
    def frontier_budgets(self) -> list[float]:
        """The budgets other than the full run, each trained as its own baseline trial (1.0 is the baseline);
        those above 1.0 put a price in time on accuracy gains."""
        return sorted({budget for budget in self.baseline_budgets if budget != 1})

    @property
    def looks(self) -> tuple[int, int]:
        """(repeats, max_repeats): the seeds of a sweep's first look and of its last."""
        return self.repeats, self.max_repeats or self.repeats

    @property
    def adaptive(self) -> bool:
        """Seeds are added to unresolved configurations after the first ``repeats``."""
        return self.max_repeats is not None and self.max_repeats > self.repeats

    @model_validator(mode="after")
    def _grid_needs_basic_search(self) -> SweepConfig:
        if self.search_alg == "optuna":
            grids = [path for path, domain in self.space.items() if domain.kind == "grid"]
            message = f"{self.search_alg} cannot search a grid (use choice, or search_alg: random)"
            if grids:
                raise Invalid([(("space", path, "grid"), message) for path in grids])
        return self

    @model_validator(mode="after")
    def _selection_lists_names(self) -> SweepConfig:
        domain = self.space.get(SELECTION)
        if domain is None:
            return self
        where = ("space", SELECTION, domain.kind)
        problems: list[Problem] = []
        if domain.kind not in ("grid", "choice"):
            problems.append((where, "lists the algorithms each configuration runs: use grid or choice"))
        elif self.search_alg == "optuna":
            problems.append((where, "optuna cannot sample lists of algorithms (use search_alg: random)"))
        for index, names in enumerate(domain.values if not problems else []):
            listed = isinstance(names, list) and names and all(isinstance(name, str) for name in names)
            if not listed or len(set(names)) != len(names):
                example = "[alibi, selective_backprop]"
                message = f"must be a non-empty list of algorithm names, each once, like {example}, got {show(names)}"
                problems.append(((*where, index), message))
        if problems:
            raise Invalid(problems)
        return self

    def selectable_algorithms(self) -> list[str]:
        """The algorithms ``space.algorithms`` chooses among: each configuration runs those its list names."""
        domain = self.space.get(SELECTION)
        return list(dict.fromkeys(name for names in domain.values for name in names)) if domain else []

    def swept_algorithms(self) -> list[str]:
        """The algorithms the baseline leaves out: those whose arguments are swept or that are selected."""
        names = [swept_algorithm(path) for path in self.space]
        return list(dict.fromkeys([*(name for name in names if name), *self.selectable_algorithms()]))

    def left_out(self, values: Mapping[str, Any]) -> tuple[list[str], dict[str, Any]]:
        """The algorithms a configuration's ``algorithms`` list leaves out, and its other values without theirs.

        An algorithm no list names (and the baseline runs) stays in every configuration.
        """
        values = dict(values)
        chosen = values.pop(SELECTION, None)
        if chosen is None:
            return [], values
        dropped = [name for name in self.selectable_algorithms() if name not in chosen]
        return dropped, {path: value for path, value in values.items() if swept_algorithm(path) not in dropped}


def swept_algorithm(path: str) -> str | None:
    """``selective_backprop`` for ``algorithms.selective_backprop.keep``; None for other paths."""
    parts = path.split(".")
    return parts[1] if parts[0] == "algorithms" and len(parts) > 1 else None


def assign(data: dict[str, Any], path: str, value: Any) -> KeyPath:
    """Sets ``data[a][b][c] = value`` for ``a.b.c``, creating mappings on the way; returns the key path.

    Keys under ``sweep.space`` are dotted config paths themselves, so there the rest of the path is one key
    (or one key and a domain kind: ``sweep.space.optimizer.lr.choice``).
    """
    parts = path.split(".")
    if not all(parts):
        raise ValueError(f"{path!r} is not a dotted key path such as optimizer.lr")
    path_keys: list[str] = []
    for index, part in enumerate(parts):
        if tuple(path_keys) == SPACE:
            rest = parts[index:]
            tail = [rest.pop()] if len(rest) > 1 and rest[-1] in DOMAIN_KINDS else []
            path_keys += [".".join(rest), *tail]
            break
        path_keys.append(part)
    node = data
    for depth, key in enumerate(path_keys[:-1]):
        child = node.get(key)
        if child is None:
            child = node[key] = {}
        elif not isinstance(child, dict):
            raise ValueError(f"{'.'.join(path_keys[: depth + 1])} is {show(child)}, not a mapping with keys")
        node = child
    node[path_keys[-1]] = value
    return tuple(path_keys)
