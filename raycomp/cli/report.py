"""``python -m raycomp.report SWEEP``: the speed-up report of a sweep, as PNG files and ``report.html``.

A find's folder gets its own page (``cli/report_find.py``: each candidate's path, every recipe tried, the
confirmed verdict); ``--profile FOLDER ...`` draws performance profiles over several finds or sweeps
(``cli/report_profile.py``).

SWEEP is the sweep's output folder (``storage_path/name``, holding ``results.json``), or its MLflow
parent run id, or its MLflow experiment's name (the latest sweep in it). The report goes to the
sweep folder's ``report/`` (``--out`` to choose) and, when the parent run is found, to its artifacts
under ``report/``. Exit codes: 0 written, 2 no such sweep (or a damaged ``results.json``), 3 the MLflow
store does not answer, 130 Ctrl-C; each error is one line.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from raycomp.base.errors import NotFound, RaycompError, TrackingUnavailable, one_line
from raycomp.base.layout import MLFLOW_DB, sqlite_path
from raycomp.cli.common import exit_code_of
from raycomp.cli.report_find import report_find
from raycomp.cli.report_profile import add_profile_arguments, report_profiles
from raycomp.report.find_data import is_find_folder
from raycomp.report.sweep import Sweep, read_sweep
from raycomp.report.text import shown_path, shown_uri
from raycomp.report.write import REPORT_FOLDER, log_report, write_report
from raycomp.tracking.ref import redacted_uri


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m raycomp.report", description=__doc__.splitlines()[0])
    parser.add_argument(
        "sweep",
        nargs="?",
        help="sweep folder (with results.json), find folder (with find.json), MLflow parent run id, or experiment name",
    )
    parser.add_argument(
        "--tracking-uri",
        help=f"MLflow store (default: MLFLOW_TRACKING_URI, else {MLFLOW_DB} beside the sweep folder "
        f"or runs/{MLFLOW_DB})",
    )
    parser.add_argument("--out", type=Path, help="folder for the report (default: the sweep folder's report/)")
    parser.add_argument(
        "--no-mlflow",
        action="store_true",
        help="read nothing from MLflow and log nothing to it (traces only from results.json)",
    )
    add_profile_arguments(parser)
    args = parser.parse_args(argv)
    if (args.sweep is None) == (args.profile is None):
        parser.error("give one sweep or find to report on, or --profile FOLDER ... to profile several")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # one results.json: no progress bars
    return exit_code_of(lambda: _report(args))  # NotFound, a damaged results.json (2), TrackingUnavailable (3)


def _report(args: argparse.Namespace) -> int:
    if args.profile:
        return report_profiles(args)
    if is_find_folder(args.sweep):
        return report_find(args)
    sweep = resolve(args.sweep, args.tracking_uri, use_mlflow=not args.no_mlflow)
    out = args.out or (sweep.folder or Path("runs") / sweep.name) / REPORT_FOLDER
    paths = write_report(sweep, out)
    if sweep.parent is not None and not args.no_mlflow and log_report(paths, sweep.parent):
        print(f"logged to MLflow run {sweep.parent.run_id} under {REPORT_FOLDER}/")
    print(f"report: {paths[-1]}")
    return 0


def resolve(reference: str, tracking_uri: str | None, use_mlflow: bool = True) -> Sweep:
    """The sweep at a folder (with its parent run, and traces it lacks from MLflow, when found), or in MLflow."""
    path = Path(reference)
    if path.exists():
        sweep = read_sweep(path)
        if not use_mlflow:
            return sweep.replace(traces_note="MLflow was not read (--no-mlflow); the trace summary is only there")
        return _with_parent(sweep, tracking_uri)
    if not use_mlflow:
        raise NotFound(f"no sweep at {reference}: no such folder (and --no-mlflow)")
    from raycomp.tracking import read
    from raycomp.tracking.store import make_client, tracking_uri_near

    uri = tracking_uri or tracking_uri_near(None)
    if uri is None:
        raise NotFound(
            f"no sweep '{reference}': not a folder, and no MLflow store to look it up in "
            f"(no runs/{MLFLOW_DB}; give --tracking-uri or set MLFLOW_TRACKING_URI)"
        )
    store = sqlite_path(uri)
    if store is not None and not store.is_file():  # MLflow would create an empty store
        raise NotFound(f"no sweep '{reference}': not a folder, and no MLflow store at {redacted_uri(uri)}")
    try:
        client = make_client(uri)
        parent = read.find_sweep_run(client, reference)
        if parent is None:
            raise NotFound(
                f"no sweep '{reference}': not a folder, nor an MLflow run id or experiment name in {redacted_uri(uri)}"
            )
        run = read.read_sweep_run(client, uri, parent)
        trials = read.trial_runs(client, run.ref)
    except RaycompError:
        raise
    except Exception as error:
        reason = one_line(error, with_type=False)
        raise TrackingUnavailable(f"MLflow tracking store {redacted_uri(uri)} did not answer: {reason}") from error
    source = f"MLflow run {run.ref.run_id} at {shown_uri(uri)}"
    if run.rebuilt:
        source += " (rebuilt from its trial runs: no results.json)"
    return Sweep.from_results(run.results, run.name, source, run.folder).with_trial_runs(run.ref, *trials)


def _with_parent(sweep: Sweep, tracking_uri: str | None) -> Sweep:
    """The sweep with its MLflow parent run, to log the report to, and traces from MLflow for trials without."""
    from raycomp.tracking import read
    from raycomp.tracking.store import make_client, tracking_uri_near

    assert sweep.folder is not None
    uri = tracking_uri or tracking_uri_near(sweep.folder)
    if uri is None:
        database = sweep.folder.parent / MLFLOW_DB
        note = f"no MLflow store beside this sweep ({shown_path(database)}): tracking was off, or give --tracking-uri"
        return sweep.replace(traces_note=note)
    try:
        client = make_client(uri)
        parent = read.sweep_run_of_folder(client, sweep.folder)
        if parent is None:
            where = f"{shown_path(sweep.folder)} in {shown_uri(uri)}"
            return sweep.replace(traces_note=f"no MLflow parent run for {where} (tracking was off?)")
        ref = read.run_ref(uri, parent)
        return sweep.with_trial_runs(ref, *read.trial_runs(client, ref))
    except Exception as error:  # the results are still worth a report
        reason = one_line(error, with_type=False)
        return sweep.replace(traces_note=f"MLflow store {shown_uri(uri)} did not answer: {reason}")


if __name__ == "__main__":
    sys.exit(main())
