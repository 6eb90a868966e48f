"""The report as one self-contained HTML page: the figures inlined as base64 PNG data URIs, no outside files.

At the top, what a reader must know before any speed-up: the control's verdict, the machine's noise floor,
the best configuration. Then the method card (``card.py``: one row per configuration), the figures, every
trial in a collapsed table, and the Engine's trace summary. Every number is the sweep's
``SweepVerdicts`` or ``TrialSummary`` and is carried in its cell's ``data-value`` as JSON too.
"""

from __future__ import annotations

import base64
import datetime
from pathlib import Path

from raycomp.base import keys
from raycomp.report.analysis import has_traces, trace_totals
from raycomp.report.card import card
from raycomp.report.headline import headline
from raycomp.report.sweep import Sweep
from raycomp.report.text import escape
from raycomp.report.trial_table import trial_table
from raycomp.results.verdict_text import better, tolerance_text, worse_rule

_LEFT_OUT = {  # sweep.timing -> what its times leave out
    "steps": "evaluation and checkpoints left out",
    "cpu": "evaluation and checkpoints left out",
    "wall": "the whole fit, evaluation and checkpoints included",
}
STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1180px;
       color: #1d1d1f; padding: 0 16px; }
h1 { font-size: 24px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
.meta { color: #555; } .note { background: #f6f8fa; border-left: 4px solid #8a8; padding: 8px 12px; }
.warn { background: #fff6e5; border-left: 4px solid #e0a000; padding: 8px 12px; }
.alarm { background: #fdecea; border: 2px solid #b42318; color: #7a1209; padding: 10px 14px; font-size: 15px; }
img { max-width: 100%; display: block; margin: 8px 0; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border-bottom: 1px solid #e4e4e4; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
small { color: #555; } td.reference { color: #777; font-style: italic; }
tr.reference { background: #fffbe0; } tr.baseline { background: #fffbe0; font-weight: 600; }
tr.control { background: #f3effa; }
table#headline th { background: none; width: 170px; } table#headline td { font-size: 14px; }
.badge { font-size: 11px; padding: 1px 6px; border-radius: 8px; background: #222; color: #fff; margin-left: 4px; }
.best { background: #1a7f37; } .badge.control { background: #6f42c1; } .badge.diverged { background: #cf222e; }
.verdict { font-weight: 600; padding: 1px 7px; border-radius: 8px; white-space: nowrap; }
.verdict.faster { background: #dafbe1; color: #1a7f37; } .verdict.slower { background: #ffebe9; color: #b42318; }
.verdict.none { background: #eaeef2; color: #444; } .verdict.less { background: #fff1d6; color: #9a5b00; }
.verdict.alarm { background: #b42318; color: #fff; }
.verdict.same { background: #ddf4ff; color: #0969da; } .verdict.trade { background: #fbefff; color: #8250df; }
.verdict.failed { background: #cf222e; color: #fff; } .badge.failed { background: #cf222e; }
small.uninformative { font-weight: 600; } small.error { color: #b42318; }
.never { color: #b42318; } .args { font-family: ui-monospace, monospace; font-size: 12px; }
table#method-card td:first-child { white-space: nowrap; } table#method-card td.args { min-width: 130px; }
#method-card small { display: block; white-space: normal; max-width: 190px; font-weight: normal; }
#method-card td.num small { margin-left: auto; }
details summary { cursor: pointer; font-weight: 600; margin: 8px 0; }
"""


def render(
    sweep: Sweep, images: dict[str, Path | None], shown: Sweep | None = None, not_shown: str | None = None
) -> str:
    """The page: the headline and counts from the whole ``sweep``; the card, figures' captions and trial table
    from ``shown`` (``at_scale.shown_part``: a large sweep's first configurations), ``not_shown`` saying the rest."""
    whole, sweep = sweep, shown or sweep
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Speed-up report: {escape(sweep.name)}</title><style>{STYLE}</style></head><body>",
        f"<h1>Speed-up report: {escape(whole.name)}</h1>",
        f'<p class="meta">From {escape(sweep.source)}; written {written_at()}.</p>',
        headline(whole),
        _measured(whole),
        "<h2>Method card: one row per configuration</h2>",
        _how_to_read(sweep),
        f'<p class="warn" id="not-shown">{escape(not_shown)}</p>' if not_shown else "",
        card(sweep),
        f"<h2>{escape(sweep.metric)} against time ({better(sweep.mode)})</h2>",
        embedded_image(images.get("pareto"), f"{sweep.metric} against time, one point per configuration"),
        _pareto_caption(sweep),
        f"<h2>Time to {escape(sweep.metric)}</h2>",
        embedded_image(images.get("curves"), f"time to {sweep.metric}"),
        '<p class="meta">Every trial: black, the baseline (one line per seed); grey, its shorter budgets; '
        "purple dash-dot, the control; dashed, stopped by the scheduler.</p>",
        "<h2>Every trial</h2>",
        trial_table(sweep),
        "<h2>Where the time goes: the Engine's trace summary</h2>",
        _traces(whole, images.get("traces")),
        "</body></html>",
    ]
    return "\n".join(part for part in parts if part)


def _measured(sweep: Sweep) -> str:
    trials = sweep.trials
    statuses: dict[str, int] = {}
    variants: dict[str, int] = {}
    for trial in trials:
        statuses[trial.status] = statuses.get(trial.status, 0) + 1
        variants[trial.variant] = variants.get(trial.variant, 0) + 1
    machines = sweep.machines
    if not machines:
        hardware = '<p class="warn">Hardware: not recorded by these trials.</p>'
    elif len(machines) == 1:
        hardware = f"<p><b>Measured on:</b> {escape(machines[0])}.</p>"
    else:
        listed = "".join(f"<li>{escape(m)}</li>" for m in machines)
        hardware = (
            f'<div class="warn"><b>Measured on {len(machines)} kinds of machine</b>, so speed-ups compare '
            f"different hardware:<ul>{listed}</ul></div>"
        )
    arms = ", ".join(f"{variants[v]} {v}" for v in keys.VARIANTS if v in variants)
    status_text = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
    seeds = sorted({len(c.seeds) for c in sweep.verdicts.configs})
    if not seeds:
        repeat_text = "no configuration"
    elif seeds == [1]:
        repeat_text = "each configuration ran once: no intervals, so no verdict but <i>no evidence</i>"
    else:
        runs = str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]}"
        repeat_text = f"each configuration ran with {runs} seeds, paired by seed across configurations"
    return (
        f"{hardware}\n<p><b>Trials:</b> {len(trials)} ({arms}; {status_text}) in "
        f"{len(sweep.verdicts.configs)} configurations. <b>Repeats:</b> {repeat_text}.</p>"
    )


def _how_to_read(sweep: Sweep) -> str:
    metric, judging = escape(sweep.metric), sweep.verdicts.judging
    level, points = f"{judging.confidence:.0%}", judging.bounds == (0.0, 1.0)
    tolerance = tolerance_text(judging.tolerance, points)
    return (
        f'<p class="note"><b>{metric}: {better(sweep.mode)}.</b> <b>Speed-up vs the frontier</b>: at each seed, the '
        "time the baseline frontier (the baseline trained with complete schedules at each budget, its "
        f"{metric} against budget fitted monotone over every seed) needs to reach the configuration's final "
        f"{metric}, ÷ the configuration's own training time; a {metric} within the tolerance of the baseline's "
        f"counts as equal, so the reference is then the baseline's own time. The geometric mean over the seeds, "
        f"with a {level} paired t interval on the log ratios (per look in an adaptive sweep). <b>Speed-up to the "
        f"full baseline's {metric}</b>: the full baseline's time ÷ the time the configuration first reached its "
        f"final {metric} (the usual, not budget-matched, number). <b>Verdict</b> (both halves shown): <i>faster</i> "
        f"when the speed-up interval lies above 1× with its low end priced at the Δ interval's worse end, and that "
        f"worse end lies within the tolerance ({tolerance}) of the baseline; <i>slower</i> when it lies below 1× "
        f"with its high end priced at the Δ's better end; <i>less accurate</i> (worse in {metric}) when the Δ "
        f"interval lies {worse_rule(sweep.mode, judging.tolerance, points)}; <i>equivalent</i> when the speed-up "
        f"interval lies within ±{judging.equivalence:.0%} and the Δ interval within ±{tolerance}; <i>trade-off</i>: "
        "slower but shown better than every budget; else <i>no evidence</i> (its note says which half is missing), "
        "<i>uninformative</i> when its intervals come from fewer than 3 seeds. "
        "<i>failed</i> is no verdict: the configuration's trials failed, and the error's first line says why. "
        f"Times are the {judging.clock} ({_LEFT_OUT[judging.timing]}, <code>sweep.timing: {judging.timing}</code>), "
        "measured in this sweep on this machine; trials that ran side by side shared it.</p>"
    )


def _pareto_caption(sweep: Sweep) -> str:
    judging = sweep.verdicts.judging
    level = f"{judging.confidence:.0%}"
    where = "lower" if sweep.mode == "min" else "higher"
    return (
        f'<p class="meta">One point per configuration at its median time ({judging.clock}, the verdicts\' clock) '
        f"and median {escape(sweep.metric)} over its seeds ({better(sweep.mode)}: better configurations sit "
        f"{where}); faint dots are its single trials, on the same clock. Horizontal bars: the speed-up's "
        f"{level} interval drawn as the times it implies (median time × speed-up ÷ each end of the interval), so a bar "
        "wholly left of the frontier line at the point's height reads <i>faster</i>. Vertical bars: the Δ "
        "interval added to the baseline's median. The black line is the baseline frontier (the baseline at each "
        "budget, median over seeds). The verdicts themselves come from the paired seeds in the table above; the "
        "bars picture them, they are not a second test.</p>"
    )


def _traces(sweep: Sweep, image: Path | None) -> str:
    if not has_traces(sweep):
        note = sweep.traces_note or "the trace summary is logged to MLflow only"
        return f'<p class="warn">No trace summary: {escape(note)}.</p>'
    totals = trace_totals(sweep)
    if not totals:
        return "<p>No algorithm ran in any trial: nothing to trace.</p>"
    rows = "".join(
        f"<tr><td>{escape(t.algorithm)}</td><td>{escape(t.event)}</td><td class='num'>{t.trials}</td>"
        f"<td class='num'>{t.count}</td><td class='num'>{t.total_s:.3f} s</td>"
        f"<td class='num'>{1000 * t.total_s / t.count if t.count else 0:.2f} ms</td>"
        f"<td class='num'>{f'{t.share:.1%}' if t.share is not None else '–'}</td></tr>"
        for t in totals
    )
    return (
        embedded_image(image, "trace summary")
        + '<table id="traces"><tr><th>algorithm</th><th>event</th><th>trials</th><th>calls</th><th>total</th>'
        + f"<th>per call</th><th>share of those trials' training</th></tr>{rows}</table>"
    )


def embedded_image(path: Path | None, alt: str) -> str:
    """The PNG at ``path`` inside the page (a report is one file to attach or mail); nothing when there is none."""
    if path is None:
        return ""
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def written_at() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
