"""The speed-up report of a sweep: time-to-accuracy curves, the Pareto front of accuracy against time, a
method-card table, and the Engine's trace summary, as PNG files and one self-contained HTML page
(docs/report.md). ``python -m raycomp.report SWEEP``; ``python -m raycomp.tune`` writes it at its end.

``summary`` is the one trial type (``TrialSummary``) of the results table, ``results.json`` and the report.
Nothing here imports matplotlib or MLflow until a figure is drawn or a run is read.
"""

from raycomp.report.analysis import pareto_front
from raycomp.report.results_files import Results, read_results, write_results
from raycomp.report.summary import TraceRow, TrialRecord, TrialSummary, best, format_table, summarize
from raycomp.report.sweep import Sweep, read_sweep
from raycomp.report.write import write_report, write_sweep_report

__all__ = [
    "Results",
    "Sweep",
    "TraceRow",
    "TrialRecord",
    "TrialSummary",
    "best",
    "format_table",
    "pareto_front",
    "read_results",
    "read_sweep",
    "summarize",
    "write_report",
    "write_results",
    "write_sweep_report",
]
