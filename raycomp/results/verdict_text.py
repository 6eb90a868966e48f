"""The verdicts in words, one wording for the CLI's table, its best line and the report.

Every sentence follows the sweep's ``mode``: for a metric to minimise (a loss, an error) lower is better, and
``less accurate`` means a Δ interval wholly *above* the tolerance. A configuration whose trials failed is in
the state ``failed`` with its error's first line, not a verdict; a verdict left open by an interval from
fewer than ``seed_power.MIN_INFORMATIVE_SEEDS`` seeds is marked uninformative; and "best" names only a
configuration shown ``faster``, else says why there is none.
"""

from __future__ import annotations

from collections.abc import Sequence

from raycomp.base import keys
from raycomp.results.configs import FAILED, ConfigSummary, SweepVerdicts
from raycomp.results.judging import metric_bounds
from raycomp.results.ranking import counted_by_verdict, shown_configs
from raycomp.results.seed_power import MIN_INFORMATIVE_SEEDS, uninformative
from raycomp.results.verdicts import VERDICTS, Verdict

NAMED = 10  # configurations a warning names; a sweep of thousands has it say how many more


def better(mode: str) -> str:
    """Which way the metric improves, in words."""
    return "lower is better" if mode == "min" else "higher is better"


def worse_rule(mode: str, tolerance: float, points: bool = False) -> str:
    """When a configuration is ``less accurate``: its Δ interval beyond the tolerance on the worse side."""
    limit = tolerance_text(tolerance, points)
    return f"wholly above +{limit}" if mode == "min" else f"wholly below −{limit}"


def verdict_rule(verdicts: SweepVerdicts, metric: str) -> str:
    """The rule the verdicts follow, on one line, in the metric's own direction (docs/report.md, "Verdict")."""
    judging = verdicts.judging
    points = metric_bounds(metric) == (0.0, 1.0)
    tolerance = tolerance_text(judging.tolerance, points)
    worse = "−" if verdicts.mode == "max" else "+"
    return (
        f"verdicts on {metric} ({better(verdicts.mode)}): faster needs both halves shown, the speed-up interval "
        f"above 1x (its low end priced at the Δ interval's worse end) and the Δ interval's worse end within "
        f"{worse}{tolerance}; slower when the speed-up interval lies below 1x (its high end priced at the Δ's "
        f"better end); equivalent when it lies within ±{judging.equivalence:.0%} and Δ within ±{tolerance}; less "
        f"accurate when the Δ interval lies {worse_rule(verdicts.mode, judging.tolerance, points)}; else no evidence"
    )


def tolerance_text(tolerance: float, points: bool) -> str:
    """The accuracy tolerance as the intervals are shown: ``0.5 points`` for a [0, 1] metric, else its units."""
    return f"{tolerance * 100:g} points" if points else f"{tolerance:g}"


def uninformative_configs(verdicts: SweepVerdicts) -> list[ConfigSummary]:
    """The configurations left open by intervals from too few paired seeds to rule anything out."""
    return [c for c in verdicts.configs if c.verdict is not None and uninformative(c.verdict)]


def few_seeds_note(verdicts: SweepVerdicts) -> str | None:
    """Which open verdicts rest on uninformative intervals, and what to do about it; None when none does."""
    weak = uninformative_configs(verdicts)
    if not weak:
        return None
    names = ", ".join(c.config_id for c in weak[:NAMED])
    names += f" and {len(weak) - NAMED} more" if len(weak) > NAMED else ""
    return (
        f"intervals from fewer than {MIN_INFORMATIVE_SEEDS} seeds are uninformative ({names}): they rule nothing out, "
        f"so 'no evidence' from them says nothing; set sweep.repeats: {MIN_INFORMATIVE_SEEDS} or more "
        "(docs/report.md, power table)"
    )


