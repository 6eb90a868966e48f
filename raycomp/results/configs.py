"""One row per configuration of a sweep: its repeats' medians, its speed-up and accuracy intervals, its verdict.

The per-trial ``TrialSummary``s are grouped by ``config_id``; the numbers come from
``raycomp.results.verdicts`` (paired seeds, the baseline's budget frontier, t intervals). This is what
``results.json`` holds under ``"configs"``, what the CLI prints under the trials (``verdict_text``), and
what MLflow gets as the parent's ``configs.json`` table and each child's tags. A configuration whose trials
failed is in the state ``failed`` with its error's first line, never judged (``ConfigSummary.failure``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from raycomp.base import keys
from raycomp.results.frontier_steps import frontier_out_of_order
from raycomp.results.intervals import look_confidence
from raycomp.results.judging import DEFAULT_JUDGING, Judging, run_of, trial_time
from raycomp.results.seed_power import noise_floor
from raycomp.results.summary import TrialSummary
from raycomp.results.verdicts import (
    EQUIVALENT,
    NO_EVIDENCE,
    RESOLVED,
    Verdict,
    best_config,
    verdict_for,
)

# results.json's "configs" columns, in order (a contract other tools read)
CONFIG_COLUMNS = (
    "config_id",
    "variant",
    "arguments",
    "seeds",
    "accuracy_median",
    "time_median_s",
    "speedup",
    "speedup_ci_low",
    "speedup_ci_high",
    "speedup_to_full_baseline",
    "accuracy_delta",
    "accuracy_delta_ci_low",
    "accuracy_delta_ci_high",
    "verdict",
    "note",
    "diverged",
    "time_ratio",
    "confidence",
    "stopped",
    "failed",
    "error",
)
FAILED = "failed"  # a configuration's state, not a verdict: its trials failed, so nothing of it could be judged
NO_ERROR_TEXT = "a trial failed; its error was not recorded"


@dataclasses.dataclass(frozen=True)
class ConfigSummary:
    """A configuration over its repeats. The baseline and its frontier budgets are references: no verdict."""

    config_id: str
    variant: str
    arguments: dict[str, Any]
    seeds: tuple[int, ...]  # the repeats that ran
    accuracy_median: float | None
    time_median_s: float | None
    verdict: Verdict | None = None
    budget: float | None = None
    diverged: tuple[int, ...] = ()  # the repeats whose loss diverged (summary.diverged): never the best
    stopped: str | None = None  # why it got no more seeds (sweep.max_repeats): resolved, max_repeats, ...
    failed: tuple[int, ...] = ()  # the repeats whose trial raised an error
    failure: str | None = None  # the first line of that error when the whole configuration failed (no verdict)

    @property
    def shown_verdict(self) -> str | None:
        """``failed``, its verdict, or None (a reference, or nothing to compare with): what every table says."""
        if self.failure is not None:
            return FAILED
        return self.verdict.verdict if self.verdict else None

    def row(self) -> dict[str, Any]:
        verdict = dataclasses.asdict(self.verdict) if self.verdict else {}
        own = {"config_id": self.config_id, "variant": self.variant, "arguments": self.arguments}
        own |= {"diverged": list(self.diverged), "failed": list(self.failed), "error": self.failure}
        own |= {"stopped": self.stopped, "verdict": self.shown_verdict}
        own |= {"seeds": list(self.seeds), "accuracy_median": self.accuracy_median, "time_median_s": self.time_median_s}
        return {column: own[column] if column in own else verdict.get(column) for column in CONFIG_COLUMNS}


@dataclasses.dataclass(frozen=True)
class SweepVerdicts:
    """What a sweep concludes: the configurations, the control's verdict, the machine's noise floor, the best."""

    configs: tuple[ConfigSummary, ...]
    control: str | None  # the A/A arm's verdict (or "failed"); faster or slower means timing was not trustworthy
    noise_floor: float | None  # coefficient of variation of the baseline's times over its repeats
    best: str | None  # the faster config_id with the highest speed-up lower bound (verdicts.best_config)
    judging: Judging = DEFAULT_JUDGING  # what the verdicts were judged with: margins, level, looks, clock
    noise_floor_wall: float | None = None  # the same CV from whole-trial wall times, for comparison
    mode: str = keys.DEFAULT_MODE  # sweep.mode: whether the metric is maximised or minimised
    frontier_refused: str | None = None  # why nothing was judged: the frontier's steps not in its budgets' order

    @property
    def timing_trustworthy(self) -> bool:
        """The control, identical to the baseline, is unresolved or shown the same (or failed, which tells
        nothing of the timing): never faster or slower."""
        return self.control in (None, NO_EVIDENCE, EQUIVALENT, FAILED)

    def warning(self) -> str | None:
        if self.frontier_refused or self.timing_trustworthy:  # a refused frontier: no verdict to trust or not
            return self.frontier_refused
        return (
            f"the control arm (identical to the baseline) came out {self.control!r}: this machine's timing could not "
            "support verdicts in this sweep (noisy neighbours? rerun with more repeats or on a quiet machine)"
        )

    def document(self) -> dict[str, Any]:
        judging = self.judging
        return {
            "control": self.control,
            "noise_floor": self.noise_floor,
            "best_config": self.best,
            "noise_floor_wall": self.noise_floor_wall,
            "accuracy_tolerance": judging.tolerance,
            "confidence": judging.confidence,
            "equivalence": judging.equivalence,
            "timing": judging.timing,
            "repeats": judging.looks[0] if judging.looks else None,
            "max_repeats": judging.looks[1] if judging.looks else None,
            "configs": [config.row() for config in self.configs],
            "frontier_refused": self.frontier_refused,
        }


def summarize_configs(
    trials: Sequence[TrialSummary], mode: str = keys.DEFAULT_MODE, judging: Judging = DEFAULT_JUDGING
) -> SweepVerdicts:
    """Groups trials by configuration and judges each one as ``judging`` says: the baseline, its frontier
    (longest budget first), the control, then the methods in the order they were drawn.

    With ``judging.looks`` (a sweep that adds seeds while unresolved) each configuration is judged at the
    level ``look_confidence`` spends at its number of paired seeds, and says why it stopped."""
    groups: dict[str, list[TrialSummary]] = {}
    for trial in sorted(trials, key=_reading_order):
        groups.setdefault(trial.config_id or trial.trial_id, []).append(trial)
    looks, timing = judging.looks, judging.timing
    baseline = [run_of(t, timing) for t in trials if t.variant == keys.BASELINE]
    frontier = [run_of(t, timing) for t in trials if t.variant == keys.FRONTIER]
    adaptive, refused = looks is not None, frontier_out_of_order(trials)  # a frontier not in step order prices nothing
    configs = []
    for config_id, members in groups.items():
        variant = members[0].variant
        runs = [run_of(t, timing) for t in members]
        verdict, stopped = None, None
        if variant in (keys.METHOD, keys.CONTROL) and baseline and refused is None:
            judge = judging.verdict_options(mode) | {"same_model": variant == keys.CONTROL}
            level = judging.confidence
            verdict = verdict_for(runs, baseline, frontier, confidence=level, **judge)  # type: ignore[arg-type]
            if adaptive:
                level = look_confidence(verdict.n, *looks, level)  # type: ignore[misc]
                verdict = verdict_for(runs, baseline, frontier, confidence=level, **judge)  # type: ignore[arg-type]
                stopped = stop_reason(verdict, looks[1], variant)  # type: ignore[index]
        finals = [r for r in runs if r.accuracy is not None and r.time_s is not None]
        failure = _failure(members, verdict, bool(finals))
        if failure is not None:  # a state: no verdict, and no more seeds (they would fail the same way)
            verdict, stopped = None, "failed: no more seeds" if adaptive else None
        configs.append(
            ConfigSummary(
                config_id=config_id,
                variant=variant,
                arguments=dict(members[0].overrides),
                seeds=tuple(sorted(t.repeat or 0 for t in members)),
                accuracy_median=_median([r.accuracy for r in finals]),
                time_median_s=_median([r.time_s for r in finals]),
                verdict=verdict,
                budget=members[0].budget,
                diverged=tuple(sorted(t.repeat or 0 for t in members if t.diverged)),
                stopped=stopped,
                failed=tuple(sorted(t.repeat or 0 for t in members if t.status == keys.ERROR)),
                failure=failure,
            )
        )
    control = next((c.shown_verdict for c in configs if c.variant == keys.CONTROL), None)
    methods = {c.config_id: c.verdict for c in configs if c.variant == keys.METHOD and c.verdict and not c.diverged}
    finished = [t for t in trials if t.variant == keys.BASELINE and t.status == keys.TERMINATED]
    floor, wall_floor = noise_floor(trial_time(t, timing) for t in finished), noise_floor(t.wall_s for t in finished)
    return SweepVerdicts(tuple(configs), control, floor, best_config(methods), judging, wall_floor, mode, refused)


def _failure(members: Sequence[TrialSummary], verdict: Verdict | None, has_result: bool) -> str | None:
    """The first line of the first error among a configuration's trials when they failed so that nothing of it
    can be judged: none has a result, or none pairs with the baseline's seeds. A trial that failed beside
    finished, paired ones leaves the configuration judged (its seed is dropped, and listed in ``failed``)."""
    errors = sorted((t for t in members if t.status == keys.ERROR), key=lambda t: t.repeat or 0)
    if not errors or (has_result and (verdict is None or verdict.n > 0)):
        return None
    return errors[0].error_line or errors[0].error or NO_ERROR_TEXT


def stop_reason(verdict: Verdict, max_repeats: int, variant: str = keys.METHOD) -> str:
    """Why an adaptive sweep gave a configuration no more seeds."""
    if verdict.verdict in RESOLVED and variant == keys.METHOD:
        return f"resolved at {verdict.n} seeds"
    if verdict.n >= max_repeats:
        return f"max_repeats ({max_repeats}) reached"
    if verdict.n == 0:
        return "no finished trial paired with the baseline: no more seeds"
    if variant != keys.METHOD:
        return f"{verdict.n} seeds: the methods' last seed (the control runs with them)"
    return f"unresolved at {verdict.n} seeds: sweep.max_sweep_s spent (or the sweep was stopped)"


def _reading_order(trial: TrialSummary) -> tuple[int, float, int]:
    rank = {keys.BASELINE: 0, keys.FRONTIER: 1, keys.CONTROL: 2}.get(trial.variant, 3)
    number = (trial.config_id or "").rpartition("-")[2]
    return rank, -(trial.budget or 0.0), int(number) if number.isdigit() else 0


if TYPE_CHECKING:
    from raycomp.config import SweepConfig


def judge_sweep(trials: Sequence[TrialSummary], mode: str, sweep: SweepConfig) -> SweepVerdicts:
    """The verdicts of a sweep's trials, judged as its ``sweep`` section says (``Judging.of``), for every look
    of the adaptive driver and for the sweep's end alike."""
    return summarize_configs(trials, mode, Judging.of(sweep))


def _median(values: Sequence[float | None]) -> float | None:
    present = sorted(v for v in values if v is not None)
    if not present:
        return None
    middle = len(present) // 2
    return present[middle] if len(present) % 2 else (present[middle - 1] + present[middle]) / 2
