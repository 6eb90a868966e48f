"""Writes a sweep's report (PNG figures and ``report.html``) and logs it to the sweep's MLflow parent run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from raycomp.report import page, plots
from raycomp.report.data import Sweep, load_document

HTML = "report.html"
FIGURES = {"curves": "time_to_accuracy.png", "pareto": "pareto.png", "traces": "traces.png"}
NO_TRACKING = "tracking was off for this sweep (tracking.enabled: false); the trace summary goes to MLflow only"


def write_report(sweep: Sweep, folder: str | Path) -> list[Path]:
    """The figures and the page in ``folder``; returns their paths, the page last."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    images: dict[str, Path | None] = {
        "curves": plots.time_to_accuracy(sweep, folder / FIGURES["curves"]),
        "pareto": plots.pareto(sweep, folder / FIGURES["pareto"]),
        "traces": plots.traces(sweep, folder / FIGURES["traces"]),
    }
    stale = folder / FIGURES["traces"]
    if images["traces"] is None and stale.exists():  # an earlier report's, not this sweep's
        stale.unlink()
    html = folder / HTML
    staging = folder / f".{HTML}.tmp"
    staging.write_text(page.render(sweep, images), encoding="utf-8")
    os.replace(staging, html)  # whole or not at all
    return [path for path in images.values() if path is not None] + [html]


def log_report(paths: list[Path], parent: Any) -> bool:
    """Attaches the files to the parent run under ``report/``; False (already printed) if the store refused."""
    from raycomp.tracking import MlflowLogger

    logger = MlflowLogger(parent)
    return all([logger.log_artifact(path, "report") for path in paths])


def report_sweep_folder(folder: str | Path, tracking: dict[str, str] | None) -> list[Path]:
    """The report at the end of ``python -m raycomp.tune``: from the ``results.json`` just written in
    ``folder``, the traces from the sweep's MLflow parent run (``tracking``, a ``RunRef`` dict), written to
    ``folder/report`` and logged to that run."""
    sweep = load_document(Path(folder))
    if tracking is None:
        sweep = sweep.replace(traces_note=NO_TRACKING)
    else:
        from raycomp.report.tracked import client_for, with_traces
        from raycomp.tracking import RunRef

        parent = RunRef(**tracking)
        try:
            client = client_for(parent.tracking_uri)
            sweep = with_traces(sweep, client, parent.tracking_uri, client.get_run(parent.run_id))
        except Exception as error:  # the store went away: the report without its traces is still worth writing
            reason = " ".join(str(error).split())[:200] or type(error).__name__
            sweep = sweep.replace(traces_note=f"the MLflow store {parent.tracking_uri} did not answer ({reason})")
    paths = write_report(sweep, Path(folder) / "report")
    if sweep.parent is not None:
        log_report(paths, sweep.parent)
    return paths
