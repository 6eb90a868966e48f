"""Writes a find's report (its figure and ``report.html``) to the find's ``report/`` folder and attaches it to the
find's MLflow parent run, as a sweep's report is (``report.write``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from raycomp.base import keys
from raycomp.base.atomic_files import atomic_write_text
from raycomp.report.find_data import FindReport, read_find
from raycomp.report.find_figure import find_pareto
from raycomp.report.find_page import render_find
from raycomp.report.find_proxy import PROXY_FIGURE, proxy_figure
from raycomp.report.write import REPORT_FOLDER, log_report

if TYPE_CHECKING:
    from raycomp.tracking.ref import RunRef

FIND_FIGURE = "recipes_pareto.png"


def write_find_report(report: FindReport, folder: str | Path) -> list[Path]:
    """The figure and the page in ``folder``; their paths, the page last."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    image = find_pareto(report, folder / FIND_FIGURE)
    held = proxy_figure(report, folder / PROXY_FIGURE) if report.proxy_held else None
    html = folder / keys.REPORT_HTML
    atomic_write_text(html, render_find(report, image, held))  # whole or not at all
    return [image, *([held] if held else []), html]


def report_find_folder(run_folder: str | Path, parent: RunRef | None, out: str | Path | None = None) -> list[Path]:
    """The report of the find in ``run_folder`` (its find.json), written to ``out`` (default: its ``report/``)
    and, when ``parent`` is given, attached to that MLflow run under ``report/`` (never raises for MLflow)."""
    report = read_find(run_folder)
    paths = write_find_report(report, out or Path(run_folder) / REPORT_FOLDER)
    if parent is not None:
        log_report(paths, parent)
    return paths
