"""Run structure: a tagged parent per sweep or training, children per trial, found again on restore."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from mlflow import MlflowClient

from raycomp.config import ExperimentConfig
from raycomp.tracking import close_trial_run, end_run, find_trial_run, start_run, start_trial_run
from raycomp.tracking.runs import RUN_KEY_TAG, TRIAL_TAG

SB = "algorithms.selective_backprop"


def config(tmp_path, **changes) -> ExperimentConfig:
    data = {
        "name": "runs",
        "storage_path": str(tmp_path / "runs"),
        "algorithms": {"selective_backprop": {"keep": 0.3}},
        "tracking": {"tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}"},
    }
    return ExperimentConfig.from_dict({**data, **changes})


def test_a_sweep_run_is_tagged_with_versions_file_commit_and_holds_the_resolved_yaml(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(tmp_path),
            "-c",
            "user.email=a@b",
            "-c",
            "user.name=a",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        check=True,
    )
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    experiment_file = tmp_path / "sweep.yaml"
    ref = start_run(config(tmp_path), kind="sweep", experiment_file=str(experiment_file))
    client = MlflowClient(ref.tracking_uri)
    run = client.get_run(ref.run_id)
    tags = run.data.tags
    assert tags["raycomp.experiment_file"] == str(experiment_file)
    assert tags["mlflow.source.git.commit"] == head.strip()
    assert all(tags[f"raycomp.version.{name}"] not in ("", "unknown") for name in ("raycomp", "ray", "torch", "mlflow"))
    assert run.info.status == "RUNNING" and run.info.run_name == "runs"
    local = Path(client.download_artifacts(ref.run_id, "config.yaml", str(tmp_path)))
    assert ExperimentConfig.from_dict(yaml.safe_load(local.read_text())) == config(tmp_path)


def test_no_commit_tag_outside_git_and_a_resumed_sweep_reopens_its_unfinished_run(tmp_path):
    first = start_run(config(tmp_path), kind="sweep", experiment_file="/nonexistent/x.yaml")
    client = MlflowClient(first.tracking_uri)
    assert "mlflow.source.git.commit" not in client.get_run(first.run_id).data.tags
    assert client.get_run(first.run_id).data.tags[RUN_KEY_TAG].startswith("sweep:")
    end_run(first, "KILLED")  # Ctrl-C
    again = start_run(config(tmp_path), kind="sweep", reopen=True)
    assert again.run_id == first.run_id and client.get_run(first.run_id).info.status == "RUNNING"
    end_run(again, "FINISHED")
    assert start_run(config(tmp_path), kind="sweep", reopen=True).run_id != first.run_id  # finished: a new one


def test_trial_runs_nest_under_the_parent_with_flat_params_and_required_on_load_tags(tmp_path):
    parent = start_run(config(tmp_path), kind="sweep")
    trial_config = config(tmp_path, tracking={"tracking_uri": parent.tracking_uri, "experiment_name": "x" * 7000})
    child = start_trial_run(parent, "t_00001", "method", trial_config)
    client = MlflowClient(parent.tracking_uri)
    run = client.get_run(child.run_id)
    assert run.data.tags["mlflow.parentRunId"] == parent.run_id and run.data.tags[TRIAL_TAG] == "t_00001"
    assert run.data.params[f"{SB}.keep"] == "0.3" and run.data.params[f"{SB}.interrupt"] == "2"  # defaults too
    assert len(run.data.params["tracking.experiment_name"]) == 6000  # MLflow's limit, cut with "..."
    assert run.data.tags["raycomp.algorithm.selective_backprop.required_on_load"] == "false"
    # A restored trial (same id) continues its run.
    assert start_trial_run(parent, "t_00001", "method", trial_config).run_id == child.run_id
    assert find_trial_run(parent, "t_00001") == child and find_trial_run(parent, "t_00002") is None


def test_a_trial_run_ends_finished_only_after_its_final_report(tmp_path):
    parent = start_run(config(tmp_path), kind="sweep")
    client = MlflowClient(parent.tracking_uri)
    stopped, done, broken = (start_trial_run(parent, f"t{i}", "method", config(tmp_path)) for i in range(3))
    client.log_metric(stopped.run_id, "finished", 0.0)
    client.log_metric(done.run_id, "finished", 1.0)
    close_trial_run(stopped, failed=False)
    close_trial_run(done, failed=False)
    close_trial_run(broken, failed=True)
    assert [client.get_run(r.run_id).info.status for r in (stopped, done, broken)] == ["KILLED", "FINISHED", "FAILED"]
    close_trial_run(done, failed=True, only_if_running=True)  # the driver's late callback changes nothing
    assert client.get_run(done.run_id).info.status == "FINISHED"