def best_line(verdicts: SweepVerdicts) -> str:
    """The line under the verdict table naming the best configuration, or why there is none."""
    if verdicts.best is None:
        return f"best: none ({why_no_best(verdicts)})"
    config = next(c for c in verdicts.configs if c.config_id == verdicts.best)
    verdict = config.verdict
    assert verdict is not None  # best_config names only a judged, faster configuration
    return (
        f"best (the faster configuration with the highest speed-up lower bound): {config.config_id} "
        f"{verdict.verdict}, {verdict.speedup:.2f}x [{verdict.speedup_ci_low:.2f}x, {verdict.speedup_ci_high:.2f}x]; "
        f"{verdict.accuracy_text()} {config.arguments}"
    )


def why_no_best(verdicts: SweepVerdicts) -> str:
    """Why no configuration is best: the candidates are the methods shown ``faster`` that neither failed nor
    diverged at any seed."""
    methods = [c for c in verdicts.configs if c.variant == keys.METHOD]
    if not methods:
        return "no method configuration in this sweep"
    failed = [c for c in methods if c.failure is not None]
    diverged = [c for c in methods if c.diverged and c.failure is None]
    if len(failed) == len(methods):
        return f"every configuration failed: {failed[0].failure}"
    if len(diverged) == len(methods):
        return "every configuration diverged"
    if len(failed) + len(diverged) == len(methods):
        return f"every configuration failed or diverged ({len(failed)} failed, {len(diverged)} diverged)"
    baseline = next((c for c in verdicts.configs if c.variant == keys.BASELINE), None)
    if baseline is not None and baseline.failure is not None:
        return f"the baseline failed: {baseline.failure}"
    lost = _lost(failed, diverged, len(methods))
    judged = [c for c in methods if c not in failed and c not in diverged and c.verdict is not None]
    if not any(c.verdict.speedup_ci_low is not None for c in judged if c.verdict):
        return "a speed-up interval needs sweep.repeats >= 2 and a baseline" + lost
    counts: dict[str, int] = {}
    for config in judged:
        counts[config.verdict.verdict] = counts.get(config.verdict.verdict, 0) + 1  # type: ignore[union-attr]
    listed = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if v in counts)
    weak = [c for c in judged if c.verdict and uninformative(c.verdict)]
    few = f"; {len(weak)} from fewer than {MIN_INFORMATIVE_SEEDS} seeds, uninformative" if weak else ""
    return f"no configuration was shown faster: {listed}{lost}{few}"


def _lost(failed: Sequence[ConfigSummary], diverged: Sequence[ConfigSummary], methods: int) -> str:
    """``; 1 of 3 configurations failed; 1 of 3 configurations diverged``, for those that did."""
    groups = ((failed, FAILED), (diverged, "diverged"))
    return "".join(f"; {len(group)} of {methods} configurations {what}" for group, what in groups if group)


