"""Which configurations of a large sweep come first: one order for the report's page and the CLI's tables (what
they show in full) and for the verdict tags on the trials' MLflow runs (which runs get them). Both are bounded so
that a sweep's end costs the same at 10,000 trials as at 1,000; ``results.json`` and ``configs.json`` keep every
configuration.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from raycomp.base import keys
from raycomp.results.configs import ConfigSummary
from raycomp.results.verdicts import FASTER


def references_and_ranked(configs: Sequence[ConfigSummary]) -> tuple[list[ConfigSummary], list[ConfigSummary]]:
    """The references (the baseline, its budgets, the control) in sweep order, and the other configurations
    ranked: faster first (the highest lower bound of speed-up first), then by speed-up; failed and unjudged last."""
    references = [config for config in configs if is_reference(config)]
    judged = sorted((config for config in configs if not is_reference(config)), key=_rank)
    return references, judged


MAX_SHOWN = 30  # the configurations shown in full besides the references: a table of 800 is one nobody reads


def shown_configs(
    configs: Sequence[ConfigSummary], limit: int = MAX_SHOWN
) -> tuple[list[ConfigSummary], list[ConfigSummary]]:
    """The configurations shown in full, in sweep order (the references and the ``limit`` ranked first), and the
    others, ranked."""
    references, ranked = references_and_ranked(configs)
    if len(ranked) <= limit:
        return list(configs), []
    kept = {config.config_id for config in [*references, *ranked[:limit]]}
    return [config for config in configs if config.config_id in kept], ranked[limit:]


def counted_by_verdict(configs: Sequence[ConfigSummary]) -> str:
    """``12 no evidence, 3 faster``: how many of ``configs`` each verdict (or state) has, most first."""
    counts = Counter(config.shown_verdict or "no verdict" for config in configs)
    return ", ".join(f"{n} {verdict}" for verdict, n in counts.most_common())


def is_reference(config: ConfigSummary) -> bool:
    return config.variant != keys.METHOD or config.budget is not None


def first_trials(configs: Sequence[ConfigSummary], limit: int) -> list[ConfigSummary]:
    """The references, then the ranked configurations, while their trials (seeds) number at most ``limit``: the
    configurations a large sweep tags run by run (the references always)."""
    references, ranked = references_and_ranked(configs)
    kept, trials = list(references), sum(len(config.seeds) for config in references)
    for config in ranked:
        trials += len(config.seeds)
        if trials > limit:
            break
        kept.append(config)
    return kept


def _rank(config: ConfigSummary) -> tuple[int, float, float]:
    verdict = config.verdict
    if config.failure is not None or verdict is None:
        return (2, 0.0, 0.0)
    low, point = verdict.speedup_ci_low or 0.0, verdict.speedup or 0.0
    return (0 if verdict.verdict == FASTER else 1, -low if verdict.verdict == FASTER else -point, -point)
