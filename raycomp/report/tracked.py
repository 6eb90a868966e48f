"""The report's MLflow side: find a sweep's parent run, its trials' traces, or the whole sweep from MLflow.

MLflow is reached only through ``raycomp.tracking`` (its client, tags and run references), as
everywhere in raycomp. A sweep that ended writes ``results.json`` to its parent run; that file is
what the report reads. A sweep that never got there (killed, or still running) is rebuilt from its
child runs' metric histories and summarized by ``raycomp.results.summarize``, the same function.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml

from raycomp.report.data import Sweep, SweepNotFound, TraceRow, from_document
from raycomp.results import WALL, TrialRecord, results_document, summarize
from raycomp.tracking import RunRef
from raycomp.tracking.runs import PARENT_TAG, RUN_KEY_TAG, TRIAL_TAG
from raycomp.tracking.store import make_client

VARIANT_TAG = "raycomp.variant"
KIND_TAG = "raycomp.kind"
_RUN_ID = re.compile(r"^[0-9a-f]{32}$")
_TRACE = re.compile(r"^trace/([^/]+)/([^/]+)/(total_s|count)$")
_STATUS = {"FINISHED": "TERMINATED", "KILLED": "STOPPED", "FAILED": "ERROR", "RUNNING": "INTERRUPTED"}


def default_uri(folder: Path | None = None) -> str | None:
    """``MLFLOW_TRACKING_URI``, else the SQLite store a sweep with default tracking writes beside its folder."""
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    database = (folder.parent if folder is not None else Path("runs")) / "mlflow.db"
    return f"sqlite:///{database.absolute()}" if database.is_file() else None


def client_for(uri: str) -> Any:
    return make_client(uri)


def parent_of_folder(client: Any, folder: Path) -> Any:
    """The latest parent run of the sweep written to ``folder`` (its ``raycomp.run_key`` tag), or None."""
    key = f"sweep:{os.path.abspath(folder.parent)}/{folder.name}"
    experiments = [e.experiment_id for e in client.search_experiments()]
    return _latest(client, experiments, f"tags.`{RUN_KEY_TAG}` = '{key}'") if experiments else None


def find_parent(client: Any, reference: str) -> Any:
    """A sweep's parent run from its run id (a trial's run id leads to its parent) or its experiment's name."""
    if _RUN_ID.match(reference):
        try:
            run = client.get_run(reference)
        except Exception:
            run = None
        if run is not None:
            parent = run.data.tags.get(PARENT_TAG)
            return client.get_run(parent) if parent else run
    experiment = client.get_experiment_by_name(reference)
    if experiment is None:
        return None
    return _latest(client, [experiment.experiment_id], f"tags.`{KIND_TAG}` = 'sweep'")


def run_ref(uri: str, run: Any) -> RunRef:
    return RunRef(uri, run.info.experiment_id, run.info.run_id)


def child_runs(client: Any, parent: Any) -> dict[str, Any]:
    """The parent's trial runs by trial id."""
    runs: dict[str, Any] = {}
    token = None
    while True:
        page = client.search_runs(
            [parent.info.experiment_id],
            f"tags.`{PARENT_TAG}` = '{parent.info.run_id}'",
            max_results=1000,
            order_by=["attributes.start_time ASC"],
            page_token=token,
        )
        for run in page:
            runs[run.data.tags.get(TRIAL_TAG, run.info.run_id)] = run
        token = page.token
        if not token:
            return runs


def trace_rows(metrics: dict[str, float]) -> tuple[TraceRow, ...]:
    """``trace/<Algorithm>/<event>/{total_s,count}`` (their latest values: whole-run totals) as rows."""
    found: dict[tuple[str, str], dict[str, float]] = {}
    for key, value in metrics.items():
        match = _TRACE.match(key)
        if match:
            found.setdefault((match[1], match[2]), {})[match[3]] = value
    return tuple(
        TraceRow(algorithm, event, int(values.get("count", 0)), float(values.get("total_s", 0.0)))
        for (algorithm, event), values in sorted(found.items())
    )


