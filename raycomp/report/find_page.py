"""A find's report as one self-contained HTML page (the sweep page's shell, style and escaping; its figure inlined).

At the top, the answer and the verdict it rests on: the chosen recipe against the baseline on Confirm's fresh
seeds, and the control arm's on the same seeds. Then each candidate's path through the stages (what Screen,
Tune, Compose and Confirm said of it, where it left and why), and every recipe tried against time with the Pareto
front. Every verdict is the find's own, read from find.json: nothing is judged again.
"""

from __future__ import annotations

from pathlib import Path

from raycomp.base import keys
from raycomp.find.state import COMPOSE, CONFIRM, SCREEN, TUNE, Line
from raycomp.find.text import algorithms_block
from raycomp.report.card import verdict_badge
from raycomp.report.find_data import FindReport, numbered, pareto_front
from raycomp.report.page import STYLE, embedded_image, written_at
from raycomp.report.text import delta_text, escape, interval_text, metric_text, seconds_text, speedup_text
from raycomp.results.verdict_text import better
from raycomp.results.verdicts import Verdict

FIND_STYLE = """
td.stage-on { background: #f3faf4; } td.stage-left { background: #fff4f2; } td.stage-recipe { background: #dafbe1; }
td.stage-none { color: #999; } table#candidate-paths td { max-width: 260px; } pre { background: #f6f8fa; padding: 8px; }
"""
STAGE_NAMES = {SCREEN: "Screen", TUNE: "Tune", COMPOSE: "Compose", CONFIRM: "Confirm"}


def render_find(report: FindReport, image: Path | None, proxy_image: Path | None = None) -> str:
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Recipe search: {escape(report.name)}</title><style>{STYLE}{FIND_STYLE}</style></head><body>",
        f"<h1>Recipe search: {escape(report.name)}</h1>",
        f'<p class="meta">From {escape(report.source)}; written {written_at()}.</p>',
        _answer(report),
        "<h2>Each candidate's path through the stages</h2>",
        _paths_note(report),
        _paths(report),
        f"<h2>{escape(report.metric)} against time: every recipe tried ({better(report.mode)})</h2>",
        embedded_image(image, f"{report.metric} against time, every recipe the find tried"),
        _figure_caption(report),
        _tried(report),
        *_proxy_section(report, proxy_image),
        "</body></html>",
    ]
    return "\n".join(part for part in parts if part)


def _proxy_section(report: FindReport, image: Path | None) -> list[str]:
    """Did the proxy hold: each recipe's speed-up on the proxy against the full run's (``find_proxy.py``)."""
    if not report.proxy_held:
        return []
    from raycomp.find.plan import proxy_words
    from raycomp.report.find_proxy import proxy_table

    return [
        f"<h2>Did the proxy hold? (the search raced on {escape(proxy_words(report.proxy, report.proxy_data))})</h2>",
        embedded_image(image, "each recipe's speed-up on the proxy against its speed-up at full length"),
        proxy_table(report),
    ]


def _answer(report: FindReport) -> str:
    css = "note" if report.recommended else "warn"
    rows = [_verdict_row("the recipe on fresh seeds", report.chosen, report.verdict)]
    if report.control is not None:
        rows.append(_verdict_row("the control arm (the baseline again), same seeds", None, report.control, True))
    tolerance = f" within ±{report.tolerance:g}" if report.tolerance is not None else ""
    rule = (
        f"Speed-ups are at equal {escape(report.metric)} ({tolerance.strip() or 'as judged'}); Δ is the recipe's "
        f"{escape(report.metric)} minus the baseline's ({better(report.mode)}). Only Confirm's seeds, which no "
        "choice saw, give these numbers: the search's own estimates of the winner overstate it (the winner's curse)."
    )
    block = ""
    if report.recommended:
        block = f"<p>Paste into your experiment:</p><pre>{escape(algorithms_block(report.recommended))}</pre>"
    return (
        f'<p class="{css}" id="answer"><b>{escape(report.headline)}</b></p>'
        f'<table id="confirmed">{"".join(rows)}</table><p class="meta">{rule}</p>{block}'
    )


