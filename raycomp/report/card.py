"""The method card: one row per configuration, as ``SweepVerdicts`` judged it (what the CLI printed and
``results.json`` holds under ``"configs"``).

Each numeric cell carries its value in ``data-value`` as JSON (an interval as ``[point, low, high]``),
so a test can hold the page to ``results.json``.
"""

from __future__ import annotations

import json
from typing import Any

from raycomp.base import keys
from raycomp.report.analysis import REFERENCES, described
from raycomp.report.sweep import Sweep
from raycomp.report.text import delta_text, escape, interval_text, metric_text, seconds_text, speedup_text
from raycomp.results.configs import FAILED, ConfigSummary
from raycomp.results.seed_power import MIN_INFORMATIVE_SEEDS, uninformative
from raycomp.results.verdict_text import better
from raycomp.results.verdicts import EQUIVALENT, FASTER, LESS_ACCURATE, NO_EVIDENCE, SLOWER, TRADE_OFF, Verdict

VERDICT_CLASS = {
    FASTER: "faster",
    SLOWER: "slower",
    NO_EVIDENCE: "none",
    LESS_ACCURATE: "less",
    EQUIVALENT: "same",
    TRADE_OFF: "trade",
    FAILED: "failed",  # a state, not a verdict: the configuration's trials failed
}
VARIANT_NOTE = {
    keys.BASELINE: "reference",
    keys.FRONTIER: "reference (frontier)",
}


def card(sweep: Sweep) -> str:
    """The table: reference rows (the baseline, its frontier budgets), the control, the methods."""
    metric, level = escape(sweep.metric), f"{sweep.verdicts.judging.confidence:.0%}"
    header = "".join(
        f"<th>{name}</th>"
        for name in (
            "config",
            "arguments",
            "repeats",
            f"{metric}<small>median</small>",
            "time<small>median</small>",
            f"speed-up vs the frontier<small>[{level} interval]</small>",
            f"speed-up to the full baseline's {metric}",
            f"Δ {metric} vs baseline<small>[{level} interval]; {better(sweep.mode)}</small>",
            "verdict",
        )
    )
    rows = "".join(_row(config, sweep) for config in sweep.verdicts.configs)
    return f'<table id="method-card"><tr>{header}</tr>{rows}</table>'


def _row(config: ConfigSummary, sweep: Sweep) -> str:
    verdict = config.verdict
    badges = ""
    if config.config_id == sweep.verdicts.best:
        badges += '<span class="badge best">best</span>'
    if config.variant == keys.CONTROL:
        badges += '<span class="badge control">A/A</span>'
    if config.diverged:
        seeds = ", ".join(map(str, config.diverged))
        badges += f'<span class="badge diverged" title="its loss diverged at seed {seeds}">diverged</span>'
    if config.failed and config.failure is None:  # judged on the seeds that did not fail
        seeds = ", ".join(map(str, config.failed))
        badges += f'<span class="badge failed" title="its trial failed at seed {seeds}">failed at seed {seeds}</span>'
    cells = [
        f"<td>{escape(config.config_id)}{badges}</td>",
        f'<td class="args">{escape(described(config))}</td>',
        _cell("seeds", len(config.seeds), _repeats(config)),
        _cell("accuracy_median", config.accuracy_median, metric_text(config.accuracy_median)),
        _cell("time_median_s", config.time_median_s, seconds_text(config.time_median_s)),
    ]
    if config.failure is not None:
        cells.append('<td colspan="3" class="reference">its trials failed: nothing to measure</td>')
        cells.append(_failed(config.failure))
    elif verdict is None:
        note = VARIANT_NOTE.get(config.variant, "no baseline to compare with")
        cells.append(f'<td colspan="4" class="reference">{escape(note)}</td>')
    else:
        cells += [
            _speedup(verdict),
            _to_full(verdict),
            _delta(verdict),
            _verdict(verdict, config.variant, config.stopped),
        ]
    css = "reference" if config.variant in REFERENCES else config.variant
    return f'<tr class="{css}" data-config="{escape(config.config_id)}">{"".join(cells)}</tr>'


