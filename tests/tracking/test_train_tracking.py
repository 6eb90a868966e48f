"""`python -m raycomp.train` as one MLflow run, and `--resume-from runs:/<id>` honouring required_on_load."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from helpers import popen_ctrl_c_reaches
from mlflow import MlflowClient

from raycomp.cli.train import main

SB = "algorithms.selective_backprop"
REPO = Path(__file__).parents[2]


def experiment(tmp_path: Path, **changes) -> dict:
    data = {
        "name": "one",
        "data": {"num_train": 256, "num_test": 128, "batch_size": 32},
        "max_duration": "2ep",
        "schedule": {"name": "constant"},
        "algorithms": {"selective_backprop": {"start": 0.0, "end": 1.0, "keep": 0.5, "interrupt": 0}},
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "1ep", "num_to_keep": 1},
        "storage_path": str(tmp_path / "runs"),
    }
    data.update(changes)
    return data


def write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def only_run(tmp_path: Path, name: str = "one"):
    client = MlflowClient(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name(name).experiment_id])
    assert len(runs) == 1
    return client, runs[0]


def test_a_local_run_is_one_finished_run_with_step_metrics_traces_and_checkpoints(tmp_path, capsys):
    assert main([str(write(tmp_path / "one.yaml", experiment(tmp_path)))]) == 0
    client, run = only_run(tmp_path)
    run_id = run.info.run_id
    assert run.info.status == "FINISHED" and f"MLflow run {run_id}" in capsys.readouterr().out
    assert run.data.params[f"{SB}.keep"] == "0.5" and run.data.params["max_duration"] == "2ep"
    assert run.data.tags["raycomp.algorithm.selective_backprop.required_on_load"] == "false"
    # Every step's loss, lr and SelectiveBackprop's selection; every report's eval, throughput and wall time.
    steps = 2 * 256 // 32
    for key in ("train/loss", "trainer/lr"):  # logged once the step is done: steps 1..N
        assert sorted(m.step for m in client.get_metric_history(run_id, key)) == list(range(1, steps + 1)), key
    for key in ("selective_backprop/fraction_kept", "selective_backprop/selection_s"):  # during the step: 0..N-1
        assert sorted(m.step for m in client.get_metric_history(run_id, key)) == list(range(steps)), key
    for key in ("eval/accuracy", "eval/loss", "throughput/samples_per_s", "time/train_wall_s", "epoch"):
        assert [m.step for m in client.get_metric_history(run_id, key)] == [steps // 2, steps], key
    assert run.data.metrics["selective_backprop/fraction_kept"] == 0.5
    # The Engine's traces: as metrics and as a table.
    assert run.data.metrics["trace/SelectiveBackprop/after_dataloader/count"] == steps
    assert run.data.metrics["trace/SelectiveBackprop/after_dataloader/total_s"] > 0
    table = json.loads(Path(client.download_artifacts(run_id, "traces.json", str(tmp_path))).read_text())
    rows = {(row[0], row[1]): dict(zip(table["columns"], row, strict=True)) for row in table["data"]}
    selection = rows[("SelectiveBackprop", "after_dataloader")]
    assert selection["count"] == steps and selection["mean_s"] == pytest.approx(selection["total_s"] / steps)
    # Checkpoints: the newest (num_to_keep: 1) and the best by eval/accuracy, pointed at by tags.
    tags = run.data.tags
    assert tags["raycomp.loop.checkpoint.latest"] == f"checkpoints/step_{steps:08d}/checkpoint.pt"
    kept = {entry.path for entry in client.list_artifacts(run_id, "checkpoints")}
    assert kept == {
        str(Path(tags["raycomp.loop.checkpoint.latest"]).parent),
        str(Path(tags["raycomp.loop.checkpoint.best"]).parent),
    }
    assert float(tags["raycomp.loop.checkpoint.best_value"]) == max(
        m.value for m in client.get_metric_history(run_id, "eval/accuracy")
    )
    assert (
        yaml.safe_load(Path(client.download_artifacts(run_id, "config.yaml", str(tmp_path))).read_text())["name"]
        == "one"
    )


def test_tracking_off_logs_nothing(tmp_path):
    assert main([str(write(tmp_path / "one.yaml", experiment(tmp_path, tracking={"enabled": False})))]) == 0
    assert not (tmp_path / "runs" / "mlflow.db").exists()


def test_resume_from_a_run_continues_from_its_latest_checkpoint(tmp_path, capsys):
    assert main([str(write(tmp_path / "one.yaml", experiment(tmp_path)))]) == 0
    _, first = only_run(tmp_path)
    capsys.readouterr()
    longer = write(tmp_path / "two.yaml", experiment(tmp_path, name="two", max_duration="3ep"))
    assert main([str(longer), "--resume-from", f"runs:/{first.info.run_id}"]) == 0
    out = capsys.readouterr().out
    assert "starting from runs:/" in out and '"resumed_from_step": 16' in out and '"epoch": 3' in out
    client = MlflowClient(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    second = client.search_runs([client.get_experiment_by_name("two").experiment_id])[0]
    assert second.data.tags["raycomp.resumed_from"] == f"runs:/{first.info.run_id}"
    assert [m.step for m in client.get_metric_history(second.info.run_id, "eval/accuracy")] == [24]


def test_resume_from_a_bare_run_id_or_its_best_checkpoint(tmp_path, capsys):
    assert main([str(write(tmp_path / "one.yaml", experiment(tmp_path)))]) == 0
    _, first = only_run(tmp_path)
    for name, reference in (("bare", first.info.run_id), ("best", f"runs:/{first.info.run_id}/best")):
        path = write(tmp_path / f"{name}.yaml", experiment(tmp_path, name=name, max_duration="3ep"))
        assert main([str(path), "--resume-from", reference]) == 0
        assert '"epoch": 3' in capsys.readouterr().out


@pytest.mark.parametrize(
    ("reference", "message"),
    [("nonsense", "not an MLflow run id"), ("runs:/" + "0" * 32, "no MLflow run")],
)
def test_a_bad_resume_reference_exits_2_before_training(tmp_path, capsys, reference, message):
    path = write(tmp_path / "one.yaml", experiment(tmp_path))
    assert main([str(path), "--resume-from", reference]) == 2
    assert message in capsys.readouterr().err
    assert not list((tmp_path / "runs").glob("one/checkpoint_*"))


def test_a_checkpoint_with_blurpool_is_refused_without_it_and_recreated_on_request(tmp_path, capsys):
    with_blurpool = experiment(tmp_path, algorithms={"blurpool": {"min_channels": 1}})
    assert main([str(write(tmp_path / "one.yaml", with_blurpool))]) == 0
    _, first = only_run(tmp_path)
    assert first.data.tags["raycomp.algorithm.blurpool.required_on_load"] == "true"
    reference = f"runs:/{first.info.run_id}"
    capsys.readouterr()

    plain = write(tmp_path / "plain.yaml", experiment(tmp_path, name="plain", max_duration="3ep", algorithms={}))
    assert main([str(plain), "--resume-from", reference]) == 2
    err = capsys.readouterr().err
    assert "BlurPool" in err and "required_on_load" in err and "--recreate-required" in err
    assert not (tmp_path / "runs" / "plain" / "checkpoint_000000").exists()

    assert main([str(plain), "--resume-from", reference, "--recreate-required"]) == 0
    assert '"epoch": 3' in capsys.readouterr().out
    kept = write(tmp_path / "kept.yaml", {**with_blurpool, "name": "kept", "max_duration": "3ep"})
    assert main([str(kept), "--resume-from", reference]) == 0


@pytest.mark.subprocess_cli  # its last run is `python -m raycomp.train` in a process of its own
def test_two_workers_fetch_the_mlflow_checkpoint_themselves_then_resume_from_rays_until_ctrl_c(
    tmp_path, local_ray, capsys
):
    """A local run's MLflow checkpoint continued under DDP (each worker downloads it); then that Ray Train run, made
    longer, continued from its own checkpoint in Ray's storage, which comes before ``--resume-from``'s, as a
    command of its own stopped by Ctrl-C. Ray Train's own SIGINT handler aborted the run and exited with 1 and no
    word; raycomp says it as in local mode (exit 130, `interrupted`, its MLflow run KILLED), and the checkpoints
    written so far stay for the rerun to resume from. (One run for both: each Ray Train run starts a worker group,
    seconds of CPU.)"""
    assert main([str(write(tmp_path / "one.yaml", experiment(tmp_path)))]) == 0
    _, first = only_run(tmp_path)
    ddp = write(tmp_path / "ddp.yaml", experiment(tmp_path, name="ddp", max_duration="3ep", scaling={"num_workers": 2}))
    resume_from = ["--resume-from", f"runs:/{first.info.run_id}"]
    assert main([str(ddp), *resume_from]) == 0
    out = capsys.readouterr().out
    assert '"resumed_from_step": 16' in out and '"epoch": 3' in out and '"workers": 2' in out
    client, run = only_run(tmp_path, "ddp")
    assert run.info.status == "FINISHED" and client.list_artifacts(run.info.run_id, "checkpoints")

    # Same name, longer run: resumes from Ray's checkpoint at epoch 3. 256 samples over 2 ranks of 32 per step are
    # 4 steps an epoch, so it trains from step 20 + 1 (from the MLflow checkpoint it would train from 16 + 1).
    folder = tmp_path / "runs" / "ddp"
    kept = set(folder.glob("checkpoint_*"))
    command = [sys.executable, "-m", "raycomp.train", str(ddp), *resume_from, "--set", "max_duration=200ep"]
    longer = popen_ctrl_c_reaches(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while not set(folder.glob("checkpoint_*")) - kept and longer.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert longer.poll() is None, longer.stdout.read().decode()[-3000:]
    longer.send_signal(signal.SIGINT)
    output = longer.communicate(timeout=120)[0].decode()
    assert longer.returncode == 130 and output.rstrip().endswith("interrupted"), output[-3000:]
    runs = client.search_runs([client.get_experiment_by_name("ddp").experiment_id], order_by=["start_time ASC"])
    assert [r.info.status for r in runs] == ["FINISHED", "KILLED"], output[-3000:]
    trained = sorted(m.step for m in client.get_metric_history(runs[-1].info.run_id, "train/loss"))
    assert trained and trained[0] == 21, trained  # the step after Ray's checkpoint
    assert set(folder.glob("checkpoint_*")) - kept  # what it wrote before the Ctrl-C stays


@pytest.fixture
def regression(user_project, monkeypatch):
    """The user's project with a regression module (tests/user_code.py), run from its folder as a user would."""
    from user_code import REGRESSION_MODULE

    (user_project / "my_project" / "regression.py").write_text(REGRESSION_MODULE)
    monkeypatch.chdir(user_project)
    return user_project