def _verdict_row(label: str, recipe: str | None, verdict: Verdict | None, control: bool = False) -> str:
    if verdict is None:
        return f"<tr><th>{escape(label)}</th><td>not judged: no candidate was shown faster in the search</td></tr>"
    speedup = f"{speedup_text(verdict.speedup)} {interval_text(verdict.speedup_ci_low, verdict.speedup_ci_high)}"
    delta = f"Δ {delta_text(verdict.accuracy_delta)} "
    delta += interval_text(verdict.accuracy_delta_ci_low, verdict.accuracy_delta_ci_high, delta_text)
    seeds = ", ".join(map(str, verdict.seeds))
    what = f"<span class='args'>{escape(recipe)}</span>: " if recipe else ""
    note = f" <small>{escape(verdict.note)}</small>" if verdict.note else ""
    return (
        f"<tr><th>{escape(label)}</th><td>{what}{verdict_badge(verdict.verdict, control)} {escape(speedup)}, "
        f"{escape(delta)}, {verdict.n} paired seeds ({escape(seeds)}){note}</td></tr>"
    )


def _paths_note(report: FindReport) -> str:
    return (
        '<p class="note">A candidate races alone at its starting arguments in <b>Screen</b> and goes on when shown '
        "faster; <b>Tune</b> tries its settings by successive halving; <b>Compose</b> adds it to the recipe only when "
        "the combination is faster than its best member; <b>Confirm</b> runs the chosen recipe on fresh seeds. Green: "
        "it went on; red: it left there, for the reason given; grey: it never got there.</p>"
    )


def _paths(report: FindReport) -> str:
    header = "".join(f"<th>{name}</th>" for name in STAGE_NAMES.values())
    rows = [_path_row(name, report.paths.get(name, []), report.lines[name]) for name in report.lines]
    for name, why in report.left_out.items():
        rows.append(
            f"<tr data-candidate='{escape(name)}'><td>{escape(name)}</td>"
            f"<td class='stage-none' colspan='4'>left out before the race: {escape(why)}</td><td>left out</td></tr>"
        )
    return f'<table id="candidate-paths"><tr><th>method</th>{header}<th>how far it got</th></tr>{"".join(rows)}</table>'


def _path_row(name: str, steps: list[Line], line: Line) -> str:
    in_recipe = line.stage == CONFIRM
    cells = []
    for stage in STAGE_NAMES:
        said = [step.outcome for step in steps if step.stage == stage]
        if not said:
            cells.append("<td class='stage-none'>–</td>")
            continue
        css = "stage-recipe" if in_recipe else "stage-left" if stage == line.stage else "stage-on"
        cells.append(f"<td class='{css}' data-stage='{stage}'>{'<br>'.join(escape(text) for text in said)}</td>")
    ended = "in the recipe" if in_recipe else f"left at {STAGE_NAMES.get(line.stage, line.stage)}"
    return f"<tr data-candidate='{escape(name)}'><td>{escape(name)}</td>{''.join(cells)}<td>{ended}</td></tr>"


def _figure_caption(report: FindReport) -> str:
    where = "lower" if report.mode == "min" else "higher"
    return (
        f'<p class="meta">One point per arm at its median time and median {escape(report.metric)} over its seeds '
        f"({better(report.mode)}: better arms sit {where}); faint dots are single trials. Time is "
        f"{escape(report.clock)}, the clock the verdicts compared (<code>find.timing: {escape(report.timing)}</code>). "
        "Black: the baseline and its shorter or longer budgets; purple diamond: the control; numbers: the recipes of "
        "the table below; crosses: combinations. The dashed green line is the Pareto front of every arm but the "
        "control: no other arm is both faster and better. The ring marks the recipe Confirm ran. Medians mix the "
        "search's seeds and Confirm's: the verdicts above, on paired seeds, are the answer; the figure pictures them."
        "</p>"
    )


def _tried(report: FindReport) -> str:
    front = {arm.arm for arm in pareto_front([a for a in report.tried if a.arm != keys.CONTROL], report.mode)}
    numbers = numbered(report)
    rows = []
    for arm in report.tried:
        failed = f" <small class='error'>failed at seeds {arm.failed}</small>" if arm.failed else ""
        css = " class='reference'" if arm.is_reference else ""
        rows.append(
            f"<tr{css}><td class='num'>{numbers.get(arm.arm, '')}</td><td class='args'>{escape(arm.arm)}</td>"
            f"<td>{escape(', '.join(arm.stages))}</td><td class='num'>{len(arm.seeds)}{failed}</td>"
            f"<td class='num'>{metric_text(arm.accuracy_median)}</td>"
            f"<td class='num'>{seconds_text(arm.time_median_s)}</td>"
            f"<td>{'yes' if arm.arm in front else ''}</td></tr>"
        )
    header = (
        f"<tr><th>#</th><th>arm</th><th>trained in</th><th>seeds</th><th>median {escape(report.metric)}</th>"
        "<th>median time</th><th>on the Pareto front</th></tr>"
    )
    return f'<table id="tried">{header}{"".join(rows)}</table>'
