"""The read side of tracking, for the speed-up report: find a sweep's parent run, read its results, its trials.

A sweep that ended logged ``results.json`` to its parent run; that file is what the report reads. A
sweep that never got there (killed, or still running) is rebuilt from its child runs' metric histories
and summarized by ``raycomp.results.summary.summarize``, the same function as at a sweep's end. Traces
travel in ``results.json``; for trials without them (a rebuilt sweep) they are read from the child
runs' ``trace/<Algorithm>/<event>/{total_s,count}`` metrics, whose latest values are whole-run totals.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from raycomp.base import keys
from raycomp.base.errors import NotFound, RaycompError
from raycomp.base.layout import RunLayout, is_uri
from raycomp.base.scratch import scratch_folder
from raycomp.config.arm import Arm
from raycomp.config.sweep import SELECTION, SweepConfig
from raycomp.results.judging import Judging
from raycomp.results.results_files import Results, parse_results
from raycomp.results.summary import TraceRow, TrialRecord, summarize
from raycomp.tracking.artifacts import RUN_ID
from raycomp.tracking.ref import RunRef
from raycomp.tracking.search import all_runs, tag_filter

_TRACE = re.compile(r"^trace/([^/]+)/([^/]+)/(total_s|count)$")
_STATUS = {"FINISHED": keys.TERMINATED, "KILLED": keys.STOPPED, "FAILED": keys.ERROR, "RUNNING": keys.INTERRUPTED}


@dataclasses.dataclass(frozen=True)
class SweepRun:
    """A sweep's MLflow parent run, as the report reads it."""

    ref: RunRef
    name: str
    results: Results  # its results.json artifact, else rebuilt from its trial runs
    rebuilt: bool
    folder: Path | None  # the sweep's output folder, when it is on this machine


def sweep_run_of_folder(client: Any, folder: Path) -> Any:
    """The latest parent run of the sweep written to ``folder`` (its ``raycomp.run_key`` tag), or None."""
    key = RunLayout.of(str(folder.parent), folder.name).run_key(keys.SWEEP_KIND)
    experiments = [e.experiment_id for e in client.search_experiments()]
    return _latest(client, experiments, tag_filter({keys.RUN_KEY_TAG: key})) if experiments else None


def find_sweep_run(client: Any, reference: str) -> Any:
    """A sweep's parent run from its run id (a trial's run id leads to its parent) or its experiment's name."""
    if RUN_ID.match(reference):
        try:
            run = client.get_run(reference)
        except Exception:
            run = None
        if run is not None:
            parent = run.data.tags.get(keys.PARENT_TAG)
            return client.get_run(parent) if parent else run
    experiment = client.get_experiment_by_name(reference)
    if experiment is None:
        return None
    return _latest(client, [experiment.experiment_id], tag_filter({keys.KIND_TAG: keys.SWEEP_KIND}))


def run_ref(uri: str, run: Any) -> RunRef:
    return RunRef(uri, run.info.experiment_id, run.info.run_id)


def read_sweep_run(client: Any, uri: str, parent: Any) -> SweepRun:
    """The sweep of a parent run: its ``results.json`` artifact, else rebuilt from its child runs."""
    name = parent.data.tags.get("mlflow.runName") or parent.info.run_name or parent.info.run_id
    with scratch_folder("raycomp-report-") as scratch:
        try:
            path = client.download_artifacts(parent.info.run_id, keys.RESULTS_JSON, str(scratch))
            results = parse_results(json.loads(Path(path).read_text()))
        except Exception:
            results = None
    rebuilt = results is None
    if results is None:
        results = _rebuild(client, parent)
    return SweepRun(run_ref(uri, parent), name, results, rebuilt, _local_folder(parent))


def trial_runs(client: Any, parent: RunRef) -> tuple[dict[str, str], dict[str, tuple[TraceRow, ...]]]:
    """Each trial's child run id and the traces logged to it, by trial id."""
    runs = _child_runs(client, parent.experiment_id, parent.run_id)
    run_ids = {trial_id: run.info.run_id for trial_id, run in runs.items()}
    return run_ids, {trial_id: traces_from_metrics(run.data.metrics) for trial_id, run in runs.items()}


def traces_from_metrics(metrics: dict[str, float]) -> tuple[TraceRow, ...]:
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


def _child_runs(client: Any, experiment_id: str, parent_id: str) -> dict[str, Any]:
    """The parent's trial runs by trial id."""
    query = tag_filter({keys.PARENT_TAG: parent_id})
    return {
        run.data.tags.get(keys.TRIAL_TAG, run.info.run_id): run
        for run in all_runs(client, [experiment_id], query, order_by=["attributes.start_time ASC"])
    }


