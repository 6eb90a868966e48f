"""Writes a sweep's speed-up report (PNG figures and ``report.html``) and logs it to the sweep's MLflow parent run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from raycomp.base import keys
from raycomp.base.atomic_files import atomic_write_text
from raycomp.base.errors import one_line
from raycomp.report import page, pareto, plots
from raycomp.report.at_scale import shown_part
from raycomp.report.sweep import Sweep
from raycomp.report.text import shown_path, shown_uri
from raycomp.results.configs import SweepVerdicts
from raycomp.results.summary import TrialSummary

if TYPE_CHECKING:
    from raycomp.tracking.ref import RunRef

REPORT_FOLDER = "report"  # in the sweep folder, and in the parent run's artifacts
FIGURES = {"curves": "time_to_accuracy.png", "pareto": "pareto.png", "traces": "traces.png"}
NO_TRACKING = "tracking was off for this sweep (tracking.enabled: false), and its trials reported no traces"


def write_report(sweep: Sweep, folder: str | Path) -> list[Path]:
    """The figures and the page in ``folder``; returns their paths, the page last."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    shown, not_shown = shown_part(sweep)  # a large sweep's figures and card: its first configurations
    images: dict[str, Path | None] = {
        "curves": plots.time_to_accuracy(shown, folder / FIGURES["curves"]),
        "pareto": pareto.pareto(shown, folder / FIGURES["pareto"]),
        "traces": plots.traces(sweep, folder / FIGURES["traces"]),
    }
    stale = folder / FIGURES["traces"]
    if images["traces"] is None and stale.exists():  # an earlier report's, not this sweep's
        stale.unlink()
    html = folder / keys.REPORT_HTML
    atomic_write_text(html, page.render(sweep, images, shown, not_shown))  # whole or not at all
    return [path for path in images.values() if path is not None] + [html]


def log_report(paths: list[Path], parent: RunRef) -> bool:
    """Attaches the files to the parent run under ``report/``; False (already printed) if the store refused."""
    from raycomp.tracking import log_files

    return log_files(parent, paths, REPORT_FOLDER)


def write_sweep_report(
    summaries: Sequence[TrialSummary],
    verdicts: SweepVerdicts,
    name: str,
    metric: str,
    mode: str,
    folder: str | Path,
    parent: RunRef | None,
) -> list[Path]:
    """The report at the end of ``python -m raycomp.tune``, from the summaries and the verdicts the CLI
    printed, in memory: written to ``folder/report`` and logged to the sweep's MLflow parent run, if
    tracked. The traces come with the summaries; only trials without any are looked up in their MLflow runs."""
    folder = Path(folder)
    source = shown_path(folder / keys.RESULTS_JSON)
    sweep = Sweep(name, metric, mode, tuple(summaries), verdicts, source, folder=folder, parent=parent)
    if parent is None:
        sweep = sweep.replace(traces_note=NO_TRACKING)
    elif sweep.lacks_traces:
        sweep = _with_traces_from_mlflow(sweep, parent)
    paths = write_report(sweep, folder / REPORT_FOLDER)
    if sweep.parent is not None:
        log_report(paths, sweep.parent)
    return paths


def _with_traces_from_mlflow(sweep: Sweep, parent: RunRef) -> Sweep:
    from raycomp.tracking import read
    from raycomp.tracking.store import make_client

    try:
        return sweep.with_trial_runs(parent, *read.trial_runs(make_client(parent.tracking_uri), parent))
    except Exception as error:  # the store went away: the report without those traces is still worth writing
        reason = one_line(error, with_type=False)
        return sweep.replace(
            parent=None, traces_note=f"the MLflow store {shown_uri(parent.tracking_uri)} did not answer ({reason})"
        )
