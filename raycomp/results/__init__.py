"""A sweep's numbers, no figures: ``summary`` the one trial type (``TrialSummary``) of the results table,
``results.json``, MLflow and the report; ``configs.summarize_configs`` the one computation of the verdicts
(``verdicts``: the statistics, pure); ``results_files`` results.csv and results.json.

Below ``tracking`` and ``report``, which read and draw these; it imports neither.
"""

from raycomp.results.configs import SweepVerdicts, summarize_configs
from raycomp.results.results_files import Results, read_results, write_results
from raycomp.results.summary import TraceRow, TrialRecord, TrialSummary, best, format_table, summarize

__all__ = [
    "Results",
    "SweepVerdicts",
    "TraceRow",
    "TrialRecord",
    "TrialSummary",
    "best",
    "format_table",
    "read_results",
    "summarize",
    "summarize_configs",
    "write_results",
]
