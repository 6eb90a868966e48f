"""The speed-up report of a sweep: at the top the control's verdict and the noise floor, then one row per
configuration with its speed-up against the baseline frontier, intervals and verdict (``configs.py``,
``verdicts.py``), accuracy against time with those intervals, time-to-accuracy curves, every trial, and
the Engine's trace summary, as PNG files and one self-contained HTML page (docs/report.md).
``python -m raycomp.report SWEEP``; ``python -m raycomp.tune`` writes it at its end.

``summary`` is the one trial type (``TrialSummary``) of the results table, ``results.json`` and the report;
``configs.summarize_configs`` the one computation of the verdicts. Nothing here imports matplotlib or
MLflow until a figure is drawn or a run is read.
"""

from raycomp.report.configs import SweepVerdicts, summarize_configs
from raycomp.report.results_files import Results, read_results, write_results
from raycomp.report.summary import TraceRow, TrialRecord, TrialSummary, best, format_table, summarize
from raycomp.report.sweep import Sweep, read_sweep
from raycomp.report.write import write_report, write_sweep_report

__all__ = [
    "Results",
    "Sweep",
    "SweepVerdicts",
    "TraceRow",
    "TrialRecord",
    "TrialSummary",
    "best",
    "format_table",
    "read_results",
    "read_sweep",
    "summarize",
    "summarize_configs",
    "write_report",
    "write_results",
    "write_sweep_report",
]
