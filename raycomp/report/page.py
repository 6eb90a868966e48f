"""The report as one self-contained HTML page: the figures inlined as base64 PNG data URIs, no outside files.

Every number in the method-card table is the sweep's ``TrialSummary`` (as ``results.json`` holds it)
and carried in the cell's ``data-value`` as JSON too, so a test can hold the page to the file.
"""

from __future__ import annotations

import base64
import datetime
import html
import json
from pathlib import Path
from typing import Any

from raycomp import keys
from raycomp.report.analysis import format_args, front_trials, has_traces, repeats, trace_totals
from raycomp.report.summary import TrialSummary
from raycomp.report.sweep import Sweep

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1180px;
       color: #1d1d1f; padding: 0 16px; }
h1 { font-size: 24px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
.meta { color: #555; } .note { background: #f6f8fa; border-left: 4px solid #8a8; padding: 8px 12px; }
.warn { background: #fff6e5; border-left: 4px solid #e0a000; padding: 8px 12px; }
img { max-width: 100%; display: block; margin: 8px 0; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border-bottom: 1px solid #e4e4e4; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.baseline { background: #fffbe0; font-weight: 600; } .badge { font-size: 11px; padding: 1px 6px;
  border-radius: 8px; background: #222; color: #fff; margin-left: 4px; } .best { background: #1a7f37; }
.never { color: #b42318; } .args { font-family: ui-monospace, monospace; font-size: 12px; }
"""


def render(sweep: Sweep, images: dict[str, Path | None]) -> str:
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Speed-up report: {_e(sweep.name)}</title><style>{STYLE}</style></head><body>",
        f"<h1>Speed-up report: {_e(sweep.name)}</h1>",
        f'<p class="meta">From {_e(sweep.source)}; written {_now()}.</p>',
        _measured(sweep),
        "<h2>Method card</h2>",
        _card(sweep),
        "<h2>Time to accuracy</h2>",
        _image(images.get("curves"), "time to accuracy"),
        "<h2>Pareto front: accuracy against time</h2>",
        _image(images.get("pareto"), "Pareto front"),
        _front(sweep),
        _spread(sweep),
        "<h2>Where the time goes: the Engine's trace summary</h2>",
        _traces(sweep, images.get("traces")),
        "</body></html>",
    ]
    return "\n".join(part for part in parts if part)


def _measured(sweep: Sweep) -> str:
    trials = sweep.trials
    statuses: dict[str, int] = {}
    for trial in trials:
        statuses[trial.status] = statuses.get(trial.status, 0) + 1
    methods = sum(1 for t in trials if not t.is_baseline)
    status_text = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
    machines = sweep.machines
    if not machines:
        hardware = '<p class="warn">Hardware: not recorded by these trials.</p>'
    elif len(machines) == 1:
        hardware = f"<p><b>Measured on:</b> {_e(machines[0])}.</p>"
    else:
        listed = "".join(f"<li>{_e(m)}</li>" for m in machines)
        hardware = (
            f'<div class="warn"><b>Measured on {len(machines)} kinds of machine</b>, so speed-ups compare '
            f"different hardware:<ul>{listed}</ul></div>"
        )
    groups = repeats(sweep)
    counts = sorted({g.n for g in groups})
    if not groups:
        repeat_text = "no trial finished with a result"
    elif counts == [1]:
        repeat_text = f"each of the {len(groups)} configs ran once: one measurement per config, no spread to show"
    else:
        repeated = [g for g in groups if g.n > 1]
        low, high = min(g.n for g in repeated), max(g.n for g in repeated)
        times = f"{low}" if low == high else f"{low}–{high}"
        repeat_text = (
            f"{len(repeated)} of {len(groups)} configs ran {times} times (same arguments, seeds apart); "
            "their min–max spread is shown below"
        )
    return "\n".join(
        [
            hardware,
            f"<p><b>Trials:</b> {len(trials)} ({len(trials) - methods} baseline, {methods} method; {status_text}). "
            f"<b>Repeats:</b> {repeat_text}.</p>",
            '<p class="note">Speed-up = the baseline\'s training wall time ÷ the time the trial took to first reach '
            f"the baseline's final {_e(sweep.metric)} (evaluated once per report), both measured in this sweep on "
            "this machine; <i>never</i> when it did not reach it. Times are training wall time from the start of "
            "fit, without the trial's start-up. Trials that ran side by side shared the machine.</p>",
        ]
    )


def _card(sweep: Sweep) -> str:
    baseline = sweep.baseline
    if baseline is None:
        head = '<p class="warn">No baseline trial with a result: no speed-ups.</p>'
    else:
        measured = f"{metric_text(baseline.final_metric)} in {seconds_text(baseline.wall_s)}"
        head = f"<p><b>Baseline:</b> {_e(sweep.metric)} {measured} (trial {_e(baseline.trial_id)}).</p>"
    header = (
        f"<tr><th>trial</th><th>status</th><th>{_e(sweep.metric)}</th><th>time</th>"
        f"<th>time to baseline's {_e(sweep.metric)}</th><th>speed-up</th><th>arguments</th></tr>"
    )
    rows = [_card_row(trial, sweep) for trial in sweep.trials]
    return head + f'<table id="method-card">{header}{"".join(rows)}</table>'


def _card_row(trial: TrialSummary, sweep: Sweep) -> str:
    badges = ""
    if trial.is_baseline:
        badges += '<span class="badge">baseline</span>'
    if trial.trial_id == sweep.best_id:
        badges += '<span class="badge best">best</span>'
    if trial.speedup is not None:
        speedup = speedup_text(trial.speedup)
    elif sweep.baseline is not None and trial.has_result:
        speedup = '<span class="never">never</span>'
    else:
        speedup = "–"
    reached = trial.time_to_baseline_s
    arguments = _e(format_args(trial.overrides)) if not trial.is_baseline else "without the swept algorithms"
    if trial.error:
        arguments += f'<br><span class="never">{_e(trial.error)}</span>'
    cells = [
        f"<td>{_e(trial.trial_id)}{badges}</td>",
        f"<td>{_e(trial.status)}</td>",
        _cell(trial, "final_metric", metric_text(trial.final_metric)),
        _cell(trial, "wall_s", seconds_text(trial.wall_s)),
        _cell(trial, "time_to_baseline_s", seconds_text(reached) if reached is not None else _never(trial, sweep)),
        _cell(trial, "speedup", speedup),
        f'<td class="args">{arguments}</td>',
    ]
    css = ' class="baseline"' if trial.is_baseline else ""
    return f'<tr{css} data-trial="{_e(trial.trial_id)}">{"".join(cells)}</tr>'


def _front(sweep: Sweep) -> str:
    front = front_trials(sweep)
    if not front:
        return ""
    rows = "".join(
        f"<tr><td>{_e(t.trial_id)}</td><td class='num'>{metric_text(t.final_metric)}</td>"
        f"<td class='num'>{seconds_text(t.wall_s)}</td><td class='args'>"
        f"{_e(format_args(t.overrides)) if not t.is_baseline else 'baseline'}</td></tr>"
        for t in front
    )
    return (
        "<p>On the front (no trial that trained to its end was both faster and at least as accurate):</p>"
        f'<table id="pareto-front"><tr><th>trial</th><th>{_e(sweep.metric)}</th><th>time</th>'
        f"<th>arguments</th></tr>{rows}</table>"
    )


def _spread(sweep: Sweep) -> str:
    groups = [g for g in repeats(sweep) if g.n > 1]
    if not groups:
        return ""
    rows = []
    for group in groups:
        speedups = group.range("speedup")
        never = f" ({group.never} never)" if group.never else ""
        speedups_text = f"{speedup_text(speedups[0])}–{speedup_text(speedups[1])}" if speedups else "never"
        metric, wall = group.range("final_metric"), group.range("wall_s")
        arguments = keys.BASELINE if group.variant == keys.BASELINE else format_args(group.overrides)
        rows.append(
            f"<tr><td class='args'>{_e(arguments)}</td><td class='num'>{group.n}</td>"
            f"<td class='num'>{metric_text(metric[0])}–{metric_text(metric[1])}</td>"
            f"<td class='num'>{seconds_text(wall[0])}–{seconds_text(wall[1])}</td>"
            f"<td class='num'>{speedups_text}{never}</td></tr>"
        )
    return (
        "<h2>Spread over repeats</h2><p>Configs that ran more than once (seeds apart): min–max of each.</p>"
        f'<table id="spread"><tr><th>config</th><th>runs</th><th>{_e(sweep.metric)}</th><th>time</th>'
        f"<th>speed-up</th></tr>{''.join(rows)}</table>"
    )


def _traces(sweep: Sweep, image: Path | None) -> str:
    if not has_traces(sweep):
        note = sweep.traces_note or "the trace summary is logged to MLflow only"
        return f'<p class="warn">No trace summary: {_e(note)}.</p>'
    totals = trace_totals(sweep)
    if not totals:
        return "<p>No algorithm ran in any trial: nothing to trace.</p>"
    rows = "".join(
        f"<tr><td>{_e(t.algorithm)}</td><td>{_e(t.event)}</td><td class='num'>{t.trials}</td>"
        f"<td class='num'>{t.count}</td><td class='num'>{t.total_s:.3f} s</td>"
        f"<td class='num'>{1000 * t.total_s / t.count if t.count else 0:.2f} ms</td>"
        f"<td class='num'>{f'{t.share:.1%}' if t.share is not None else '–'}</td></tr>"
        for t in totals
    )
    return (
        _image(image, "trace summary")
        + '<table id="traces"><tr><th>algorithm</th><th>event</th><th>trials</th><th>calls</th><th>total</th>'
        + f"<th>per call</th><th>share of those trials' training</th></tr>{rows}</table>"
    )


def _image(path: Path | None, alt: str) -> str:
    if path is None:
        return ""
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{data}">'


def _cell(trial: TrialSummary, key: str, text: str) -> str:
    value: Any = getattr(trial, key)
    return f"<td class='num' data-key='{key}' data-value='{_e(json.dumps(value))}'>{text}</td>"


def _never(trial: TrialSummary, sweep: Sweep) -> str:
    return '<span class="never">never</span>' if sweep.baseline is not None and trial.has_result else "–"


def speedup_text(value: float) -> str:
    return f"{value:.2f}×"


def metric_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def seconds_text(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.2f} s" if value < 100 else f"{value:.0f} s"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)