def with_traces(sweep: Sweep, client: Any, uri: str, parent: Any) -> Sweep:
    """The sweep with each trial's trace summary and run id from its child run, and the parent run attached."""
    children = child_runs(client, parent)
    trials = []
    for trial in sweep.trials:
        run = children.get(trial.trial_id)
        if run is None:
            trials.append(trial)
        else:
            traces = trace_rows(run.data.metrics)
            trials.append(dataclasses.replace(trial, traces=traces, run_id=run.info.run_id))
    note = None if children else f"the MLflow parent run {parent.info.run_id} has no trial runs"
    return sweep.replace(trials=tuple(trials), parent=run_ref(uri, parent), traces_note=note)


def load_parent(client: Any, uri: str, parent: Any) -> Sweep:
    """The sweep of a parent run: its ``results.json`` artifact, else rebuilt from its child runs."""
    name = parent.data.tags.get("mlflow.runName") or parent.info.run_name or parent.info.run_id
    source = f"MLflow run {parent.info.run_id} at {uri}"
    folder = _local_folder(parent)
    with tempfile.TemporaryDirectory(prefix="raycomp-report-") as scratch:
        try:
            document = json.loads(
                Path(client.download_artifacts(parent.info.run_id, "results.json", scratch)).read_text()
            )
        except Exception:
            document = None
        if document is not None:
            sweep = from_document(document, name, source, folder)
        else:
            sweep = _rebuild(client, parent, name, source + " (rebuilt from its trial runs: no results.json)", folder)
    return with_traces(sweep, client, uri, parent)


def _rebuild(client: Any, parent: Any, name: str, source: str, folder: Path | None) -> Sweep:
    config = _config(client, parent)
    sweep = config.get("sweep") or {}
    metric, mode = sweep.get("metric", "eval/accuracy"), sweep.get("mode", "max")
    space = list((sweep.get("space") or {}).keys())
    children = child_runs(client, parent)
    if not children:
        raise SweepNotFound(f"MLflow run {parent.info.run_id} has neither results.json nor trial runs")
    records = []
    for trial_id, run in children.items():
        variant = run.data.tags.get(VARIANT_TAG, "method")
        params = run.data.params
        overrides = {} if variant == "baseline" else {k: yaml.safe_load(params[k]) for k in space if k in params}
        history = _history(client, run.info.run_id, metric)
        status = _STATUS.get(run.info.status, run.info.status)
        records.append(TrialRecord(trial_id, variant, overrides, status, history))
    records.sort(key=lambda r: (r.variant != "baseline", r.trial_id))
    document = results_document(summarize(records, metric, mode), metric, mode)
    return from_document(document, name, source, folder)


def _history(client: Any, run_id: str, metric: str) -> list[dict[str, Any]]:
    """One report per step that has the metric, with the training wall time logged at that step."""
    values = {m.step: m.value for m in client.get_metric_history(run_id, metric)}
    walls = {m.step: m.value for m in client.get_metric_history(run_id, WALL)}
    return [{"step": step, metric: values[step], WALL: walls.get(step)} for step in sorted(values)]


def _config(client: Any, parent: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="raycomp-report-") as scratch:
        try:
            return yaml.safe_load(
                Path(client.download_artifacts(parent.info.run_id, "config.yaml", scratch)).read_text()
            )
        except Exception:
            return {}


def _local_folder(parent: Any) -> Path | None:
    key = parent.data.tags.get(RUN_KEY_TAG, "")
    path = Path(key.removeprefix("sweep:")) if key.startswith("sweep:") and "://" not in key else None
    return path if path is not None and path.is_dir() else None


def _latest(client: Any, experiment_ids: list[str], query: str) -> Any:
    runs = client.search_runs(experiment_ids, query, max_results=1, order_by=["attributes.start_time DESC"])
    return runs[0] if runs else None
