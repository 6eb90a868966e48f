"""The speed-up report of a sweep: at the top the control's verdict and the noise floor, then one row per
configuration with its speed-up against the baseline frontier, intervals and verdict (computed in
``raycomp.results``), accuracy against time with those intervals, time-to-accuracy curves, every trial, and
the Engine's trace summary, as PNG files and one self-contained HTML page (docs/report.md).
``python -m raycomp.report SWEEP`` (``raycomp.cli.report``); ``python -m raycomp.tune`` writes it at its end.

Nothing here imports matplotlib or MLflow until a figure is drawn or a run is read.
"""
