"""Tracking under faults and awkward input (issue 14; reproductions in the reliability notes): each test is
named after the defect it guards against."""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from helpers import MlflowServer
from mlflow import MlflowClient

from raycomp.base.errors import ConfigError, TrackingUnavailable
from raycomp.cli.train import main
from raycomp.config import ExperimentConfig
from raycomp.core import Callback, Logger, State
from raycomp.launch.sinks import FolderSink
from raycomp.launch.spec import TrialSpec
from raycomp.launch.worker import run_in_process
from raycomp.loop.checkpoint import KeptCheckpoints
from raycomp.tracking import MlflowCallback, train_run
from raycomp.tracking.client import BatchedClient
from raycomp.tracking.ref import RunRef, redacted_uri
from raycomp.tracking.search import quoted, tag_filter
from raycomp.tracking.store import health_url, open_experiment


def experiment(storage: Path, name: str = "one", **changes) -> dict:
    data = {
        "name": name,
        "data": {"num_train": 64, "num_test": 32, "batch_size": 32},
        "max_duration": "1ep",
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "1ep", "num_to_keep": 1},
        "storage_path": str(storage),
    }
    data.update(changes)
    return data


def write(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_m2_an_apostrophe_in_the_storage_path_tracks_and_reopens_the_run(tmp_path, capsys):
    storage = tmp_path / "O'Neil" / "runs"
    path = write(tmp_path / "one.yaml", experiment(storage))
    assert main([str(path)]) == 0
    assert main([str(path), "--set", "max_duration=2ep"]) == 0  # finds its run and checkpoint again by tag
    client = MlflowClient(f"sqlite:///{storage / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("one").experiment_id])
    assert len(runs) == 2 and {run.info.status for run in runs} == {"FINISHED"}
    assert "Invalid clause" not in capsys.readouterr().err


def test_m2_filters_quote_apostrophes_and_refuse_what_mlflow_cannot_express():
    assert quoted("plain") == "'plain'" and quoted("O'Neil") == '"O\'Neil"'
    assert tag_filter({"a": "x", "b": "y'z"}) == "tags.`a` = 'x' and tags.`b` = \"y'z\""
    with pytest.raises(ConfigError, match="both"):
        quoted("""it's "odd\"""")


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        ("http://alice:s3cretPW@127.0.0.1:5055", "http://alice:***@127.0.0.1:5055"),
        ("https://s3cretPW@host/mlflow?api_token=s3cretPW&x=1", "https://***@host/mlflow?api_token=***&x=1"),
        ("sqlite:////tmp/mlflow.db", "sqlite:////tmp/mlflow.db"),
        ("http://127.0.0.1:5000", "http://127.0.0.1:5000"),
    ],
)
def test_m3_a_uri_is_shown_without_its_credentials(uri, shown):
    assert redacted_uri(uri) == shown


def test_m3_credentials_in_the_tracking_uri_are_not_published(tmp_path, tracking_server, capsys):
    secret = "s3cretPW"
    uri = tracking_server.uri.replace("http://", f"http://alice:{secret}@")
    path = write(tmp_path / "one.yaml", experiment(tmp_path / "runs", tracking={"tracking_uri": uri}))
    assert main([str(path)]) == 0
    out, err = capsys.readouterr()
    assert secret not in out + err and "alice:***@" in out
    client = MlflowClient(tracking_server.uri)
    (run,) = client.search_runs([client.get_experiment_by_name("one").experiment_id])
    assert run.data.params["tracking.tracking_uri"] == redacted_uri(uri)
    assert secret not in "".join(run.data.params.values()) + "".join(run.data.tags.values())
    config = client.download_artifacts(run.info.run_id, "config.yaml", str(tmp_path))
    assert secret not in Path(config).read_text()