def format_verdicts(verdicts: SweepVerdicts, metric: str = "eval/accuracy", limit: int | None = None) -> str:
    """The per-configuration table the CLI prints, under the verdict rule in the metric's direction, then the
    control's verdict and the noise floor. With ``limit``, a row for the references and the ``limit``
    configurations ranked first (``ranking.shown_configs``), and one line counting the rest by verdict.

    Its quality columns are named after the sweep's metric (``loss`` and ``Δ loss`` for ``eval/loss``). A failed
    configuration says ``failed`` and its error's first line; intervals from too few seeds are marked."""
    level = f"{verdicts.judging.confidence:.0%} CI"
    name = metric.split("/")[-1]
    points = metric_bounds(metric) == (0.0, 1.0)
    delta = f"Δ {name}{', points' if points else ''}"
    header = ["config", "variant", "n", name, "time s", f"speed-up [{level}]", f"{delta} [{level}]", "verdict"]
    if verdicts.judging.looks:  # adaptive: each interval at its own look's level (alpha spent over the looks)
        header = [*header[:5], "speed-up [per look]", f"{delta} [per look]", "verdict", "seeds: why stopped"]
    shown, rest = shown_configs(verdicts.configs, limit) if limit is not None else (list(verdicts.configs), [])
    lines = [header, *(_row(config, verdicts, points) for config in shown)]
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    text = [verdict_rule(verdicts, metric)]
    text += [
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), *row[len(header) :]]).rstrip()
        for row in lines
    ]
    if rest:
        trials = sum(len(config.seeds) for config in rest)
        text.append(f"... {len(rest)} more configurations ({trials} trials), ranked below: {counted_by_verdict(rest)}")
    floor = "-" if verdicts.noise_floor is None else f"{verdicts.noise_floor:.1%}"
    if verdicts.noise_floor_wall is not None and verdicts.noise_floor_wall != verdicts.noise_floor:
        floor += f" (whole-trial wall time: {verdicts.noise_floor_wall:.1%})"
    text.append(
        f"control (A/A): {_control(verdicts)}; noise floor (CV of baseline times, {verdicts.judging.timing}): {floor}"
    )
    if verdicts.judging.looks:
        first, last = verdicts.judging.looks
        text.append(
            f"adaptive repeats: {first} seeds, then one more to each unresolved configuration up to {last}; "
            f"{verdicts.judging.confidence:.0%} over all looks (alpha spent per look)"
        )
    note = few_seeds_note(verdicts)
    if note:
        text.append(f"warning: {note}")
    return "\n".join(text)


def _row(config: ConfigSummary, verdicts: SweepVerdicts, points: bool) -> list[str]:
    v = config.verdict
    speed = (
        "-" if not v or v.speedup is None else f"{v.speedup:.2f}x" + _interval(v.speedup_ci_low, v.speedup_ci_high, "x")
    )
    delta = "-" if not v or v.accuracy_delta is None else _delta(v, points)
    shown = config.shown_verdict
    verdict = "(reference)" if shown is None else shown + (f" ({v.note})" if v and v.note else "")
    row = [
        config.config_id,
        config.variant,
        str(len(config.seeds)),
        _number(config.accuracy_median, "{:.4f}"),
        _number(config.time_median_s, "{:.1f}"),
        speed,
        delta,
        verdict,
    ]
    if verdicts.judging.looks:
        row.append(config.stopped or "")
    if config.failure is not None:
        row.append(config.failure)
    elif config.failed:
        row.append(f"FAILED at seed {', '.join(map(str, config.failed))}")
    if config.diverged:
        row.append(f"DIVERGED at seed {', '.join(map(str, config.diverged))}")
    if v is not None and uninformative(v):
        row.append(f"UNINFORMATIVE: intervals from {v.n} seeds")
    return row


def _control(verdicts: SweepVerdicts) -> str:
    config = next((c for c in verdicts.configs if c.variant == keys.CONTROL), None)
    if verdicts.control is None or config is None:
        return verdicts.control or "none in this sweep"
    if config.failure is not None:
        return f"{FAILED} ({config.failure})"
    if config.verdict is not None and uninformative(config.verdict):
        return f"{verdicts.control} (from {config.verdict.n} seeds: uninformative, it tests nothing)"
    return verdicts.control


def _interval(low: float | None, high: float | None, unit: str) -> str:
    if low is None or high is None:
        return ""
    return f" [{low:.2f}{unit}, {high:.2f}{unit}]" if unit else f" [{low:+.4f}, {high:+.4f}]"


def _delta(v: Verdict, points: bool) -> str:
    """``+0.05 [-0.12, +0.22]``: in points for a [0, 1] metric, as its column's header says."""
    scale, digits = (100.0, 2) if points else (1.0, 4)
    low, high = v.accuracy_delta_ci_low, v.accuracy_delta_ci_high
    interval = "" if low is None or high is None else f" [{low * scale:+.{digits}f}, {high * scale:+.{digits}f}]"
    return f"{v.accuracy_delta * scale:+.{digits}f}{interval}"  # type: ignore[operator]


def _number(value: float | None, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)
