"""Every trial, one row each, in a collapsed table under the method card: its configuration and seed, its
status, its own numbers (metric, wall and CPU time, the host's load) and its speed-up against the full
baseline of the same seed. One run has no interval; the card's verdicts are the numbers to trust."""

from __future__ import annotations

import json
from typing import Any

from raycomp.base import keys
from raycomp.report.analysis import format_args
from raycomp.report.sweep import Sweep
from raycomp.report.text import escape, metric_text, seconds_text, speedup_text
from raycomp.results.summary import TrialSummary


def trial_table(sweep: Sweep) -> str:
    metric = escape(sweep.metric)
    header = "".join(
        f"<th>{name}</th>"
        for name in (
            "trial",
            "config",
            "seed",
            "status",
            metric,
            "time",
            "CPU time",
            "host load",
            f"time to its seed's baseline {metric}",
            "speed-up",
            "arguments",
        )
    )
    rows = "".join(_trial_row(trial, sweep) for trial in sweep.trials)
    return (
        f"<details id='trial-details'><summary>{len(sweep.trials)} trials, one row each (click to open)</summary>"
        '<p class="meta">Per trial, the speed-up is the full baseline of the same seed: its training time ÷ the time '
        f"this trial first reached that baseline's final {metric}; <i>never</i> when it did not. One run each, "
        "so no interval: the method card's verdicts are the numbers to trust.</p>"
        f'<table id="trials"><tr>{header}</tr>{rows}</table></details>'
    )


def _trial_row(trial: TrialSummary, sweep: Sweep) -> str:
    has_baseline = any(t.is_baseline and t.has_result for t in sweep.trials)
    never = '<span class="never">never</span>' if has_baseline and trial.has_result else "–"
    reached = trial.time_to_baseline_s
    arguments = escape(_arguments(trial))
    if trial.error:
        arguments += f'<br><span class="never">{escape(trial.error)}</span>'
    load = "–" if trial.host_load is None else f"{trial.host_load:.2f}"
    cells = [
        f"<td>{escape(trial.trial_id)}</td>",
        f"<td>{escape(trial.config_id or '–')}</td>",
        f"<td class='num'>{'–' if trial.repeat is None else trial.repeat}</td>",
        f"<td>{escape(trial.status)}{' <b class=never>DIVERGED</b>' if trial.diverged else ''}</td>",
        _cell(trial, "final_metric", metric_text(trial.final_metric)),
        _cell(trial, "wall_s", seconds_text(trial.wall_s)),
        _cell(trial, "cpu_s", seconds_text(trial.cpu_s)),
        _cell(trial, "host_load", load),
        _cell(trial, "time_to_baseline_s", seconds_text(reached) if reached is not None else never),
        _cell(trial, "speedup", speedup_text(trial.speedup) if trial.speedup is not None else never),
        f'<td class="args">{arguments}</td>',
    ]
    css = f' class="{trial.variant}"' if trial.variant != keys.METHOD else ""
    return f'<tr{css} data-trial="{escape(trial.trial_id)}">{"".join(cells)}</tr>'


def _arguments(trial: TrialSummary) -> str:
    if trial.variant == keys.METHOD:
        return format_args(trial.overrides)
    if trial.variant == keys.FRONTIER and trial.budget:
        return f"baseline at {trial.budget:.0%} of max_duration"
    return "identical to the baseline" if trial.variant == keys.CONTROL else "without the swept algorithms"


def _cell(trial: TrialSummary, key: str, text: str) -> str:
    value: Any = getattr(trial, key)
    return f"<td class='num' data-key='{key}' data-value='{escape(json.dumps(value))}'>{text}</td>"
