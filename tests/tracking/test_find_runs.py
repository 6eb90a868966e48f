"""A find's MLflow runs when the server dies mid-find (issue 30 item 5; h2 for the sweeps a find is made of): the
find trains on, untracked, and answers; once the server is back, `--resume` of the finished find sends the points the
open trial spilled, ends every run it left open, sets the stage tags the outage kept from the store, and puts the
answer on the parent run. No output nor Ray log shows the password in the server's URI (defect 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from find_experiments import shrunk
from mlflow import MlflowClient

from raycomp.cli import find as find_cli

pytestmark = [pytest.mark.ray]


def test_a_server_dying_mid_find_costs_no_trial_and_resume_leaves_every_run_ended_and_tagged(
    tmp_path, mlflow_server, local_ray, capsys
):
    import ray

    path = shrunk(tmp_path, "outage", control=False, max_concurrent_trials=1)
    secret = "s3cretPW"
    uri = mlflow_server.uri.replace("http://", f"http://alice:{secret}@")
    config = path.read_text().replace(str(f"sqlite:///{tmp_path / 'mlflow.db'}"), uri)
    path.write_text(config.replace("max_duration: 1ep", "max_duration: 3ep"))  # a trial trains a few seconds
    store = MlflowClient(f"sqlite:///{mlflow_server.folder / 'mlflow.db'}")  # the server's own backend

    def runs() -> list:
        return mlflow_server.runs("outage")

    killer = mlflow_server.stop_once_a_trial_run_opens("outage")
    assert find_cli.main([str(path)]) == 0
    killer.join(timeout=10)
    answer = json.loads((tmp_path / "outage" / "find.json").read_text())
    assert all(not arm["failed"] for arm in answer["tried"]), answer["tried"]  # trained on, untracked
    left_open = [r.info.run_id for r in runs() if r.info.status == "RUNNING" and r.data.tags["raycomp.kind"] == "trial"]
    assert left_open, "the server did not die while the find's first trial trained: make its trials longer"
    spilled = list((tmp_path / "outage").rglob("unsent_metrics/*.jsonl"))
    assert {file.stem for file in spilled} >= set(left_open), spilled

    mlflow_server.start()  # the server is back
    first_out, first_err = capsys.readouterr()
    assert find_cli.main([str(path), "--resume"]) == 0
    out, err = capsys.readouterr()
    assert "candidates (the stage each reached, and how it ended there):" in out
    assert {r.info.status for r in runs()} == {"FINISHED"}, [(r.info.run_name, r.info.status) for r in runs()]
    (parent,) = [r for r in runs() if r.data.tags.get("raycomp.kind") == "find"]  # the resume kept its run
    trials = [r for r in runs() if r.data.tags.get("raycomp.kind") == "trial"]
    assert trials and all(r.data.tags.get("raycomp.find.stage") in ("screen", "confirm") for r in trials)
    assert parent.data.tags["raycomp.find.verdict"] == (answer["verdict"] or {}).get("verdict", "none")
    assert all(store.get_metric_history(run_id, "train/loss") for run_id in left_open), "spilled points not sent"
    assert not list((tmp_path / "outage").rglob("unsent_metrics/*.jsonl"))

    printed = first_out + first_err + out + err
    logs = Path(ray._private.worker._global_node.get_session_dir_path()) / "logs"
    written = [p.read_text(errors="replace") for p in logs.rglob("*") if p.is_file() and p.stat().st_size < 50e6]
    assert "alice:***@" in printed and all(secret not in text for text in [printed, *written])


def test_a_first_attempt_that_failed_before_any_trial_leaves_no_parent_beside_the_next(tmp_path):
    """Issue 59 item 4: a find whose first attempt failed (Ray did not start) left a FAILED parent run, and a plain
    rerun made a second one beside it. The rerun takes the empty failed run over; one with trials is left alone."""
    from raycomp.config import ExperimentConfig
    from raycomp.tracking.find_runs import find_run

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    data = {
        "name": "f",
        "storage_path": str(tmp_path),
        "tracking": {"tracking_uri": uri},
        "find": {"methods": ["mixup"]},
    }
    config = ExperimentConfig.from_dict(data)
    with pytest.raises(RuntimeError), find_run(config, None, resume=False) as failed:
        raise RuntimeError("The current node timed out during startup")
    with find_run(config, None, resume=False) as again:
        pass
    client = MlflowClient(uri)
    assert again.ref.run_id == failed.ref.run_id and client.get_run(again.ref.run_id).info.status == "FINISHED"
    with pytest.raises(RuntimeError), find_run(config, None, resume=False) as third:  # this one trains a trial
        client.create_run(third.ref.experiment_id, tags={"mlflow.parentRunId": third.ref.run_id})
        raise RuntimeError("a trial's error")
    with find_run(config, None, resume=False) as fourth:
        pass
    assert fourth.ref.run_id != third.ref.run_id  # a find with trials is continued by --resume alone
