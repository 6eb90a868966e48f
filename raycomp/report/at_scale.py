"""The part of a large sweep the report draws in full: a page with 800 configurations is one nobody reads.

The method card, the figures and the trial table show the references (baseline, its budgets, the control) and
the ``MAX_SHOWN`` configurations ranked first (faster ones by the lower bound of their speed-up, then the rest
by their point estimate, failures last); the others are counted by verdict in one line. The headline and the
counts of trials keep the whole sweep, and ``results.json`` and the MLflow runs hold every configuration.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from raycomp.base import keys
from raycomp.report.sweep import Sweep
from raycomp.results.configs import ConfigSummary
from raycomp.results.verdicts import FASTER

MAX_SHOWN = 30


def shown_part(sweep: Sweep, limit: int = MAX_SHOWN) -> tuple[Sweep, str | None]:
    """``sweep`` cut to what the report draws in full, and the line that summarises the rest (None: all shown)."""
    configs = sweep.verdicts.configs
    references = [config for config in configs if _is_reference(config)]
    judged = sorted((config for config in configs if not _is_reference(config)), key=_rank)
    if len(judged) <= limit:
        return sweep, None
    kept = {config.config_id for config in [*references, *judged[:limit]]}
    rest = judged[limit:]
    verdicts = dataclasses.replace(sweep.verdicts, configs=tuple(c for c in configs if c.config_id in kept))
    trials = tuple(trial for trial in sweep.trials if trial.config_id in kept)
    counts = Counter(config.shown_verdict or "no verdict" for config in rest)
    counted = ", ".join(f"{n} {verdict}" for verdict, n in counts.most_common())
    note = (
        f"The {limit} configurations ranked first are drawn in full, besides the references; the other "
        f"{len(rest)} ({sum(len(c.seeds) for c in rest)} trials) are not: {counted}. Every configuration is in "
        "results.json and in the sweep's MLflow runs."
    )
    return sweep.replace(trials=trials, verdicts=verdicts), note


def _is_reference(config: ConfigSummary) -> bool:
    return config.variant != keys.METHOD or config.budget is not None  # the baseline, its budgets, the control


def _rank(config: ConfigSummary) -> tuple[int, float, float]:
    """Faster first (the highest lower bound of speed-up first), then by speed-up; failed and unjudged last."""
    verdict = config.verdict
    if config.failure is not None or verdict is None:
        return (2, 0.0, 0.0)
    low, point = verdict.speedup_ci_low or 0.0, verdict.speedup or 0.0
    return (0 if verdict.verdict == FASTER else 1, -low if verdict.verdict == FASTER else -point, -point)
