"""MlflowCallback against a real SQLite store: step metrics, reports, traces, checkpoints and their tags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow import MlflowClient

from raycomp.base import keys
from raycomp.core.event import Event
from raycomp.core.trace import Trace, TraceSummary
from raycomp.tracking import MlflowCallback
from raycomp.tracking.ref import RunRef


@pytest.fixture
def run(tmp_path) -> RunRef:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment_id = client.create_experiment("callback", artifact_location=(tmp_path / "artifacts").as_uri())
    return RunRef(uri, experiment_id, client.create_run(experiment_id).info.run_id)


def trace_rows(count: int) -> list[dict]:
    summary = TraceSummary()
    for _ in range(count):
        summary.add(Trace("SelectiveBackprop", Event.AFTER_DATALOADER, exit_code=0, run=True, duration_s=0.5))
    return summary.rows()


def checkpoint(folder: Path, step: int) -> Path:
    folder = folder / f"checkpoint_{step}"
    folder.mkdir()
    (folder / keys.CHECKPOINT_FILE).write_bytes(str(step).encode())
    return folder


def history(run: RunRef, key: str) -> list[tuple[int, float]]:
    return [(m.step, m.value) for m in MlflowClient(run.tracking_uri).get_metric_history(run.run_id, key)]


def test_steps_wait_for_the_report_which_logs_its_metrics_and_traces(run, tmp_path):
    callback = MlflowCallback(run, metric="eval/accuracy", mode="max", num_to_keep=None)
    for step in (1, 2):
        callback.log_metrics({"train/loss": 1.0 / step, "trainer/lr": 0.1}, step)
    assert history(run, "train/loss") == []  # buffered until the report
    report = {
        keys.STEP: 2,
        "epoch": 1,
        keys.TRAIN_LOSS: 0.75,
        "trainer/lr": 0.1,
        "eval/accuracy": 0.5,
        keys.FINISHED: False,
        keys.MACHINE: "cpu",
        keys.TRACES: trace_rows(4),
    }
    callback.report(report, None)
    assert history(run, "train/loss") == [(1, 1.0), (2, 0.5)] and history(run, "train/loss_mean") == [(2, 0.75)]
    assert history(run, "trainer/lr") == [(1, 0.1), (2, 0.1)]  # per-step keys are not logged again
    assert history(run, "eval/accuracy") == [] and history(run, "epoch") == [(2, 1.0)]  # eval/* goes per step
    assert history(run, "trace/SelectiveBackprop/after_dataloader/count") == [(2, 4.0)]
    assert history(run, "trace/SelectiveBackprop/after_dataloader/total_s") == [(2, 2.0)]
    assert history(run, "trace/SelectiveBackprop/after_dataloader/mean_s") == [(2, 0.5)]
    metrics = MlflowClient(run.tracking_uri).get_run(run.run_id).data.metrics
    assert keys.TRACES not in metrics and keys.MACHINE not in metrics
    assert report[keys.TRACKING_FAILURES] == 0 and report["time/tracking_s"] > 0  # for the next sink
    # No checkpoint and not finished: no table yet; the final report writes it.
    assert not MlflowClient(run.tracking_uri).list_artifacts(run.run_id)
    callback.report({keys.STEP: 4, keys.FINISHED: True, keys.TRACES: trace_rows(8)}, None)
    path = MlflowClient(run.tracking_uri).download_artifacts(run.run_id, "traces.json", str(tmp_path))
    table = json.loads(Path(path).read_text())
    assert table["columns"] == ["algorithm", "event", "count", "total_s", "mean_s", "exit_codes"]
    assert table["data"] == [["SelectiveBackprop", "after_dataloader", 8, 4.0, 0.5, {"0": 8}]]


def test_checkpoints_are_uploaded_then_tagged_latest_and_best_and_stale_ones_pruned(run, tmp_path):
    callback = MlflowCallback(run, metric="eval/loss", mode="min", num_to_keep=1)
    for step, loss in ((10, 0.5), (20, 0.3), (30, 0.4), (40, 0.6)):
        callback.report({keys.STEP: step, "eval/loss": loss, keys.TRACES: []}, checkpoint(tmp_path, step))
    client = MlflowClient(run.tracking_uri)
    tags = client.get_run(run.run_id).data.tags
    assert tags[keys.LATEST_TAG] == f"checkpoints/step_00000040/{keys.CHECKPOINT_FILE}"
    assert tags[keys.BEST_TAG] == f"checkpoints/step_00000020/{keys.CHECKPOINT_FILE}"
    assert float(tags[keys.BEST_VALUE_TAG]) == 0.3
    kept = {entry.path for entry in client.list_artifacts(run.run_id, "checkpoints")}
    assert kept == {"checkpoints/step_00000020", "checkpoints/step_00000040"}  # the newest and the best
    local = client.download_artifacts(run.run_id, tags[keys.LATEST_TAG], str(tmp_path / "down"))
    assert Path(local).read_bytes() == b"40"
    assert {"traces.json", "checkpoints"} == {entry.path for entry in client.list_artifacts(run.run_id)}

    # A restarted worker continues the bookkeeping: a worse value keeps the best, the stale latest goes.
    restarted = MlflowCallback(run, metric="eval/loss", mode="min", num_to_keep=1)
    assert restarted.best == 0.3 and restarted.best_folder == "checkpoints/step_00000020"
    restarted.report({keys.STEP: 50, "eval/loss": 0.35, keys.TRACES: []}, checkpoint(tmp_path, 50))
    kept = {entry.path for entry in client.list_artifacts(run.run_id, "checkpoints")}
    assert kept == {"checkpoints/step_00000020", "checkpoints/step_00000050"}
    assert client.get_run(run.run_id).data.tags[keys.BEST_TAG].startswith("checkpoints/step_00000020/")


def test_fit_end_and_close_flush_what_the_steps_logged(run):
    callback = MlflowCallback(run, metric="eval/accuracy", mode="max", num_to_keep=2)
    callback.log_metrics({"train/loss": 0.25}, 7)
    callback.fit_end(None, None)  # type: ignore[arg-type]  # the state and logger are not used
    assert history(run, "train/loss") == [(7, 0.25)]
    callback.log_metrics({"train/loss": 0.125}, 8)
    callback.close()
    assert history(run, "train/loss") == [(7, 0.25), (8, 0.125)]


def test_a_resumed_run_does_not_log_the_steps_it_trains_again(run):
    """Resuming from the checkpoint at step 2 after a report at step 4 re-trains steps 3-4: logged once."""
    first = MlflowCallback(run, metric="eval/loss", mode="min", num_to_keep=None)
    for step in (1, 2, 3, 4):
        first.log_metrics({"train/loss": 1.0 / step, "trainer/lr": 0.1}, step)
    first.report({keys.STEP: 4, keys.TRAIN_LOSS: 0.5, keys.TRACES: []}, None)

    resumed = MlflowCallback(run, metric="eval/loss", mode="min", num_to_keep=None)
    assert resumed.logged_through == 4
    for step in (3, 4, 5, 6):
        resumed.log_metrics({"train/loss": 2.0 / step, "trainer/lr": 0.1}, step)
    resumed.report({keys.STEP: 4, keys.TRAIN_LOSS: 9.0, keys.TRACES: []}, None)  # its report at 4 again
    resumed.report({keys.STEP: 6, keys.TRAIN_LOSS: 0.25, keys.TRACES: []}, None)
    assert [step for step, _ in history(run, "train/loss")] == [1, 2, 3, 4, 5, 6]
    assert history(run, "train/loss")[2:] == [(3, 1 / 3), (4, 0.25), (5, 0.4), (6, 2 / 6)]
    assert history(run, "train/loss_mean") == [(4, 0.5), (6, 0.25)]
    assert MlflowClient(run.tracking_uri).get_run(run.run_id).data.tags[keys.RETRAINED_FROM_TAG] == "3"


def test_a_new_run_logs_from_its_first_step(run):
    """Step 0 too: surgeries log what they replaced before the first batch (alibi/num_replaced)."""
    callback = MlflowCallback(run, metric="eval/loss", mode="min", num_to_keep=None)
    callback.log_metrics({"alibi/num_replaced": 2}, 0)
    callback.report({keys.STEP: 0, keys.TRACES: []}, None)
    assert history(run, "alibi/num_replaced") == [(0, 2.0)]
    assert keys.RETRAINED_FROM_TAG not in MlflowClient(run.tracking_uri).get_run(run.run_id).data.tags