def test_a_regression_run_logs_its_own_metric_and_no_accuracy(tmp_path, regression):
    """Issue 32 item 3: a RaycompModel's eval/mae is the run's objective (its best checkpoint), and a model without
    class labels logs no eval/accuracy."""
    sb = {"start": 0.0, "end": 1.0, "keep": 0.5, "interrupt": 0, "scale_factor": 1.0}  # feature rows: no resizing
    data = experiment(
        tmp_path,
        model={"class_path": "my_project.regression.SumRegression"},
        data={"class_path": "my_project.regression.sums", "batch_size": 16},
        optimizer={"name": "adam", "lr": 0.01},
        algorithms={"selective_backprop": sb},
        sweep={"metric": "eval/mae", "mode": "min"},
    )
    assert main([str(write(tmp_path / "one.yaml", data))]) == 0
    client, run = only_run(tmp_path)
    assert "eval/accuracy" not in run.data.metrics and "eval/loss" in run.data.metrics
    maes = [point.value for point in client.get_metric_history(run.info.run_id, "eval/mae")]
    assert len(maes) == 2 and all(value > 0 for value in maes)
    assert float(run.data.tags["raycomp.loop.checkpoint.best_value"]) == min(maes)  # ranked by eval/mae, min
    params = run.data.params
    assert params["optimizer.name"] == "adam" and "optimizer.momentum" not in params  # SGD's only
    assert params["data.batch_size"] == "16" and "model.num_classes" not in params  # raycomp's loader; no classes


