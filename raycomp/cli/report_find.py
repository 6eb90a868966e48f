"""The report of a find (``python -m raycomp.report runs/<find>``, and at a find's end): its page and figure in
the find's ``report/`` folder, attached to its MLflow parent run under ``report/`` when that run is found.
A report that cannot be drawn does not fail the find: its answer and files are written before it."""

from __future__ import annotations

import argparse
from pathlib import Path

from raycomp.base.errors import one_line
from raycomp.base.layout import MLFLOW_DB
from raycomp.find.files import FIND_JSON
from raycomp.report.find_write import report_find_folder
from raycomp.report.text import shown_path, shown_uri
from raycomp.report.write import REPORT_FOLDER
from raycomp.tracking.ref import RunRef


def report_find(args: argparse.Namespace) -> int:
    """``python -m raycomp.report FIND_FOLDER [--out] [--tracking-uri] [--no-mlflow]``."""
    folder = Path(args.sweep)
    folder = folder.parent if folder.name == FIND_JSON else folder
    parent = None if args.no_mlflow else find_parent(folder, args.tracking_uri)
    paths = report_find_folder(folder, parent, args.out)
    if parent is not None:
        print(f"logged to MLflow run {parent.run_id} under {REPORT_FOLDER}/")
    print(f"report: {shown_path(paths[-1])}")
    return 0


def find_parent(folder: Path, tracking_uri: str | None) -> RunRef | None:
    """The find's MLflow parent run (by its folder's run key), or None, said in one line, when there is none."""
    from raycomp.tracking import read
    from raycomp.tracking.find_runs import find_run_of_folder
    from raycomp.tracking.store import make_client, tracking_uri_near

    uri = tracking_uri or tracking_uri_near(folder)
    if uri is None:
        print(f"MLflow: no store beside this find ({shown_path(folder.parent / MLFLOW_DB)}): the report is not logged")
        return None
    try:
        run = find_run_of_folder(make_client(uri), folder.resolve())
    except Exception as error:
        print(f"MLflow: the store {shown_uri(uri)} did not answer ({one_line(error)}): the report is not logged")
        return None
    if run is None:
        print(f"MLflow: no find run for {shown_path(folder)} in {shown_uri(uri)}: the report is not logged")
        return None
    return read.run_ref(uri, run)
