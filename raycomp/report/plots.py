"""The report's figures, drawn with matplotlib's object API on the Agg canvas (no pyplot, no GUI, no global
backend switch), so they draw the same in a Tune driver, a CLI or a test. matplotlib is imported here
only, when a figure is drawn."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from raycomp import keys
from raycomp.report.analysis import format_args, front_trials, repeats, trace_totals
from raycomp.report.summary import TrialSummary
from raycomp.report.sweep import Sweep

BASELINE_COLOR = "black"
DPI = 110


def trial_colors(sweep: Sweep) -> dict[str, Any]:
    """One color per trial, the same in every figure; the baseline is black."""
    from matplotlib import colormaps

    palette = colormaps["tab20"]
    methods = [t for t in sweep.trials if not t.is_baseline]
    colors: dict[str, Any] = {t.trial_id: palette(i % 20) for i, t in enumerate(methods)}
    colors.update({t.trial_id: BASELINE_COLOR for t in sweep.trials if t.is_baseline})
    return colors


def legend_speedup(trial: TrialSummary, sweep: Sweep) -> str:
    if sweep.baseline is None or not trial.has_result:
        return "-"
    return f"{trial.speedup:.2f}×" if trial.speedup is not None else "never"


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    return figure, figure.add_subplot()


def time_to_accuracy(sweep: Sweep, path: Path) -> Path:
    """The metric at each evaluation against training wall seconds, one line per trial, the baseline bold."""
    figure, axes = _figure(11, 5.5)
    colors = trial_colors(sweep)
    baseline = sweep.baseline
    for trial in sorted(sweep.trials, key=lambda t: t.is_baseline):  # the baseline drawn last, on top
        points = [(wall, value) for _, wall, value in trial.curve if wall is not None]
        if not points:
            continue
        xs, ys = zip(*points, strict=True)
        label = f"{trial.trial_id} ({legend_speedup(trial, sweep)})"
        if trial.is_baseline:
            axes.plot(xs, ys, color=BASELINE_COLOR, lw=3, marker="o", ms=5, zorder=5, label=f"baseline {label}")
        else:
            style = "--" if trial.status == keys.STOPPED else "-"
            axes.plot(xs, ys, style, color=colors[trial.trial_id], lw=1.3, marker="o", ms=3, alpha=0.9, label=label)
    if baseline is not None:
        axes.axhline(baseline.final_metric, color=BASELINE_COLOR, lw=0.8, ls=":", zorder=1)
        axes.axvline(baseline.wall_s, color=BASELINE_COLOR, lw=0.8, ls=":", zorder=1)
        axes.annotate(
            f"baseline: {baseline.final_metric:.4g} in {baseline.wall_s:.1f} s",
            (baseline.wall_s, baseline.final_metric),
            xytext=(-6, -16),
            textcoords="offset points",
            ha="right",
            fontsize=9,
        )
    axes.set_xlabel("training wall time (s)")
    axes.set_ylabel(sweep.metric)
    axes.set_title(f"{sweep.name}: time to {sweep.metric} (dashed: stopped by the scheduler)")
    axes.grid(alpha=0.3)
    if len(sweep.trials) <= 24 and axes.get_legend_handles_labels()[0]:
        axes.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, title="trial (speed-up)")
    _save(figure, path)
    return path


def pareto(sweep: Sweep, path: Path) -> Path:
    """Final metric against training wall time; the front of trials that trained to their end, with arguments."""
    figure, axes = _figure(11, 6)
    colors = trial_colors(sweep)
    for trial in sweep.trials:
        if not trial.has_result:
            continue
        color = colors[trial.trial_id]
        if trial.is_baseline:
            axes.scatter(
                trial.wall_s, trial.final_metric, marker="*", s=260, color=color, zorder=6, label=keys.BASELINE
            )
        elif trial.status == keys.TERMINATED:
            axes.scatter(trial.wall_s, trial.final_metric, s=45, color=color, zorder=4)
        else:
            axes.scatter(trial.wall_s, trial.final_metric, s=45, facecolors="none", edgecolors=color, zorder=4)
    front = front_trials(sweep)
    if front:
        xs = [t.wall_s for t in front]
        ys = [t.final_metric for t in front]
        axes.step(xs, ys, where="post", color="tab:red", lw=1.5, alpha=0.7, zorder=3, label="Pareto front")
        for i, trial in enumerate(front):
            text = keys.BASELINE if trial.is_baseline else format_args(trial.overrides, "\n") or trial.trial_id
            right = i % 2 == 0  # below the point, alternately right and left: neighbours' labels overlap less
            axes.annotate(
                text,
                (trial.wall_s, trial.final_metric),
                xytext=(8, -8) if right else (-8, -8),
                textcoords="offset points",
                fontsize=7,
                va="top",
                ha="left" if right else "right",
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "0.8", "alpha": 0.85},
            )
    for spread in repeats(sweep):  # several runs of one config: their mean with the min-max range
        if spread.n < 2:
            continue
        wall, metric = spread.range("wall_s"), spread.range("final_metric")
        mean_x = sum(t.wall_s for t in spread.trials) / spread.n
        mean_y = sum(t.final_metric for t in spread.trials) / spread.n
        axes.errorbar(
            mean_x,
            mean_y,
            xerr=[[mean_x - wall[0]], [wall[1] - mean_x]],
            yerr=[[mean_y - metric[0]], [metric[1] - mean_y]],
            color=colors[spread.trials[0].trial_id],
            capsize=3,
            lw=1,
            zorder=2,
        )
    baseline = sweep.baseline
    if baseline is not None:
        axes.axhline(baseline.final_metric, color=BASELINE_COLOR, lw=0.8, ls=":", zorder=1)
    axes.set_xlabel("training wall time (s)")
    axes.set_ylabel(f"final {sweep.metric}")
    axes.set_title("final accuracy against training time (hollow: stopped by the scheduler, not on the front)")
    axes.grid(alpha=0.3)
    axes.margins(x=0.1, y=0.08)
    _focus_on_finished(axes, sweep)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="lower right", fontsize=8)
    _save(figure, path)
    return path


def _focus_on_finished(axes: Any, sweep: Sweep) -> None:
    """The metric axis spans the trials that trained to their end; stopped ones far below are counted instead."""
    finished = [t.final_metric for t in sweep.trials if t.has_result and t.status == keys.TERMINATED]
    if len(finished) < 2:
        return
    low, high = min(finished), max(finished)
    pad = 0.25 * (high - low) or 0.05 * abs(high) or 0.05
    bottom, top = low - pad, high + pad
    outside = [t for t in sweep.trials if t.has_result and not bottom <= t.final_metric <= top]
    if outside:
        axes.set_ylim(bottom, top)
        axes.annotate(
            f"{len(outside)} stopped trial{'s' if len(outside) > 1 else ''} outside this range (see the table)",
            (0.01, 0.01),
            xycoords="axes fraction",
            fontsize=8,
            color="0.4",
        )


def traces(sweep: Sweep, path: Path) -> Path | None:
    """Wall time per algorithm and event, summed over the trials (the Engine's trace summary)."""
    totals = trace_totals(sweep)
    if not totals:
        return None
    figure, axes = _figure(11, 1.2 + 0.45 * len(totals))
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
    _save(figure, path)
    return path


def _save(figure: Any, path: Path) -> None:
    """Written whole or not at all: a crash mid-write leaves the previous report's file in place."""
    staging = path.with_name(f".{path.name}.tmp")
    figure.savefig(staging, dpi=DPI, format="png")
    os.replace(staging, path)