def test_params_are_the_settings_a_user_data_module_and_model_train_with(tmp_path, regression):
    """Issue 32 item 6: a data module batching by 32 and a 3-class model are recorded as such, not as the built-in
    defaults (data.batch_size 128, model.num_classes 10), and the built-in readers' settings are left out."""
    data = experiment(
        tmp_path,
        model={"class_path": "my_project.regression.three_classes"},
        data={"class_path": "my_project.regression.LabelledModule"},
        algorithms={},
    )
    assert main([str(write(tmp_path / "one.yaml", data))]) == 0
    _, run = only_run(tmp_path)
    params = run.data.params
    assert params["model.class_path"] == "my_project.regression.three_classes"
    assert params["data.class_path"] == "my_project.regression.LabelledModule"
    assert params["data.batch_size"] == params["data.eval_batch_size"] == "32" and params["data.num_workers"] == "0"
    assert params["model.num_classes"] == "3"
    for unread in ("data.num_train", "data.num_test", "data.seed", "data.image_size", "data.seq_len", "model.d_model",
                   "model.n_heads", "schedule.warmup_fraction", "schedule.gamma"):  # fmt: skip
        assert unread not in params, unread
    assert params["optimizer.momentum"] == "0.9" and params["schedule.name"] == "constant"  # what applied stays
