"""``python -m raycomp.report SWEEP``: the speed-up report of a sweep, as PNG files and ``report.html``.

SWEEP is the sweep's output folder (``storage_path/name``, holding ``results.json``), or its MLflow
parent run id, or its MLflow experiment's name (the latest sweep in it). The report goes to the
sweep folder's ``report/`` (``--out`` to choose) and, when the parent run is found, to its artifacts
under ``report/``. Exit codes: 0 written, 2 no such sweep, 3 the MLflow store does not answer.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from raycomp.report.build import log_report, write_report
from raycomp.report.data import Sweep, SweepNotFound, load_document


class StoreDown(RuntimeError):
    pass


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m raycomp.report", description=__doc__.splitlines()[0])
    parser.add_argument("sweep", help="sweep folder (with results.json), MLflow parent run id, or experiment name")
    parser.add_argument(
        "--tracking-uri",
        help="MLflow store (default: MLFLOW_TRACKING_URI, else mlflow.db beside the sweep folder or runs/mlflow.db)",
    )
    parser.add_argument("--out", type=Path, help="folder for the report (default: the sweep folder's report/)")
    parser.add_argument(
        "--no-mlflow", action="store_true", help="read nothing from MLflow and log nothing to it (no trace summary)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # one results.json: no progress bars
    try:
        sweep = resolve(args.sweep, args.tracking_uri, use_mlflow=not args.no_mlflow)
    except SweepNotFound as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except StoreDown as error:
        print(f"error: {error}", file=sys.stderr)
        return 3
    out = args.out or (sweep.folder / "report" if sweep.folder else Path("runs") / sweep.name / "report")
    paths = write_report(sweep, out)
    if sweep.parent is not None and not args.no_mlflow and log_report(paths, sweep.parent):
        print(f"logged to MLflow run {sweep.parent.run_id} under report/")
    print(f"report: {paths[-1]}")
    return 0


def resolve(reference: str, tracking_uri: str | None, use_mlflow: bool = True) -> Sweep:
    """The sweep at a folder (with its traces from MLflow when its parent run is found), or in MLflow."""
    path = Path(reference)
    if path.exists():
        sweep = load_document(path)
        if not use_mlflow:
            return sweep.replace(traces_note="MLflow was not read (--no-mlflow); the trace summary is only there")
        return _with_parent(sweep, tracking_uri)
    if not use_mlflow:
        raise SweepNotFound(f"no sweep at {reference}: no such folder (and --no-mlflow)")
    from raycomp.report import tracked

    uri = tracking_uri or tracked.default_uri()
    if uri is None:
        raise SweepNotFound(
            f"no sweep '{reference}': not a folder, and no MLflow store to look it up in "
            "(no runs/mlflow.db; give --tracking-uri or set MLFLOW_TRACKING_URI)"
        )
    _exists(uri, reference)
    try:
        client = tracked.client_for(uri)
        parent = tracked.find_parent(client, reference)
    except Exception as error:
        raise StoreDown(f"MLflow tracking store {uri} did not answer: {_one_line(error)}") from error
    if parent is None:
        raise SweepNotFound(f"no sweep '{reference}': not a folder, nor an MLflow run id or experiment name in {uri}")
    return tracked.load_parent(client, uri, parent)


def _with_parent(sweep: Sweep, tracking_uri: str | None) -> Sweep:
    from raycomp.report import tracked

    assert sweep.folder is not None
    uri = tracking_uri or tracked.default_uri(sweep.folder)
    if uri is None:
        database = sweep.folder.parent / "mlflow.db"
        note = f"no MLflow store beside this sweep ({database}): tracking was off, or give --tracking-uri"
        return sweep.replace(traces_note=note)
    try:
        client = tracked.client_for(uri)
        parent = tracked.parent_of_folder(client, sweep.folder)
        if parent is None:
            return sweep.replace(traces_note=f"no MLflow parent run for {sweep.folder} in {uri} (tracking was off?)")
        return tracked.with_traces(sweep, client, uri, parent)
    except Exception as error:  # the results are still worth a report
        return sweep.replace(traces_note=f"MLflow store {uri} did not answer: {_one_line(error)}")


def _exists(uri: str, reference: str) -> None:
    """A SQLite store that is not there is no store (MLflow would create an empty one)."""
    if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).is_file():
        raise SweepNotFound(f"no sweep '{reference}': not a folder, and no MLflow store at {uri}")


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


if __name__ == "__main__":
    sys.exit(main())
