"""The part of a large sweep the report draws in full: a page with 800 configurations is one nobody reads.

The method card, the figures and the trial table show the references (baseline, its budgets, the control) and
the ``MAX_SHOWN`` configurations ranked first (``results.ranking``: faster ones by the lower bound of their
speed-up, then the rest by their point estimate, failures last); the others are counted by verdict in one line.
The headline and the counts of trials keep the whole sweep, and ``results.json`` and the parent MLflow run's
``configs.json`` hold every configuration.
"""

from __future__ import annotations

import dataclasses

from raycomp.report.sweep import Sweep
from raycomp.results.ranking import MAX_SHOWN, counted_by_verdict, shown_configs


def shown_part(sweep: Sweep, limit: int = MAX_SHOWN) -> tuple[Sweep, str | None]:
    """``sweep`` cut to what the report draws in full, and the line that summarises the rest (None: all shown)."""
    shown, rest = shown_configs(sweep.verdicts.configs, limit)
    if not rest:
        return sweep, None
    kept = {config.config_id for config in shown}
    verdicts = dataclasses.replace(sweep.verdicts, configs=tuple(shown))
    trials = tuple(trial for trial in sweep.trials if trial.config_id in kept)
    note = (
        f"The {limit} configurations ranked first are drawn in full, besides the references; the other "
        f"{len(rest)} ({sum(len(c.seeds) for c in rest)} trials) are not: {counted_by_verdict(rest)}. Every "
        "configuration is in results.json and in the sweep's MLflow runs."
    )
    return sweep.replace(trials=trials, verdicts=verdicts), note
