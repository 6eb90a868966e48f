"""The part of a large sweep the report draws in full: a page with 800 configurations is one nobody reads.

The method card, the figures and the trial table show the references (baseline, its budgets, the control) and
the ``MAX_SHOWN`` configurations ranked first (``results.ranking``: faster ones by the lower bound of their
speed-up, then the rest by their point estimate, failures last); the others are counted by verdict in one line.
The headline and the counts of trials keep the whole sweep, and ``results.json`` and the parent MLflow run's
``configs.json`` hold every configuration.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from raycomp.report.sweep import Sweep
from raycomp.results.ranking import references_and_ranked

MAX_SHOWN = 30


def shown_part(sweep: Sweep, limit: int = MAX_SHOWN) -> tuple[Sweep, str | None]:
    """``sweep`` cut to what the report draws in full, and the line that summarises the rest (None: all shown)."""
    configs = sweep.verdicts.configs
    references, judged = references_and_ranked(configs)
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
