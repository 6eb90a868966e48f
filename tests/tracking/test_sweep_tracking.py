"""A sweep in MLflow: against a real `mlflow server` checked through its REST API, trials the scheduler
stops end KILLED, and training goes on when the server goes away mid-run."""

from __future__ import annotations

import json
import os
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from mlflow import MlflowClient

SB = "algorithms.selective_backprop"


def tiny_sweep(tmp_path: Path, **changes: Any) -> dict:
    experiment = {
        "name": "tiny",
        "data": {"num_train": 256, "num_test": 128, "batch_size": 64},
        "max_duration": "2ep",
        "algorithms": {"selective_backprop": {"start": 0.0, "end": 1.0, "keep": 0.5, "interrupt": 0}},
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "1ep"},
        "storage_path": str(tmp_path / "runs"),
        "sweep": {"space": {f"{SB}.keep": {"grid": [0.25, 0.75]}}},
    }
    experiment.update(changes)
    return experiment


def rest(server_uri: str, endpoint: str, body: dict | None = None, **query: str) -> Any:
    url = f"{server_uri}/{endpoint}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        raw = response.read()
    return json.loads(raw) if raw.strip().startswith((b"{", b"[")) else raw


def _contents(path: Path) -> bytes:
    """A file's bytes, or none where Ray's live session replaced or removed it since the listing (its `tmp_*` files
    are rewritten by rename while the head runs), or where it is too large to be a pickled callback or a config."""
    try:
        return path.read_bytes() if path.is_file() and path.stat().st_size < 50e6 else b""  # not Ray's sockets
    except FileNotFoundError:
        return b""


def test_a_sweep_on_a_real_mlflow_server_has_a_parent_and_a_child_per_trial_and_its_password_in_no_file(
    tmp_path, tracking_server, local_ray, monkeypatch
):
    """What a sweep leaves on a server, read through its REST API; and, with a password in `tracking.tracking_uri`,
    that password in no file of the sweep nor of Ray's session (reliability notes D11: it was pickled into
    tuner.pkl, mode 0644, with Tune's callback, and copied into Ray's session folder; Tune and the trials now get
    the run's reference without it, and MLflow's variables carry it, as in the driver)."""
    from raycomp.cli.tune import main

    server = tracking_server.uri
    secret = "s3cretPW"
    for name, value in (("MLFLOW_TRACKING_USERNAME", "alice"), ("MLFLOW_TRACKING_PASSWORD", secret)):
        monkeypatch.setenv(name, value)  # what the URI sets in this process; unset again after the test

    experiment = tiny_sweep(tmp_path, tracking={"tracking_uri": server.replace("http://", f"http://alice:{secret}@")})
    experiment["sweep"]["max_concurrent_trials"] = 1  # one trial process: a second costs more CPU than it saves
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(experiment))
    assert main([str(path)]) == 0
    session = Path(local_ray._private.worker._global_node.get_session_dir_path())
    files = [  # os.walk, unlike rglob, passes over a folder the live session removes during the walk
        Path(root, name)
        for folder in (tmp_path / "runs" / "tiny", session)
        for root, _, names in os.walk(folder)
        for name in names
    ]
    assert any(p.name == "tuner.pkl" for p in files)
    holding = [p for p in files if not p.is_symlink() and secret.encode() in _contents(p)]
    assert holding == []

    api = "api/2.0/mlflow"
    experiment_id = rest(server, f"{api}/experiments/get-by-name", experiment_name="tiny")["experiment"][
        "experiment_id"
    ]
    runs = rest(server, f"{api}/runs/search", {"experiment_ids": [experiment_id]})["runs"]
    tags = [{t["key"]: t["value"] for t in run["data"].get("tags", [])} for run in runs]
    parents = [run for run, tag in zip(runs, tags, strict=True) if "mlflow.parentRunId" not in tag]
    assert len(parents) == 1
    parent = parents[0]["info"]
    assert parent["status"] == "FINISHED" and parent["run_name"] == "tiny"
    children = [
        (run, tag) for run, tag in zip(runs, tags, strict=True) if tag.get("mlflow.parentRunId") == parent["run_id"]
    ]
    assert len(children) == 3 and len(runs) == 4

    keeps = []
    for run, tag in children:
        info, data = run["info"], run["data"]
        params = {p["key"]: p["value"] for p in data["params"]}
        metrics = {m["key"]: m["value"] for m in data["metrics"]}
        assert info["status"] == "FINISHED"
        assert 0 <= metrics["eval/accuracy"] <= 1 and metrics["train/loss"] > 0 and metrics["finished"] == 1.0
        files = {f["path"] for f in rest(server, f"{api}/artifacts/list", run_id=info["run_id"])["files"]}
        assert {"traces.json", "checkpoints"} <= files
        checkpoint = tag["raycomp.loop.checkpoint.latest"]
        listed = rest(server, f"{api}/artifacts/list", run_id=info["run_id"], path=str(Path(checkpoint).parent))
        assert [f["path"] for f in listed["files"]] == [checkpoint] and int(listed["files"][0]["file_size"]) > 0
        table = rest(server, "get-artifact", path="traces.json", run_uuid=info["run_id"])
        if tag["raycomp.variant"] == "method":
            keeps.append(params[f"{SB}.keep"])
            assert metrics["trace/SelectiveBackprop/after_dataloader/total_s"] > 0
            assert ["SelectiveBackprop", "after_dataloader"] in [row[:2] for row in table["data"]]
        else:
            assert f"{SB}.keep" not in params and table["data"] == []  # the baseline runs no algorithm
    assert sorted(keeps) == ["0.25", "0.75"]
    parent_files = {f["path"] for f in rest(server, f"{api}/artifacts/list", run_id=parent["run_id"])["files"]}
    assert {"config.yaml", "results.csv", "results.json"} <= parent_files


def test_trials_stopped_by_the_scheduler_end_killed_and_the_baseline_finished(tmp_path, local_ray):
    from raycomp.cli.tune import main

    asha = {"name": "asha", "grace_period": 1, "reduction_factor": 2, "max_t": 2}
    experiment = tiny_sweep(tmp_path, max_duration="4ep")
    experiment["sweep"]["scheduler"] = asha
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(experiment))
    assert main([str(path)]) == 0
    client = MlflowClient(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("tiny").experiment_id])
    ended = sorted((run.data.tags.get("raycomp.variant", "sweep"), run.info.status) for run in runs)
    assert ended == [("baseline", "FINISHED"), ("method", "KILLED"), ("method", "KILLED"), ("sweep", "FINISHED")]
    stopped = [run for run in runs if run.info.status == "KILLED"]
    for run in stopped:  # stopped at a rung (epoch 1 or 2 of 4); what they reported before the stop is there
        assert run.data.metrics["epoch"] in (1.0, 2.0) and run.data.metrics["finished"] == 0.0
        assert run.data.tags["raycomp.loop.checkpoint.latest"].endswith("checkpoint.pt")
