"""A find on a proxy (``find.proxy``): did its verdicts hold at full length? One figure, each recipe the proxy
judged at its speed-up there (x) against its speed-up on the full run (y), with both intervals, and a table.

A point on the diagonal is a proxy that measured the full run's speed-up; above 1 on both axes, a call that held.
A recipe the full run never trained sits on the lower edge, marked as such. Artists carry a ``gid``
(``diagonal``, ``held:<recipe>``, ``missed:<recipe>``, ``unrun:<recipe>``) for the tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raycomp.find.plan import proxy_words
from raycomp.report.find_data import FindReport
from raycomp.report.plots import BASELINE_COLOR, BEST_COLOR, figure_and_axes, save
from raycomp.report.text import escape
from raycomp.results.verdicts import Verdict

PROXY_FIGURE = "proxy_held.png"
MISSED_COLOR = "#cf222e"


def proxy_figure(report: FindReport, path: Path) -> Path:
    save(proxy_held_figure(report), path)
    return path


def proxy_held_figure(report: FindReport) -> Any:
    figure, axes = figure_and_axes(7, 6)
    judged = [row for row in report.proxy_held if row.proxy.speedup is not None]
    # the axes hold every interval whole, not only the points: a proxy that misled is often far out on one axis
    values = [v for row in judged for verdict in (row.proxy, row.full) if verdict for v in _span(verdict) if v]
    low, high = min([0.8, *values]) * 0.9, max([1.25, *values]) * 1.1
    axes.plot([low, high], [low, high], color=BASELINE_COLOR, linestyle=":", gid="diagonal", label="held exactly")
    axes.axhline(1.0, color=BASELINE_COLOR, linewidth=0.8)
    axes.axvline(1.0, color=BASELINE_COLOR, linewidth=0.8)
    for number, row in enumerate(judged, start=1):
        x, x_err = row.proxy.speedup, _error(row.proxy)
        if row.full is None or row.full.speedup is None:
            axes.errorbar([x], [low], xerr=x_err, fmt="v", color="#888", gid=f"unrun:{row.recipe}")
        else:
            color, kind = {True: (BEST_COLOR, "held"), False: (MISSED_COLOR, "missed"), None: ("#888", "unshown")}[
                row.held
            ]
            y_err = _error(row.full)
            axes.errorbar(
                [x], [row.full.speedup], xerr=x_err, yerr=y_err, fmt="o", color=color, gid=f"{kind}:{row.recipe}"
            )
        axes.annotate(str(number), (x, row.full.speedup if row.full and row.full.speedup else low),
                      textcoords="offset points", xytext=(5, 5))  # fmt: skip
    from matplotlib.ticker import FuncFormatter

    axes.set_xscale("log")
    axes.set_yscale("log")
    times = FuncFormatter(lambda value, _: f"{value:.2g}×")  # after the log scale, which sets its own
    for axis in (axes.xaxis, axes.yaxis):
        axis.set_major_formatter(times)
        axis.set_minor_formatter(times)
    axes.set_xlim(low, high)
    axes.set_ylim(low * 0.95, high)
    axes.set_xlabel(f"speed-up on the proxy ({proxy_words(report.proxy, report.proxy_data)})")
    axes.set_ylabel("speed-up at full length, on fresh seeds")
    axes.legend(loc="upper left")
    return figure


def _span(verdict: Verdict) -> tuple[float | None, ...]:
    return verdict.speedup, verdict.speedup_ci_low, verdict.speedup_ci_high


def _error(verdict: Verdict) -> list[list[float]] | None:
    if verdict.speedup is None or verdict.speedup_ci_low is None or verdict.speedup_ci_high is None:
        return None
    return [[verdict.speedup - verdict.speedup_ci_low], [verdict.speedup_ci_high - verdict.speedup]]


def proxy_table(report: FindReport) -> str:
    """The figure's numbers: each recipe's verdict on the proxy and at full length, and whether the call held."""
    rows = []
    for number, row in enumerate((row for row in report.proxy_held if row.proxy.speedup is not None), start=1):
        full = _speedup(row.full) if row.full is not None else "not run at full length"
        if row.full is None and row.covered:
            full = "not run alone: the recipe it is in held"
        unknown = "-" if row.full is None else "not shown either way"
        held = {True: "held", False: "did not hold", None: unknown}[row.held]
        rows.append(
            f"<tr><td>{number}</td><td>{escape(row.recipe)}</td><td>{_speedup(row.proxy)}</td>"
            f"<td>{full}</td><td>{held}</td></tr>"
        )
    head = "<tr><th>#</th><th>recipe</th><th>on the proxy</th><th>at full length</th><th>the proxy's call</th></tr>"
    return f'<table id="proxy-held">{head}{"".join(rows)}</table>'


def _speedup(verdict: Verdict) -> str:
    interval = (
        f" [{verdict.speedup_ci_low:.2f}×, {verdict.speedup_ci_high:.2f}×]"
        if verdict.speedup_ci_low is not None and verdict.speedup_ci_high is not None
        else ""
    )
    return (
        f"{escape(verdict.verdict)}, {verdict.speedup:.2f}×{interval}" if verdict.speedup else escape(verdict.verdict)
    )
