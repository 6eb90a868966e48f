"""The report's figures, drawn with matplotlib's object API on the Agg canvas (no pyplot, no GUI, no global
backend switch), so they draw the same in a Tune driver, a CLI or a test. matplotlib is imported here
only, when a figure is drawn."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from raycomp.base import keys
from raycomp.base.atomic_files import atomic_writer
from raycomp.report.analysis import REFERENCES, baseline_config, described, has_point, trace_totals
from raycomp.report.sweep import Sweep
from raycomp.results.configs import ConfigSummary, SweepVerdicts
from raycomp.results.judging import CLOCK_LABELS
from raycomp.results.verdict_text import better

BASELINE_COLOR = "black"
CONTROL_COLOR = "#6f42c1"
BEST_COLOR = "#1a7f37"
# The methods' colors: neither green nor red (the page's "faster"/"slower"), purple (the control) or grey (the
# frontier), so that no figure seems to say a verdict by color; the verdict is in each legend entry.
METHOD_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#393b79",
    "#e7ba52",
    "#5c6b8a",
    "#ad494a",
    "#9edae5",
    "#c49c94",
)
DPI = 110


def config_colors(verdicts: SweepVerdicts) -> dict[str, Any]:
    """One color per configuration, the same for its every seed and in every figure: the baseline black,
    its shorter budgets grey (darker the longer), the control purple, the methods ``METHOD_COLORS`` in turn."""
    colors: dict[str, Any] = {}
    methods = 0
    for config in verdicts.configs:
        if config.variant == keys.BASELINE:
            colors[config.config_id] = BASELINE_COLOR
        elif config.variant == keys.FRONTIER:
            colors[config.config_id] = str(round(0.75 - 0.45 * (config.budget or 0.5), 2))
        elif config.variant == keys.CONTROL:
            colors[config.config_id] = CONTROL_COLOR
        else:
            colors[config.config_id] = METHOD_COLORS[methods % len(METHOD_COLORS)]
            methods += 1
    return colors


def legend_label(config: ConfigSummary) -> str:
    """A configuration in a legend: its id and what it is, or its verdict (or ``failed``) and speed-up."""
    if config.failure is not None:
        return f"{config.config_id}: {config.shown_verdict}"
    if config.variant in REFERENCES:
        return f"{config.config_id}: {described(config)}"
    verdict = config.verdict
    if verdict is None:
        return config.config_id
    speedup = f" {verdict.speedup:.2f}×" if verdict.speedup is not None else ""
    return f"{config.config_id}: {verdict.verdict}{speedup}"


def figure_and_axes(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    return figure, figure.add_subplot()


_DRAW_ORDER = {keys.METHOD: 0, keys.FRONTIER: 1, keys.CONTROL: 2, keys.BASELINE: 3}  # the baseline last, on top


def time_to_accuracy(sweep: Sweep, path: Path) -> Path:
    save(curves_figure(sweep), path)
    return path


def curves_figure(sweep: Sweep) -> Any:
    """The metric at each evaluation against training wall seconds, one line per trial and one color per
    configuration: the baseline thick black, its shorter budgets grey, the control purple dash-dot.

    Evaluations are timed on the wall clock only, so every point here is wall time, the baseline's median
    crosshair included, whatever clock the verdicts compared (the x label names it when it differs)."""
    figure, axes = figure_and_axes(11, 5.5)
    colors = config_colors(sweep.verdicts)
    configs = {c.config_id: c for c in sweep.verdicts.configs}
    labelled: set[str] = set()
    for trial in sorted(sweep.trials, key=lambda t: _DRAW_ORDER.get(t.variant, 0)):
        points = [(wall, value) for _, wall, value in trial.curve if wall is not None]
        if not points:
            continue
        xs, ys = zip(*points, strict=True)
        config_id = trial.config_id or trial.trial_id
        config = configs.get(config_id)
        label = legend_label(config) if config is not None and config_id not in labelled else None
        labelled.add(config_id)
        style: dict[str, Any] = {"color": colors.get(config_id, "0.5"), "marker": "o", "ms": 3, "lw": 1.2}
        if trial.variant == keys.BASELINE:
            style |= {"lw": 2.6, "ms": 4, "zorder": 5}
        elif trial.variant == keys.FRONTIER:
            style |= {"lw": 1.8, "marker": "s", "zorder": 4}
        elif trial.variant == keys.CONTROL:
            style |= {"lw": 1.8, "ls": "-.", "zorder": 4}
        if trial.status == keys.STOPPED:
            style |= {"ls": "--", "alpha": 0.6}
        axes.plot(xs, ys, label=label, gid=f"trial:{trial.trial_id}", **style)
    baseline = baseline_config(sweep.verdicts)
    baseline_wall = _baseline_wall_median(sweep)
    if baseline is not None and has_point(baseline) and baseline_wall is not None:
        axes.axhline(baseline.accuracy_median, color=BASELINE_COLOR, lw=0.8, ls=":", zorder=1)
        axes.axvline(baseline_wall, color=BASELINE_COLOR, lw=0.8, ls=":", zorder=1, gid="baseline-wall-median")
        axes.annotate(
            f"dotted: the baseline's median, {baseline.accuracy_median:.4g} in {baseline_wall:.1f} s",
            (0.99, 0.02),
            xycoords="axes fraction",
            ha="right",
            fontsize=9,
            color="0.3",
        )
    judging = sweep.verdicts.judging
    compared = "" if judging.timing == "wall" else f"; the verdicts compare the {judging.clock}"
    axes.set_xlabel(f"{CLOCK_LABELS['wall']} (s){compared}")
    axes.set_ylabel(f"{sweep.metric} ({better(sweep.mode)})")
    axes.set_title(f"{sweep.name}: {sweep.metric} against time, every trial (dashed: stopped by the scheduler)")
    axes.grid(alpha=0.3)
    if len(configs) <= 24 and axes.get_legend_handles_labels()[0]:
        axes.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, title="configuration")
    return figure


def _baseline_wall_median(sweep: Sweep) -> float | None:
    """The baseline's median wall time over its finished trials: the curves' clock, not the verdicts'."""
    walls = [
        t.wall_s for t in sweep.trials if t.variant == keys.BASELINE and t.has_result and t.status == keys.TERMINATED
    ]
    return statistics.median(walls) if walls else None


def traces(sweep: Sweep, path: Path) -> Path | None:
    """Wall time per algorithm and event, summed over the trials (the Engine's trace summary)."""
    totals = trace_totals(sweep)
    if not totals:
        return None
    figure, axes = figure_and_axes(11, 1.2 + 0.45 * len(totals))
    labels = [f"{t.algorithm} · {t.event}" for t in totals]
    values = [t.total_s for t in totals]
    axes.barh(labels, values, color="tab:blue")
    axes.invert_yaxis()
    for i, total in enumerate(totals):
        share = f", {total.share:.1%} of their training" if total.share is not None else ""
        axes.annotate(
            f"{total.total_s:.2f} s in {total.trials} trials{share}",
            (total.total_s, i),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
        )
    axes.set_xlabel("seconds, summed over the trials")
    axes.set_title("the Engine's trace summary: time per algorithm and event")
    axes.set_xlim(0, 1.6 * max(values) if max(values) > 0 else 1)  # room for the labels
    save(figure, path)
    return path


def save(figure: Any, path: Path) -> None:
    """Written whole or not at all: a crash mid-write leaves the previous report's file in place."""
    with atomic_writer(path) as file:
        figure.savefig(file, dpi=DPI, format="png")
