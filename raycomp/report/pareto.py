"""The accuracy-against-time figure: one point per configuration with its intervals, and the baseline frontier.

Every time is in the clock the verdicts compared (``sweep.timing``, ``Judging.clock`` on the x axis): the medians
and the single trials alike. Each configuration sits at its median training time and median final metric over its
seeds, in its
color of every figure, its verdict in the legend. The horizontal bar is the speed-up's interval drawn as
the times it implies (median time × speed-up ÷ each end of the interval): the verdict compares a
configuration with the frontier at its own accuracy, so a bar wholly left of the frontier line reads
``faster``. The vertical bar is the accuracy difference's interval added to the baseline's median. The
frontier (the baseline at each budget, median over seeds) is a line; the control a purple diamond;
single trials faint dots. Artists carry a ``gid`` (``frontier``, ``control``, ``point:<config>``,
``time-interval:<config>``, ``metric-interval:<config>``, ``best``, ``trial:<trial id>``) for the tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raycomp.base import keys
from raycomp.report.analysis import baseline_config, frontier_line, has_point
from raycomp.report.plots import (
    BASELINE_COLOR,
    BEST_COLOR,
    config_colors,
    figure_and_axes,
    legend_label,
    save,
)
from raycomp.report.sweep import Sweep
from raycomp.results.configs import ConfigSummary
from raycomp.results.judging import trial_time
from raycomp.results.summary import TrialSummary
from raycomp.results.verdict_text import better


def pareto(sweep: Sweep, path: Path) -> Path:
    save(pareto_figure(sweep), path)
    return path


def pareto_figure(sweep: Sweep) -> Any:
    figure, axes = figure_and_axes(11, 6)
    verdicts = sweep.verdicts
    timing = verdicts.judging.timing
    colors = config_colors(verdicts)
    for trial in _finished(sweep):  # the single runs behind each median, on the medians' clock
        color = colors.get(trial.config_id or trial.trial_id, "0.6")
        axes.scatter(
            trial_time(trial, timing), trial.final_metric, s=12, color=color, alpha=0.3, lw=0, zorder=2,
            gid=f"trial:{trial.trial_id}",
        )  # fmt: skip
    _frontier(axes, verdicts)
    baseline = baseline_config(verdicts)
    reference = baseline.accuracy_median if baseline is not None else None
    if reference is not None:
        axes.axhline(reference, color=BASELINE_COLOR, lw=0.6, ls=":", zorder=1)
    for config in verdicts.configs:
        if config.variant in (keys.METHOD, keys.CONTROL) and has_point(config):
            _configuration(axes, config, colors[config.config_id], reference, config.config_id == verdicts.best)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, title="configuration")
    axes.set_xlabel(f"{verdicts.judging.clock} (s), median over seeds")
    axes.set_ylabel(f"final {sweep.metric}, median over seeds ({better(sweep.mode)})")
    level = f"{verdicts.judging.confidence:.0%}"
    axes.set_title(f"{sweep.metric} against time ({better(sweep.mode)}); bars: {level} intervals")
    axes.grid(alpha=0.3)
    _frame_the_points(axes, sweep)
    return figure


def _frame_the_points(axes: Any, sweep: Sweep) -> None:
    """Axes that span the measured points (every finished trial, every median), not the intervals: with
    two seeds a t interval can be a hundred times wider than the data. A bar that runs off the plot is
    cut at its edge, and the figure says so."""
    points = [(trial_time(t, sweep.verdicts.judging.timing), t.final_metric) for t in _finished(sweep)]
    points += [(c.time_median_s, c.accuracy_median) for c in sweep.verdicts.configs if has_point(c)]
    if not points:
        return
    xs, ys = [x for x, _ in points], [y for _, y in points]
    top = max(xs)
    low, high = min(ys), max(ys)
    pad = 0.12 * (high - low) or 0.05 * abs(high) or 0.05
    axes.set_xlim(0, 1.1 * top if top > 0 else 1)
    axes.set_ylim(low - pad, high + pad)
    left, right = axes.get_xlim()
    bottom, up = axes.get_ylim()
    bars = [line for line in axes.get_lines() if "interval:" in (line.get_gid() or "")]
    if any(min(b.get_xdata()) < left or max(b.get_xdata()) > right for b in bars) or any(
        min(b.get_ydata()) < bottom or max(b.get_ydata()) > up for b in bars
    ):
        axes.annotate(
            "bars running off the plot are wider than shown",
            (0.01, 0.01),
            xycoords="axes fraction",
            fontsize=8,
            color="0.4",
        )


def _finished(sweep: Sweep) -> list[TrialSummary]:
    """The trials that trained to their end with a result: the single runs behind the medians."""
    return [t for t in sweep.trials if t.has_result and t.status == keys.TERMINATED]


def _frontier(axes: Any, verdicts: Any) -> None:
    line = frontier_line(verdicts)
    if not line:
        return
    xs = [c.time_median_s for c in line]
    ys = [c.accuracy_median for c in line]
    label = "the baseline frontier (its budgets, median over seeds)"
    axes.plot(xs, ys, "-o", color=BASELINE_COLOR, lw=2, ms=6, zorder=5, gid="frontier", label=label)
    for config in line:
        text = "baseline" if config.variant == keys.BASELINE else config.config_id
        if config.variant == keys.FRONTIER and config.budget:
            text = f"{config.budget:.0%} budget"
        axes.annotate(
            text,
            (config.time_median_s, config.accuracy_median),
            xytext=(6, -12),
            textcoords="offset points",
            fontsize=8,
        )


def _configuration(axes: Any, config: ConfigSummary, color: Any, reference: float | None, best: bool) -> None:
    """The point, its two interval bars and its label."""
    x, y = config.time_median_s, config.accuracy_median
    verdict = config.verdict
    bar = {"color": color, "lw": 1.3, "zorder": 3, "alpha": 0.9}
    if verdict is not None and verdict.speedup and verdict.speedup_ci_low and verdict.speedup_ci_high:
        times = [x * verdict.speedup / verdict.speedup_ci_high, x * verdict.speedup / verdict.speedup_ci_low]
        axes.plot(times, [y, y], marker="|", ms=8, gid=f"time-interval:{config.config_id}", **bar)
    low = verdict.accuracy_delta_ci_low if verdict is not None else None
    high = verdict.accuracy_delta_ci_high if verdict is not None else None
    if reference is not None and low is not None and high is not None:
        axes.plot(
            [x, x],
            [reference + low, reference + high],
            marker="_",
            ms=8,
            gid=f"metric-interval:{config.config_id}",
            **bar,
        )
    control = config.variant == keys.CONTROL
    label = legend_label(config) + (" (best)" if best else "")
    axes.scatter(
        x,
        y,
        label=label,
        s=90 if control else 55,
        marker="D" if control else "o",
        color=color,
        edgecolors="white",
        zorder=6,
        gid="control" if control else f"point:{config.config_id}",
    )
    if best:
        axes.scatter(x, y, s=260, facecolors="none", edgecolors=BEST_COLOR, lw=2, zorder=6, gid="best")
    axes.annotate(
        "control" if control else config.config_id,
        (x, y),
        xytext=(7, 5),
        textcoords="offset points",
        fontsize=8,
        color="0.2",
        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.7},
        zorder=7,
    )
