"""``--resume-from`` references: parsed, resolved through the run's checkpoint tags, NotFound otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from raycomp.base import keys
from raycomp.base.errors import NotFound
from raycomp.tracking.artifacts import checkpoint_tag, download_checkpoint, parse_run_reference

RUN_ID = "0123456789abcdef" * 2


def test_references_name_a_run_and_optionally_a_path():
    assert parse_run_reference(RUN_ID) == (RUN_ID, None)
    assert parse_run_reference(f"runs:/{RUN_ID}") == (RUN_ID, None)
    assert parse_run_reference(f"runs:/{RUN_ID}/best") == (RUN_ID, "best")
    assert parse_run_reference(f"runs:/{RUN_ID}/checkpoints/step_1/x.pt") == (RUN_ID, "checkpoints/step_1/x.pt")
    with pytest.raises(NotFound, match="not an MLflow run id") as raised:
        parse_run_reference("nonsense")
    assert raised.value.exit_code == 2


def test_latest_best_and_missing_checkpoints(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment_id = client.create_experiment("artifacts", artifact_location=(tmp_path / "artifacts").as_uri())
    run_id = client.create_run(experiment_id).info.run_id
    with pytest.raises(NotFound, match="has logged no checkpoint"):
        download_checkpoint(uri, run_id, tmp_path / "none")
    for step in (1, 2):
        folder = tmp_path / f"step_{step}"
        folder.mkdir()
        (folder / keys.CHECKPOINT_FILE).write_text(str(step))
        client.log_artifact(run_id, str(folder / keys.CHECKPOINT_FILE), f"checkpoints/step_{step}")
    client.set_tag(run_id, keys.LATEST_TAG, f"checkpoints/step_2/{keys.CHECKPOINT_FILE}")
    client.set_tag(run_id, keys.BEST_TAG, f"checkpoints/step_1/{keys.CHECKPOINT_FILE}")
    assert download_checkpoint(uri, f"runs:/{run_id}", tmp_path / "latest").read_text() == "2"
    assert download_checkpoint(uri, f"runs:/{run_id}/best", tmp_path / "best").read_text() == "1"
    folder = download_checkpoint(uri, f"runs:/{run_id}/checkpoints/step_1", tmp_path / "folder")
    assert folder == Path(tmp_path / "folder" / "step_1" / keys.CHECKPOINT_FILE) and folder.read_text() == "1"
    with pytest.raises(NotFound, match="no checkpoint 'checkpoints/step_9'"):
        download_checkpoint(uri, f"runs:/{run_id}/checkpoints/step_9", tmp_path / "missing")
    with pytest.raises(NotFound, match=f"no MLflow run {RUN_ID}"):
        download_checkpoint(uri, RUN_ID, tmp_path / "other")


def test_a_run_logged_before_the_tags_were_renamed_still_resolves(tmp_path):
    """Runs logged before 06f7262 named their checkpoints ``raycomp.checkpoint.latest`` / ``.best``."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment_id = client.create_experiment("old", artifact_location=(tmp_path / "artifacts").as_uri())
    run_id = client.create_run(experiment_id).info.run_id
    for step in (1, 2):
        folder = tmp_path / f"step_{step}"
        folder.mkdir()
        (folder / keys.CHECKPOINT_FILE).write_text(str(step))
        client.log_artifact(run_id, str(folder / keys.CHECKPOINT_FILE), f"checkpoints/step_{step}")
    client.set_tag(run_id, "raycomp.checkpoint.latest", f"checkpoints/step_2/{keys.CHECKPOINT_FILE}")
    client.set_tag(run_id, "raycomp.checkpoint.best", f"checkpoints/step_1/{keys.CHECKPOINT_FILE}")
    client.set_tag(run_id, "raycomp.checkpoint.best_value", "0.5")
    assert download_checkpoint(uri, run_id, tmp_path / "latest").read_text() == "2"
    assert download_checkpoint(uri, f"runs:/{run_id}/best", tmp_path / "best").read_text() == "1"
    tags = client.get_run(run_id).data.tags
    assert checkpoint_tag(tags, keys.BEST_VALUE_TAG) == "0.5"  # a resumed run's callback reads its best so far
    # a run with both names (resumed after the rename) reads the new one
    client.set_tag(run_id, keys.LATEST_TAG, f"checkpoints/step_1/{keys.CHECKPOINT_FILE}")
    assert download_checkpoint(uri, run_id, tmp_path / "renamed").read_text() == "1"
