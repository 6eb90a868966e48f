"""A trial's folder in a bucket (moto's S3 server on 127.0.0.1, reached through pyarrow as AWS is): its newest
checkpoint that loads, downloaded whole (a damaged newer one skipped, saying so), and its own history, which keeps
a resumed trial's curve whole."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import uuid

import pandas as pd
import pyarrow.fs
import pytest
from cluster_services import S3Endpoint
from helpers import tiny_model
from ray import tune

from raycomp.core import State
from raycomp.launch.sinks import StoredFile, StoredHistorySink
from raycomp.launch.sweep.outcome import trial_history
from raycomp.launch.sweep.remote_checkpoint import newest_loadable_checkpoint
from raycomp.launch.sweep.upload import copy_to_storage
from raycomp.loop.checkpoint import load_checkpoint, save_to_folder

pytestmark = pytest.mark.spawns  # the S3 endpoint is a process of its own


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    endpoint = S3Endpoint(tmp_path_factory.mktemp("s3"))
    try:
        yield endpoint
    finally:
        endpoint.stop()


@pytest.fixture(scope="module")
def filesystem(endpoint):
    return pyarrow.fs.S3FileSystem(
        access_key=endpoint.env["AWS_ACCESS_KEY_ID"],
        secret_key=endpoint.env["AWS_SECRET_ACCESS_KEY"],
        region=endpoint.env["AWS_REGION"],
        endpoint_override=endpoint.url,
    )


def test_a_small_file_goes_to_a_bucket_in_one_request(endpoint, tmp_path, monkeypatch):
    """Not pyarrow's three-request multipart upload (``layout.opened_uri``): a sweep's results, here; a trial's
    files go through the same URI to Ray (tests/launch/test_multinode.py checks the whole sweep's log)."""
    for name, value in endpoint.env.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "results.json").write_text("{}")
    before = len(endpoint.log.read_text().splitlines())
    copy_to_storage([tmp_path / "results.json"], f"{endpoint.uri('runs', 'one-request')}")
    requests = [line for line in endpoint.log.read_text().splitlines()[before:] if "results.json" in line]
    assert len(requests) == 1 and '"PUT /raycomp/runs/one-request/results.json ' in requests[0], requests


def test_the_newest_checkpoint_that_loads_comes_down_from_the_bucket(filesystem, tmp_path, capsys):
    state = State(tiny_model(), "1ep")
    for step in (0, 1):  # two good checkpoints, as Tune names them
        state.timestamp = state.timestamp.to_next_batch(4)
        save_to_folder(state, tmp_path / f"checkpoint_00000{step}")
        pyarrow.fs.copy_files(
            str(tmp_path / f"checkpoint_00000{step}"), f"raycomp/runs/trial/checkpoint_00000{step}", None, filesystem
        )
    damaged = tmp_path / "checkpoint_000002" / "checkpoint.pt"
    damaged.parent.mkdir()
    damaged.write_bytes(b"cut short")
    pyarrow.fs.copy_files(str(damaged.parent), "raycomp/runs/trial/checkpoint_000002", None, filesystem)

    with newest_loadable_checkpoint(filesystem, "raycomp/runs/trial") as path:
        assert path is not None and path.parent.name == "checkpoint_000001"
        assert load_checkpoint(path)["state"]["timestamp"]["batch"] == 2  # the second of the good ones
    assert not path.exists()  # downloaded for the while it is read
    assert "skipping checkpoint raycomp/runs/trial/checkpoint_000002" in capsys.readouterr().err

    with newest_loadable_checkpoint(filesystem, "raycomp/runs/none-yet") as nothing:
        assert nothing is None


def test_a_download_left_by_a_killed_trial_is_removed_by_the_next_download_on_that_node(
    filesystem, tmp_path, monkeypatch
):
    """A trial killed outright mid-download (its node lost) runs no clean-up; its folder is named after it."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # this test's TMPDIR
    state = State(tiny_model(), "1ep")
    save_to_folder(state, tmp_path / "checkpoint_000000")
    pyarrow.fs.copy_files(
        str(tmp_path / "checkpoint_000000"), "raycomp/runs/killed/checkpoint_000000", None, filesystem
    )
    ended = subprocess.Popen(["true"])
    ended.wait()  # a process id no process has now
    minutes_ago = time.time() - 120
    abandoned = tmp_path / f"raycomp-stored-{ended.pid}-{uuid.uuid4().hex}"
    running = tmp_path / f"raycomp-stored-{os.getpid()}-{uuid.uuid4().hex}"  # a live trial's download: kept
    for folder in (abandoned, running):
        (folder / "checkpoint_000000").mkdir(parents=True)
        os.utime(folder, (minutes_ago, minutes_ago))

    with newest_loadable_checkpoint(filesystem, "raycomp/runs/killed") as path:
        assert path is not None and path.parents[1].name.startswith(f"raycomp-stored-{os.getpid()}-")
    assert not abandoned.exists() and running.is_dir() and not path.parents[1].exists()


def test_a_trial_resumed_by_a_new_driver_keeps_the_results_it_reported_before_its_checkpoint(filesystem):
    """Tune's rows of the resumed attempt start after the checkpoint (step 16); the trial's own file in the bucket,
    read back and extended by the new attempt, has the rest."""
    file = StoredFile(filesystem, "raycomp/runs/resumed/history.jsonl")
    first = StoredHistorySink(file)
    for step in (16, 32):
        first.report({"step": step, "eval/accuracy": step / 100}, None)
    StoredHistorySink(file).report({"step": 48, "eval/accuracy": 0.48, "resumed_from_step": 32}, None)  # new node
    tune_rows = pd.DataFrame([{"step": 48, "eval/accuracy": 0.48, "resumed_from_step": 32}])
    result = tune.Result(
        metrics=tune_rows.iloc[-1].to_dict(),
        checkpoint=None,
        error=None,
        path="raycomp/runs/resumed",
        metrics_dataframe=tune_rows,
        _storage_filesystem=filesystem,
    )
    assert [row["step"] for row in trial_history(result)] == [16, 32, 48]
