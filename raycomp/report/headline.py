"""The top of the report: what a reader must know before any speed-up. The control's verdict (an A/A
twin of the baseline: ``faster`` or ``slower`` means this machine's timing could not support verdicts, and a
loud warning says so; ``no evidence`` from too few seeds says nothing), the noise floor and what it lets the
sweep's seeds resolve, the best configuration (only ever a ``faster`` one), the verdicts' count."""

from __future__ import annotations

import json

from raycomp.base import keys
from raycomp.report.analysis import described, verdict_counts
from raycomp.report.card import verdict_badge
from raycomp.report.sweep import Sweep
from raycomp.report.text import escape, interval_text, percent_text, speedup_text
from raycomp.results.configs import FAILED
from raycomp.results.seed_power import POWER, resolvable_text, uninformative
from raycomp.results.verdict_text import better, few_seeds_note, why_no_best
from raycomp.results.verdicts import EQUIVALENT, NO_EVIDENCE, VERDICTS


def headline(sweep: Sweep) -> str:
    """The control's verdict, the noise floor, the best configuration and the verdicts' count, and a loud
    warning when the control shows that this machine's timing cannot be trusted."""
    verdicts = sweep.verdicts
    warning = verdicts.warning()
    alarm = (
        f'<div class="alarm" id="timing-warning"><b>Warning: do not trust the verdicts below.</b> '
        f"{escape(warning[0].upper() + warning[1:])}.</div>"
        if warning
        else ""
    )
    few_seeds = few_seeds_note(verdicts)
    if few_seeds:
        said = escape(few_seeds[0].upper() + few_seeds[1:])
        alarm += f'<p class="warn" id="few-seeds"><b>Too few seeds.</b> {said}.</p>'
    rows = [
        ("Control (A/A)", "control", verdicts.control, _control(sweep)),
        ("Noise floor", "noise-floor", verdicts.noise_floor, _noise_floor(sweep)),
        ("Best configuration", "best", verdicts.best, _best(sweep)),
        ("Verdicts", "counts", None, _counts(sweep)),
    ]
    table = "".join(
        f"<tr><th>{name}</th><td id='{key}' data-value='{escape(json.dumps(value))}'>{text}</td></tr>"
        for name, key, value, text in rows
    )
    return f'{alarm}<table id="headline">{table}</table>'


def _control(sweep: Sweep) -> str:
    config = next((c for c in sweep.verdicts.configs if c.variant == keys.CONTROL), None)
    if config is not None and config.verdict is None:
        return "not judged <small>(no baseline with a result to compare it with)</small>"
    if config is None or config.verdict is None:
        return (
            "no control arm in this sweep <small>(<code>sweep.control: true</code> trains the baseline twice and "
            "judges the twin like a method: <i>faster</i> or <i>slower</i> shows the timing cannot be trusted)"
            "</small>"
        )
    if config.failure is not None:
        return f"{verdict_badge(FAILED, control=True)} <small>{escape(config.failure)}: it tests nothing</small>"
    verdict = config.verdict
    text = verdict_badge(verdict.verdict, control=True)
    interval = interval_text(verdict.speedup_ci_low, verdict.speedup_ci_high)
    if uninformative(verdict):
        text += (
            f" <small>uninformative: from {verdict.n} seeds its interval rules nothing out, so it says nothing about "
            "this machine's timing (sweep.repeats ≥ 3)"
        )
    elif verdict.verdict == NO_EVIDENCE:
        text += " <small>as it should be: the baseline's identical twin was not told apart from it"
    elif verdict.verdict == EQUIVALENT:
        text += " <small>as it should be: the baseline's identical twin was shown within the equivalence margin"
    else:
        text += " <small>the baseline's identical twin was judged different from the baseline"
    if verdict.speedup is not None:
        text += f"; speed-up {speedup_text(verdict.speedup)} {interval}".rstrip()
    if verdict.note:
        text += f" ({escape(verdict.note)}: the control tests nothing without repeats)"
    return text + "</small>"


def _noise_floor(sweep: Sweep) -> str:
    finished = [t for t in sweep.trials if t.is_baseline and t.status == keys.TERMINATED and t.wall_s is not None]
    if sweep.verdicts.noise_floor is None:
        return f"– <small>needs two finished repeats of the baseline ({len(finished)} here; sweep.repeats)</small>"
    floor = sweep.verdicts.noise_floor
    seeds = max((c.verdict.n for c in sweep.verdicts.configs if c.verdict), default=0)
    resolves = (
        f"; at this noise {seeds} paired seeds find {resolvable_text(floor, seeds, sweep.verdicts.judging.confidence)} "
        f"{POWER:.0%} of the time (docs/report.md, power table)"
        if seeds >= 2 and floor > 0
        else ""
    )
    return (
        f"<b>{percent_text(floor)}</b> <small>the coefficient of variation of the baseline's training times over its "
        f"{len(finished)} repeats: an effect much smaller than this needs many seeds{resolves}</small>"
    )


def _best(sweep: Sweep) -> str:
    config = next((c for c in sweep.verdicts.configs if c.config_id == sweep.verdicts.best), None)
    if config is None or config.verdict is None:
        return f"none <small>({escape(why_no_best(sweep.verdicts))})</small>"
    verdict = config.verdict
    interval = interval_text(verdict.speedup_ci_low, verdict.speedup_ci_high)
    return (
        f"<b>{escape(config.config_id)}</b> <span class='args'>{escape(described(config))}</span>: "
        f"{verdict_badge(verdict.verdict)} {speedup_text(verdict.speedup)} {interval} "
        "<small>(the highest lower bound of speed-up among the configurations shown faster)</small>"
    )


def _counts(sweep: Sweep) -> str:
    counts = verdict_counts(sweep.verdicts)
    total = sum(counts.values())
    if not total:
        return "no method configuration was judged"
    listed = ", ".join(f"{counts[v]} {verdict_badge(v)}" for v in (*VERDICTS, FAILED) if v in counts)
    return (
        f"{listed} <small>of {total} method configuration{'s' if total > 1 else ''}; accuracy tolerance "
        f"{sweep.verdicts.judging.tolerance:g} in {escape(sweep.metric)} ({better(sweep.mode)})</small>"
    )
