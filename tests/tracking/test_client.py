"""BatchedClient: batched sends, nothing lost when the store goes away, never an exception."""

from __future__ import annotations

import math
from pathlib import Path

from helpers import free_port
from mlflow import MlflowClient

from raycomp.tracking.client import BatchedClient
from raycomp.tracking.ref import RunRef


def new_run(tmp_path) -> RunRef:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment_id = client.create_experiment("client", artifact_location=(tmp_path / "artifacts").as_uri())
    return RunRef(uri, experiment_id, client.create_run(experiment_id).info.run_id)


def test_metrics_wait_in_memory_until_flush_then_go_in_batches(tmp_path):
    ref = new_run(tmp_path)
    batched = BatchedClient(ref)
    for step in range(2500):  # more than one log_batch (1000 metrics) holds
        batched.log_metrics({"train/loss": 1.0 / (step + 1), "skipped": None, "nan": math.nan, "flag": True}, step)
    client = MlflowClient(ref.tracking_uri)
    assert client.get_metric_history(ref.run_id, "train/loss") == []
    assert batched.flush() and batched.failures == 0 and batched.seconds > 0
    history = client.get_metric_history(ref.run_id, "train/loss")
    assert sorted(m.step for m in history) == list(range(2500))
    assert {m.value for m in client.get_metric_history(ref.run_id, "flag")} == {1.0}
    assert client.get_metric_history(ref.run_id, "nan") == [] and client.get_metric_history(ref.run_id, "skipped") == []


def test_a_steps_loss_logged_as_a_tensor_is_read_at_the_flush_and_spilled_as_a_number(tmp_path):
    """The Trainer logs each step's loss as a tensor: read when the points are sent (on a GPU one wait for the
    device, not one per step), non-finite ones dropped as numbers are, and spilled as numbers."""
    import torch

    ref = new_run(tmp_path)
    batched = BatchedClient(ref)
    losses = torch.tensor([0.5, 0.25, math.inf])
    for step, loss in enumerate(losses):
        batched.log_metrics({"train/loss": loss.clone()}, step)  # a fresh tensor each step, as the Trainer's
    batched.spill(tmp_path / "spilled.jsonl")
    spilled = [line.split(",")[1] for line in (tmp_path / "spilled.jsonl").read_text().splitlines()]
    assert spilled == [" 0.5", " 0.25"]
    assert batched.flush()
    history = MlflowClient(ref.tracking_uri).get_metric_history(ref.run_id, "train/loss")
    assert sorted((m.step, m.value) for m in history) == [(0, 0.5), (1, 0.25)]


def test_a_store_that_is_down_counts_a_failure_keeps_the_points_and_never_raises(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    ref = RunRef(f"http://127.0.0.1:{free_port()}", "0", "0" * 32)
    batched = BatchedClient(ref)
    batched.log_metrics({"train/loss": 1.0}, 0)
    assert not batched.flush() and not batched.flush()
    assert batched.failures == 2 and len(batched._points) == 1  # kept for the next flush
    assert not batched.log_artifact(__file__) and not batched.set_tags({"a": "b"})
    assert not batched.delete_artifacts("checkpoints")
    err = capsys.readouterr().err
    assert err.count("MLflow metrics") == 1  # said once, not at every retry
    assert "training continues" in err and ref.tracking_uri in err


def test_a_table_is_replaced_not_appended(tmp_path):
    ref = new_run(tmp_path)
    batched = BatchedClient(ref)
    batched.log_table(["a", "b"], [[1, 2]], "traces.json")
    batched.log_table(["a", "b"], [[3, 4]], "traces.json")
    path = MlflowClient(ref.tracking_uri).download_artifacts(ref.run_id, "traces.json", str(tmp_path))
    assert Path(path).read_text() == '{"columns": ["a", "b"], "data": [[3, 4]]}'


def test_artifacts_tags_and_deletion(tmp_path):
    ref = new_run(tmp_path)
    batched = BatchedClient(ref)
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    assert batched.log_artifact(tmp_path / "a.txt", "folder") and batched.log_artifact(tmp_path / "b.txt")
    assert batched.set_tags({"x": "y"})
    client = MlflowClient(ref.tracking_uri)
    assert {f.path for f in client.list_artifacts(ref.run_id)} == {"folder", "b.txt"}
    assert client.get_run(ref.run_id).data.tags["x"] == "y"
    assert batched.delete_artifacts("folder")
    assert {f.path for f in client.list_artifacts(ref.run_id)} == {"b.txt"}