def _repeats(config: ConfigSummary) -> str:
    paired = config.verdict.n if config.verdict else None
    if paired is None or paired == len(config.seeds):
        return str(len(config.seeds))
    return f"{len(config.seeds)}<small>{paired} paired</small>"


def _speedup(verdict: Verdict) -> str:
    text = f"<b>{speedup_text(verdict.speedup)}</b>"
    interval = interval_text(verdict.speedup_ci_low, verdict.speedup_ci_high)
    if interval:
        text += f"<small>{interval}</small>"
    if verdict.beyond_frontier:
        text += "<small>more accurate than every frontier budget: the speed-up is a lower bound</small>"
    if verdict.below_frontier:
        text += "<small>less accurate than every frontier budget: the speed-up is an upper bound</small>"
    if uninformative(verdict):
        text += f'<small class="uninformative">uninformative: from {verdict.n} seeds</small>'
    value = [verdict.speedup, verdict.speedup_ci_low, verdict.speedup_ci_high]
    return _cell("speedup", value, text)


def _to_full(verdict: Verdict) -> str:
    reached = verdict.full_baseline_reached
    if verdict.n and not reached:
        text = '<span class="never">never</span>'
    else:
        text = speedup_text(verdict.speedup_to_full_baseline)
        if reached < verdict.n:
            text += f"<small>{reached} of {verdict.n} seeds reached it</small>"
    return _cell("speedup_to_full_baseline", verdict.speedup_to_full_baseline, text)


def _delta(verdict: Verdict) -> str:
    text = delta_text(verdict.accuracy_delta)
    interval = interval_text(verdict.accuracy_delta_ci_low, verdict.accuracy_delta_ci_high, delta_text)
    if interval:
        text += f"<small>{interval}</small>"
    if uninformative(verdict):
        text += f'<small class="uninformative">uninformative: from {verdict.n} seeds</small>'
    value = [verdict.accuracy_delta, verdict.accuracy_delta_ci_low, verdict.accuracy_delta_ci_high]
    return _cell("accuracy_delta", value, text)


def _verdict(verdict: Verdict, variant: str, stopped: str | None = None) -> str:
    text = verdict_badge(verdict.verdict, control=variant == keys.CONTROL)
    if verdict.note:
        text += f"<small>{escape(verdict.note)}</small>"
    if uninformative(verdict):
        text += (
            f'<small class="uninformative">uninformative: {verdict.n} seeds rule nothing out '
            f"(sweep.repeats ≥ {MIN_INFORMATIVE_SEEDS})</small>"
        )
    if stopped:  # an adaptive sweep: how many seeds it got and why no more
        text += f"<small>{escape(stopped)}</small>"
    return f"<td data-key='verdict' data-value='{escape(json.dumps(verdict.verdict))}'>{text}</td>"


def _failed(error: str) -> str:
    """A failed configuration's state and its error's first line, where a verdict would be."""
    text = f"{verdict_badge(FAILED)}<small class='error'>{escape(error)}</small>"
    return f"<td data-key='verdict' data-value='{escape(json.dumps(FAILED))}'>{text}</td>"


def verdict_badge(verdict: str, control: bool = False) -> str:
    """A verdict (or ``failed``) in its color; the control's in the alarm's when it is ``faster``, ``slower`` or
    the like (for the A/A twin of the baseline, ``faster`` is no good news)."""
    alarm = control and verdict not in (NO_EVIDENCE, EQUIVALENT, FAILED)
    css = "alarm" if alarm else VERDICT_CLASS.get(verdict, "none")
    return f'<span class="verdict {css}">{escape(verdict)}</span>'


def _cell(key: str, value: Any, text: str) -> str:
    return f"<td class='num' data-key='{key}' data-value='{escape(json.dumps(value))}'>{text}</td>"
