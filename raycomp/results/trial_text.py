"""A sweep's trials as the CLI prints them: one line per trial, the swept values as columns, then the errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from raycomp.results.configs import SweepVerdicts
from raycomp.results.ranking import MAX_SHOWN, shown_configs
from raycomp.results.summary import TrialSummary


def format_trials(
    summaries: Sequence[TrialSummary], verdicts: SweepVerdicts, metric: str, limit: int = MAX_SHOWN
) -> str:
    """The table of the trials of the configurations shown in full (``ranking.shown_configs``), then a line counting
    the others' trials: at 10,000 trials the CLI printed a line each."""
    shown, rest = shown_configs(verdicts.configs, limit)
    kept = {config.config_id for config in shown}
    table = format_table([trial for trial in summaries if trial.config_id in kept], metric)
    if not rest:
        return table
    return f"{table}\n... {sum(len(config.seeds) for config in rest)} more trials, of the configurations ranked below"


def format_table(summaries: Sequence[TrialSummary], metric: str) -> str:
    """A plain-text table: one line per trial, the swept values as columns."""
    rows = [s.row(metric) for s in summaries]
    columns = list(dict.fromkeys(key for row in rows for key in row if key != "error"))
    cells = [[_cell(row.get(col), col) for col in columns] for row in rows]
    widths = [max(len(col), *(len(r[i]) for r in cells)) for i, col in enumerate(columns)]
    lines = ["  ".join(col.ljust(w) for col, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in cells]
    errors = [f"  {s.trial_id}: {s.error}" for s in summaries if s.error]
    return "\n".join(lines + (["failed trials:", *errors] if errors else []))


def _cell(value: Any, column: str) -> str:
    if column == "diverged":
        return "DIVERGED" if value else "-"
    if value is None:
        return "never" if column in ("time_to_baseline_s", "speedup") else "-"
    if column == "speedup":
        return f"{value:.2f}x"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