def _rebuild(client: Any, parent: Any) -> Results:
    config = _config(client, parent)
    sweep = config.get("sweep") or {}
    metric, mode = sweep.get("metric", keys.DEFAULT_METRIC), sweep.get("mode", keys.DEFAULT_MODE)
    space = list((sweep.get("space") or {}).keys())
    children = _child_runs(client, parent.info.experiment_id, parent.info.run_id)
    if not children:
        raise NotFound(f"MLflow run {parent.info.run_id} has neither {keys.RESULTS_JSON} nor trial runs")
    records = []
    for trial_id, run in children.items():
        variant = run.data.tags.get(keys.VARIANT_TAG, keys.METHOD)
        params = run.data.params
        overrides = {} if variant == keys.BASELINE else {k: yaml.safe_load(params[k]) for k in space if k in params}
        if SELECTION in space and variant == keys.METHOD:  # the algorithms it ran, of those the sweep selects
            overrides[SELECTION] = _selected(sweep, run.data.tags.get(keys.ALGORITHMS_TAG, "").split(","))
        history = _history(client, run.info.run_id, metric)
        status = _STATUS.get(run.info.status, run.info.status)
        tags = run.data.tags
        arm = Arm(
            variant,
            config_id=tags.get(keys.CONFIG_ID_TAG) or trial_id,  # untagged (older runs): a configuration each
            overrides=overrides,
            repeat=_number(tags.get(keys.REPEAT_TAG), int) or 0,
            budget=_number(tags.get(keys.BUDGET_TAG), float),
        )
        records.append(TrialRecord(trial_id, arm, status, history))
    records.sort(key=lambda r: (r.arm.variant != keys.BASELINE, r.trial_id))
    summaries = summarize(records, metric, mode)  # traces: None, read from the same runs by ``trial_runs``
    return Results(metric, mode, tuple(summaries), Judging.of(_sweep_config(sweep, parent.info.run_id)))


def _sweep_config(sweep: dict[str, Any], run_id: str) -> SweepConfig:
    """The sweep section the parent run logged, validated: its judging keys (clock, looks, margins) decide
    the verdicts, so one that does not read is an error, not the defaults' different answer."""
    try:
        return SweepConfig.model_validate(sweep)
    except ValidationError as error:
        raise RaycompError(f"MLflow run {run_id}: config.yaml's sweep section does not validate: {error}") from None


def _number(text: str | None, kind: type) -> Any:
    try:
        return None if text in (None, "None") else kind(text)
    except ValueError:
        return None


_CLOCKS = (keys.WALL, keys.CPU, keys.STEPS, keys.STEPS_CPU)  # every time a sweep may be judged on (sweep.timing)


def _history(client: Any, run_id: str, metric: str) -> list[dict[str, Any]]:
    """One report per step that has the metric, with the training times logged at that step."""
    values = {m.step: m.value for m in client.get_metric_history(run_id, metric)}
    clocks = {key: {m.step: m.value for m in client.get_metric_history(run_id, key)} for key in _CLOCKS}
    return [
        {keys.STEP: step, metric: values[step], **{key: series.get(step) for key, series in clocks.items()}}
        for step in sorted(values)
    ]


def _config(client: Any, parent: Any) -> dict[str, Any]:
    with scratch_folder("raycomp-report-") as scratch:
        try:
            return yaml.safe_load(
                Path(client.download_artifacts(parent.info.run_id, "config.yaml", str(scratch))).read_text()
            )
        except Exception:
            return {}


def _local_folder(parent: Any) -> Path | None:
    key = parent.data.tags.get(keys.RUN_KEY_TAG, "")
    prefix = f"{keys.SWEEP_KIND}:"
    path = Path(key.removeprefix(prefix)) if key.startswith(prefix) and not is_uri(key) else None
    return path if path is not None and path.is_dir() else None


def _latest(client: Any, experiment_ids: list[str], query: str) -> Any:
    runs = client.search_runs(experiment_ids, query, max_results=1, order_by=["attributes.start_time DESC"])
    return runs[0] if runs else None


def _selected(sweep: dict[str, Any], ran: list[str]) -> list[str]:
    """The ``space.algorithms`` value (as the parent run's config lists it) of a trial that ran ``ran``."""
    (values,) = sweep["space"][SELECTION].values()
    selectable = {name for names in values for name in names}
    chosen = set(ran) & selectable
    return next((names for names in values if set(names) == chosen), sorted(chosen))
