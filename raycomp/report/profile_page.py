"""Performance profiles drawn and tabled: ``profile.png`` (rho(tau) of each method, tau on a log scale from 1 to
``tau_max``), ``profile.md`` and ``profile.html`` (each method's score and rho at a few taus, then every method's
time on every workload). The numbers are ``raycomp.results.profiles``'; the workloads ``profile_inputs``'.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from raycomp.base.atomic_files import atomic_write_text
from raycomp.report.page import STYLE
from raycomp.report.plots import METHOD_COLORS, figure_and_axes, save
from raycomp.report.profile_inputs import Workload
from raycomp.report.text import escape
from raycomp.results.profiles import PerformanceProfile

CLOCK = "training wall time from the start of fit (time/train_wall_s) to the first evaluation at the target"
TAUS = (1.0, 1.25, 1.5, 2.0)
FILES = ("profile.png", "profile.html", "profile.md")


def write_profiles(
    profile: PerformanceProfile,
    workloads: Sequence[Workload],
    times: Mapping[str, Mapping[str, float]],
    folder: Path,
    tau_max: float,
    by: str,
) -> list[Path]:
    """The figure, the page and the markdown table in ``folder``; their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    png, html, markdown = (folder / name for name in FILES)
    save(profile_figure(profile, tau_max, by), png)
    header, rows = score_table(profile, tau_max, by)
    times_header, times_rows = times_table(profile, times)
    atomic_write_text(markdown, _markdown(header, rows) + "\n\n" + _markdown(times_header, times_rows) + "\n")
    atomic_write_text(html, _page(workloads, png, (header, rows), (times_header, times_rows), tau_max, by))
    return [png, html, markdown]


def profile_figure(profile: PerformanceProfile, tau_max: float, by: str) -> Any:
    figure, axes = figure_and_axes(10, 5.5)
    for k, method in enumerate(profile.methods):
        taus, fractions = profile.steps(method, tau_max)
        label = f"{method} (score {profile.area(method, tau_max):.2f})"
        color = "black" if method == "baseline" else METHOD_COLORS[k % len(METHOD_COLORS)]
        style = {"color": color, "lw": 2.6 if method == "baseline" else 1.8}
        axes.step(taus, fractions, where="post", label=label, gid=f"profile:{method}", **style)
    from matplotlib.ticker import NullFormatter

    axes.set_xscale("log", base=2)
    axes.set_xlim(1, tau_max)
    ticks = sorted({tau for tau in (1, 1.25, 1.5, 2, 3, 4, 8, 16) if tau <= tau_max} | {tau_max})
    axes.set_xticks(ticks, [f"{tau:g}" for tau in ticks])
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_ylim(-0.02, 1.05)
    axes.set_xlabel("τ: time to the baseline's final metric ÷ the best's on that workload (log scale)")
    axes.set_ylabel(f"fraction of the {len(profile.workloads)} workloads within τ× of the best")
    axes.set_title(f"Performance profiles by {by}\ntime: {CLOCK}", fontsize=10)
    axes.grid(alpha=0.3, which="both")
    axes.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, title=f"{by} (area score)")
    return figure


def score_table(profile: PerformanceProfile, tau_max: float, by: str = "method") -> tuple[list[str], list[list[str]]]:
    taus = [tau for tau in TAUS if tau < tau_max] + [tau_max]
    header = [by, "score", *(f"ρ({tau:g})" for tau in taus), "reached the target"]
    order = sorted(profile.methods, key=lambda method: -profile.area(method, tau_max))
    rows = []
    for method in order:
        reached = sum(1 for w in profile.workloads if not math.isinf(profile.ratio(method, w)))
        fractions = [f"{profile.fraction_within(method, tau):.2f}" for tau in taus]
        rows.append(
            [method, f"{profile.area(method, tau_max):.3f}", *fractions, f"{reached} of {len(profile.workloads)}"]
        )
    return header, rows


def times_table(
    profile: PerformanceProfile, times: Mapping[str, Mapping[str, float]]
) -> tuple[list[str], list[list[str]]]:
    """Workloads by rows, methods by columns: time and ratio, ``never`` (ran, never got there), ``not run``."""
    rows = []
    for workload in profile.workloads:
        cells = [workload]
        for method in profile.methods:
            time = times.get(method, {}).get(workload)
            if time is None:
                cells.append("not run")
            elif math.isinf(time):
                cells.append("never")
            else:
                cells.append(f"{time:.2f} s ({profile.ratio(method, workload):.2f}×)")
        rows.append(cells)
    return ["workload", *profile.methods], rows


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def _html_table(table_id: str, table: tuple[list[str], list[list[str]]]) -> str:
    header, rows = table
    head = "".join(f"<th>{escape(cell)}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table id="{table_id}"><tr>{head}</tr>{body}</table>'


def _page(workloads: Sequence[Workload], png: Path, scores: Any, times: Any, tau_max: float, by: str) -> str:
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    listed = "".join(
        f"<li>{escape(w.name)}: {escape(w.metric)} ({'lower' if w.mode == 'min' else 'higher'} is better), target the "
        f"baseline's final {escape(w.metric)} at each seed within {w.tolerance:g}; from {escape(w.source)}</li>"
        for w in workloads
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Performance profiles</title>'
        f"<style>{STYLE}</style></head><body><h1>Performance profiles over {len(workloads)} workloads</h1>"
        f'<p class="note">For each {escape(by)}, ρ(τ) is the fraction of workloads on which its time to the target '
        f"is within τ× of the best {escape(by)}'s there (Dolan &amp; Moré 2002, as AlgoPerf scores training "
        f"algorithms). Time: {CLOCK}, the median over seeds, a seed that never gets there counting as infinite; a "
        f"{escape(by)} that never reaches the target on a workload, or did not run there, counts as infinite there. "
        f"Score: the area under ρ from 1 to {tau_max:g}, over {tau_max - 1:g} (1: the fastest everywhere).</p>"
        f'<img alt="performance profiles" src="data:image/png;base64,{data}">'
        f"{_html_table('scores', scores)}<h2>Time to the target on each workload</h2>{_html_table('times', times)}"
        f"<h2>Workloads</h2><ul>{listed}</ul></body></html>"
    )
