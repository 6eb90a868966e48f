"""The speed-up report of a sweep: time-to-accuracy curves, the Pareto front of accuracy against time, a
method-card table, and the Engine's trace summary, as PNG files and one self-contained HTML page
(docs/report.md). ``python -m raycomp.report SWEEP``; ``python -m raycomp.tune`` writes it at its end.

Nothing here imports matplotlib or MLflow until a figure is drawn or a run is read.
"""

from raycomp.report.analysis import pareto_front
from raycomp.report.build import report_sweep_folder, write_report
from raycomp.report.data import Sweep, SweepNotFound, Trial, load_document

__all__ = ["Sweep", "SweepNotFound", "Trial", "load_document", "pareto_front", "report_sweep_folder", "write_report"]