@contextlib.contextmanager
def hung_server() -> Iterator[str]:
    """A port that accepts connections and never answers: a server hung rather than down."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)  # connections wait in the backlog; nothing is ever read or written
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


@pytest.mark.measured
def test_m5_a_hung_server_costs_one_short_probe_per_report_not_each_sends_timeout(monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "3")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with hung_server() as uri:
        client = BatchedClient(RunRef(uri, "1", "a" * 32))
        client.log_metrics({"train/loss": 1.0}, 0)
        began = time.monotonic()
        assert not client.flush()  # the first send waits out its own timeout
        first = time.monotonic() - began
        began = time.monotonic()
        for _ in range(2):  # two more reports' sends: a metrics batch, tags and a table each
            assert not client.flush()
            assert not client.set_tags({"raycomp.loop.checkpoint.latest": "x"})
            assert not client.log_table(["a"], [[1]], "traces.json")
        later = time.monotonic() - began
    # Bounds against a busy machine (issue 29): first 3.04-3.09 s, its own 3 s timeout (a floor load cannot lower);
    # later 2.01-2.05 s at load 4-5, one probe of PROBE_TIMEOUT_S (2 s), against 18 s without it: 9 s, half of that.
    assert first >= 2.5, first
    assert later < 9, later  # one probe (then trusted); without it 6 sends x 3 s
    assert client.failures == 7 and len(client._points) == 1  # counted, and the point is still buffered


def test_m5_the_probe_goes_to_the_servers_health_endpoint_without_credentials():
    assert health_url("http://alice:pw@127.0.0.1:5000") == "http://127.0.0.1:5000/health"
    assert health_url("https://host/mlflow/") == "https://host/mlflow/health"
    assert health_url("sqlite:////tmp/mlflow.db") is None and health_url("databricks") is None


BUILD_STORE = """
import sys
from pathlib import Path
from raycomp.tracking.store import make_client
print("building", flush=True)
make_client(f"sqlite:///{Path(sys.argv[1])}")
print("built", flush=True)
"""


@pytest.mark.spawns
def test_m6_a_first_run_killed_while_creating_the_store_leaves_none_half_built(tmp_path):
    database = tmp_path / "runs" / "mlflow.db"
    empty_cache = {**os.environ, "RAYCOMP_CACHE_DIR": str(tmp_path / "cache")}  # no copy to make: MLflow migrates
    builder = subprocess.Popen(
        [sys.executable, "-c", BUILD_STORE, str(database)], stdout=subprocess.PIPE, text=True, env=empty_cache
    )
    assert builder.stdout.readline().strip() == "building"
    deadline = time.monotonic() + 60
    while not list(database.parent.glob("*mlflow.db*")) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # the file exists and MLflow's migrations (a second or more) are under way: kill them
    builder.kill()
    builder.wait()
    # Either nothing is there (killed mid-build) or a whole store (it was quicker): never half of one.
    config = ExperimentConfig.from_dict(experiment(tmp_path / "runs"))
    client, experiment_id = open_experiment(config)
    assert client.get_experiment(experiment_id).name == "one"


def test_m6_a_half_built_store_is_named_with_what_to_do(tmp_path):
    database = tmp_path / "runs" / "mlflow.db"
    database.parent.mkdir(parents=True)
    with sqlite3.connect(database) as connection:  # what an interrupted MLflow migration leaves
        connection.execute("CREATE TABLE datasets (dataset_uuid TEXT)")
    config = ExperimentConfig.from_dict(experiment(tmp_path / "runs"))
    with pytest.raises(TrackingUnavailable) as refused:
        open_experiment(config)
    message = str(refused.value)
    assert str(database) in message and "move the file aside" in message and "\n" not in message


class StopServerAtEpoch(Callback):
    def __init__(self, server: MlflowServer, epoch: int):
        self.server, self.epoch = server, epoch

    def epoch_start(self, state: State, logger: Logger) -> None:
        if state.timestamp.epoch == self.epoch and self.server.process.poll() is None:
            self.server.stop()


def test_l12_training_goes_on_when_the_server_goes_away_and_what_it_missed_is_sent_on_resume(
    tmp_path, mlflow_server, capsys, monkeypatch
):
    """The server stops at epoch 1: the run trains on and says so (its reports count the failed sends), what was
    sent before is in the store, and the points the outage kept from it are spilled and sent first by the run's
    next attempt (L12)."""
    # No retries against the dead server: the behaviour is the same, each failed send just returns at once
    # instead of after raycomp's default retries (tracking/store.py), which made this test take a minute.
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    data = experiment(tmp_path / "runs", max_duration="3ep", tracking={"tracking_uri": mlflow_server.uri})
    config = ExperimentConfig.from_dict(data)
    sink = FolderSink(KeptCheckpoints(tmp_path / "checkpoints"))
    with train_run(config, None) as run:
        run_in_process(TrialSpec.of(config, run=run.ref, callbacks=(StopServerAtEpoch(mlflow_server, 1),)), sink)
    assert [report["epoch"] for report in sink.history] == [1, 2, 3] and sink.history[-1]["finished"]
    assert sink.history[0]["tracking/failures"] == 0 and sink.history[-1]["tracking/failures"] > 0
    err = capsys.readouterr().err
    assert "MLflow metrics" in err and "training continues" in err
    assert f"could not mark MLflow run {run.ref.run_id}" in err
    steps_an_epoch = 64 // 32
    # What was sent before the server went away is in its store.
    stored = MlflowClient(f"sqlite:///{mlflow_server.folder / 'mlflow.db'}")
    assert [m.step for m in stored.get_metric_history(run.ref.run_id, "eval/accuracy")] == [steps_an_epoch]
    spilled = config.layout.unsent_metrics(run.ref.run_id)
    assert spilled.exists() and "sent when this run resumes" in err
    # The server comes back (on another port, the same store): the next attempt of the run sends them first.
    revived = MlflowServer(mlflow_server.folder)
    try:
        ref = RunRef(revived.uri, run.ref.experiment_id, run.ref.run_id)
        callback = MlflowCallback(ref, metric="eval/accuracy", mode="max", num_to_keep=1, spill_file=spilled)
        callback.close()
        history = MlflowClient(revived.uri).get_metric_history(run.ref.run_id, "train/loss")
    finally:
        revived.stop()
    assert sorted(m.step for m in history) == list(range(1, 3 * steps_an_epoch + 1))  # every step's loss, none lost
    assert not spilled.exists()
