"""A find's figure: every recipe it tried at its median time and median metric over its seeds, with the baseline
and its budgets, the control, the Pareto front of everything tried and the recipe Confirm ran.

Times are the clock the find judged on (``find.timing``), and only that clock, so the figure and the verdicts
agree; the axis says which. Each recipe is numbered as in the page's table; single-method recipes share their
method's color, combinations are crosses. Artists carry a ``gid`` (``frontier``, ``control``, ``front``,
``chosen``, ``point:<arm>``) for the tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raycomp.base import keys
from raycomp.report.find_data import FindReport, frontier_budget, numbered, pareto_front
from raycomp.report.plots import BASELINE_COLOR, BEST_COLOR, CONTROL_COLOR, METHOD_COLORS, figure_and_axes, save
from raycomp.results.verdict_text import better

FRONT_COLOR = "#2da44e"
COMBINATION_COLOR = "#393b79"


def find_pareto(report: FindReport, path: Path) -> Path:
    save(find_pareto_figure(report), path)
    return path


def method_colors(report: FindReport) -> dict[str, Any]:
    """One color per candidate method, in the order of the page's paths."""
    return {name: METHOD_COLORS[k % len(METHOD_COLORS)] for k, name in enumerate(report.paths)}


def find_pareto_figure(report: FindReport) -> Any:
    figure, axes = figure_and_axes(11, 6)
    colors = method_colors(report)
    numbers = numbered(report)
    for arm in report.tried:  # the single trials behind each median, faint
        color = _color(arm.arm, colors)
        runs = [(run["time_s"], run["accuracy"]) for run in arm.runs if run.get("time_s") is not None]
        if runs and arm.arm != keys.CONTROL:
            axes.scatter(*zip(*runs, strict=True), s=12, color=color, alpha=0.3, lw=0, zorder=2)
    baseline = sorted(
        (frontier_budget(arm.arm), arm)
        for arm in report.tried
        if frontier_budget(arm.arm) is not None and arm.has_point
    )
    if baseline:
        xs, ys = [arm.time_median_s for _, arm in baseline], [arm.accuracy_median for _, arm in baseline]
        label = "the baseline and its budgets"
        axes.plot(xs, ys, "-s", color=BASELINE_COLOR, lw=2, ms=6, zorder=5, gid="frontier", label=label)
        for budget, arm in baseline:
            text = "baseline" if budget == 1.0 else f"{budget:.0%} budget"
            axes.annotate(text, (arm.time_median_s, arm.accuracy_median), xytext=(6, -12), textcoords="offset points")
    control = report.arm(keys.CONTROL)
    if control is not None and control.has_point:
        axes.scatter(
            control.time_median_s,
            control.accuracy_median,
            s=90,
            marker="D",
            color=CONTROL_COLOR,
            edgecolors="white",
            zorder=6,
            gid="control",
            label="the control (the baseline again)",
        )
    labelled: set[str] = set()
    for arm in report.recipes:
        if not arm.has_point:
            continue
        combination = "+" in arm.arm
        legend = "combinations" if combination else arm.arm.split("(")[0]
        axes.scatter(
            arm.time_median_s,
            arm.accuracy_median,
            s=70 if combination else 55,
            marker="P" if combination else "o",
            color=_color(arm.arm, colors),
            edgecolors="white",
            zorder=6,
            gid=f"point:{arm.arm}",
            label=None if legend in labelled else legend,
        )
        labelled.add(legend)
        axes.annotate(
            str(numbers[arm.arm]),
            (arm.time_median_s, arm.accuracy_median),
            xytext=(6, 4),
            textcoords="offset points",
            fontsize=8,
            color="0.2",
            zorder=7,
        )
    _front_and_choice(axes, report)
    axes.set_xlabel(f"{report.clock}, median over seeds")
    axes.set_ylabel(f"final {report.metric}, median over seeds ({better(report.mode)})")
    axes.set_title(f"{report.name}: every recipe tried, {report.metric} against time ({better(report.mode)})")
    axes.grid(alpha=0.3)
    axes.set_xlim(left=0)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, title="arms")
    return figure


def _front_and_choice(axes: Any, report: FindReport) -> None:
    """The Pareto front of every arm but the control (the baseline's twin), and the recipe Confirm ran, ringed."""
    front = pareto_front([arm for arm in report.tried if arm.arm != keys.CONTROL], report.mode)
    if front:
        xs, ys = [arm.time_median_s for arm in front], [arm.accuracy_median for arm in front]
        label = "Pareto front: no arm is both faster and better"
        axes.plot(xs, ys, "--", color=FRONT_COLOR, lw=3, alpha=0.5, zorder=4, gid="front", label=label)
    chosen = report.arm(report.chosen) if report.chosen else None
    if chosen is not None and chosen.has_point:
        word = "recommended" if report.recommended else "confirmed, not recommended"
        axes.scatter(
            chosen.time_median_s,
            chosen.accuracy_median,
            s=260,
            facecolors="none",
            edgecolors=BEST_COLOR,
            lw=2,
            zorder=6,
            gid="chosen",
            label=f"the recipe Confirm ran ({word})",
        )


def _color(arm: str, colors: dict[str, Any]) -> Any:
    if frontier_budget(arm) is not None:
        return BASELINE_COLOR
    if arm == keys.CONTROL:
        return CONTROL_COLOR
    return COMBINATION_COLOR if "+" in arm else colors.get(arm.split("(")[0], "0.5")
