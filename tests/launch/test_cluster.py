"""Ray Train runs of a config: DDP over 2 workers follows the run in one process at the same global batch. And the
private local Ray a command starts: out of the command's process group (D1, D8), in a temporary folder of its own
(D14)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
import yaml

from raycomp.config import ExperimentConfig


def plain_config(tmp_path, name: str, workers: int, batch_size: int) -> ExperimentConfig:
    return ExperimentConfig.from_dict(
        {
            "name": name,
            "model": {"name": "cnn_plain"},  # no BatchNorm or Dropout: the loss does not depend on the split
            "data": {"num_train": 256, "num_test": 128, "batch_size": batch_size},
            "max_duration": "6ba",
            "eval": {"interval": "2ba"},
            "checkpoint": {"interval": "2ba", "num_to_keep": None},
            "scaling": {"num_workers": workers},
            "storage_path": str(tmp_path),
        }
    )


@pytest.mark.measured
def test_two_workers_follow_one_process_at_the_same_global_batch(tmp_path, local_ray):
    """Ray Train's worker group (sharding, DDP's averaged gradients, rank 0's reports) against the same recipe
    trained in this process: tests/test_trainer_ddp.py checks the Trainer's DDP alone, without Ray."""
    from ray.util.state import list_actors

    from raycomp.launch.cluster import torch_trainer
    from raycomp.launch.sinks import FolderSink
    from raycomp.launch.spec import TrialSpec
    from raycomp.launch.worker import run_in_process
    from raycomp.loop.checkpoint import KeptCheckpoints

    result = torch_trainer(TrialSpec.of(plain_config(tmp_path, "double", 2, 32)), "double", str(tmp_path)).fit()
    double = [metrics for _, metrics in sorted(result.best_checkpoints, key=lambda pair: pair[1]["step"])]
    ray_here = local_ray.get_runtime_context().gcs_address  # not the other pytest-xdist worker's Ray
    started = {actor.class_name for actor in list_actors(address=ray_here)}
    assert "TrainController" in started and "PreemptionWatcher" not in started  # not on a private local Ray
    sink = FolderSink(KeptCheckpoints(tmp_path / "single"))
    run_in_process(TrialSpec.of(plain_config(tmp_path, "single", 0, 64)), sink)
    single = sink.history
    assert [m["step"] for m in single] == [m["step"] for m in double] == [2, 4, 6]
    assert [m["samples"] for m in single] == [m["samples"] for m in double] == [128, 256, 384]
    assert double[-1]["workers"] == 2
    # Two workers against one process: losses 5e-8 to 1.6e-7 apart, accuracies equal, over seeds 0-2 x kernels
    # default, AVX2, AVX-512 in the workers too (issue 29); rel=1e-4 is 600 times the largest, 1/128 one image.
    for one, two in zip(single, double, strict=True):
        assert two["train/loss"] == pytest.approx(one["train/loss"], rel=1e-4)
        assert two["eval/loss"] == pytest.approx(one["eval/loss"], rel=1e-4)
        assert two["eval/accuracy"] == pytest.approx(one["eval/accuracy"], abs=1 / 128)


def test_two_workers_train_with_blurpool_and_layer_freezing_under_ddp(tmp_path, local_ray):
    """Model surgery before DDP, and frozen layers that DDP must know to skip (find_unused_parameters)."""
    import torch

    from raycomp.launch.cluster import torch_trainer
    from raycomp.launch.spec import TrialSpec
    from raycomp.loop.checkpoint import load_checkpoint

    config = ExperimentConfig.from_dict(
        {
            "name": "surgery",
            "data": {"num_train": 256, "num_test": 128, "batch_size": 32},
            "max_duration": "3ep",
            "checkpoint": {"interval": "1ep", "num_to_keep": None},
            "algorithms": {
                "blurpool": {"min_channels": 1},
                "layer_freezing": {"freeze_start": 0.3, "freeze_level": 0.5},
            },
            "scaling": {"num_workers": 2},
            "storage_path": str(tmp_path),
        }
    )
    result = torch_trainer(TrialSpec.of(config), "surgery", str(tmp_path)).fit()
    history = sorted(result.best_checkpoints, key=lambda pair: pair[1]["step"])
    assert [metrics["epoch"] for _, metrics in history] == [1, 2, 3] and history[-1][1]["workers"] == 2
    assert history[-1][1]["finished"] and history[-1][1]["train/loss"] > 0
    states = []
    for checkpoint, _ in history:
        with checkpoint.as_directory() as folder:
            states.append(load_checkpoint(f"{folder}/checkpoint.pt")["state"])
    model = states[-1]["model"]
    assert any(key.endswith(".filt2d") for key in model)  # BlurPool's BlurMaxPool2d is in the trained model
    by_name = [{entry["class_path"].rsplit(".", 1)[-1]: entry for entry in state["algorithms"]} for state in states]
    assert by_name[-1]["BlurPool"]["required_on_load"]
    frozen = [algorithms["LayerFreezing"]["state"]["num_frozen_layers"] for algorithms in by_name]
    assert frozen[0] <= frozen[1] <= frozen[2] and frozen[2] > 0
    # The first layer, frozen after epoch 1 or 2, did not change in the last epoch on any rank's copy.
    first = next(key for key in model if key.endswith("weight"))
    assert torch.equal(states[-2]["model"][first], model[first])


# ---- the private local Ray of a command ----------------------------------------------------------------------


def sweep_file(storage: Path, name: str = "sweep") -> Path:
    """A sweep of two trials, one after another (3 epochs, a checkpoint each), tracked in a SQLite store."""
    config = {
        "name": name,
        "data": {"num_train": 256, "num_test": 128, "batch_size": 64},
        "max_duration": "3ep",
        "algorithms": {"selective_backprop": {"start": 0.0, "end": 1.0, "keep": 0.5, "interrupt": 0}},
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "1ep"},
        "storage_path": str(storage),
        "tracking": {"tracking_uri": f"sqlite:///{storage / 'mlflow.db'}"},
        "sweep": {"space": {"algorithms.selective_backprop.keep": {"grid": [0.5]}}, "max_concurrent_trials": 1},
    }
    path = storage / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def start_sweep(path: Path, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, Path]:
    """``python -m raycomp.tune`` in a session of its own, as `timeout`, systemd or Slurm start a command."""
    log = path.with_suffix(".log")
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "raycomp.tune", str(path), "--no-report"],
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            start_new_session=True,
        )
    return process, log


def wait_for(process: subprocess.Popen, ready, seconds: float = 180) -> bool:
    """Whether ``ready()`` came true while ``process`` still ran."""
    deadline = time.monotonic() + seconds
    while process.poll() is None and time.monotonic() < deadline:
        if ready():
            return True
        time.sleep(0.05)
    return False


def group_signalled(process: subprocess.Popen, signum: int) -> int:
    """Sends ``signum`` to the command's whole process group, as `timeout` does; its exit code. Whatever the
    group left is SIGKILLed after."""
    try:
        os.killpg(process.pid, signum)
        return process.wait(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def run_statuses(storage: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(storage / "mlflow.db")) as store:
        return [status for (status,) in store.execute("select status from runs")]


@pytest.mark.subprocess_cli
def test_d1_d14_sigterm_to_the_whole_process_group_ends_a_sweep_as_ctrl_c_does_and_leaves_no_ray_folder(tmp_path):
    """Reliability notes D1: `timeout`, systemd and Slurm send SIGTERM to the command's whole process group. The
    private Ray's GCS and raylet were in it and died at once; the driver hung 60 s without its GCS, died with exit
    1, left its MLflow runs RUNNING and printed no --resume command. Ray now runs in a session of its own.

    D14, shown by the same command (one private Ray, not two): each command's private Ray left its session (logs,
    sockets, copies of the sweep's state, a megabyte or more) in $TMPDIR/ray for good. Its folder is raycomp's now,
    $TMPDIR/raycomp-ray-<pid>, removed at the end, here an end by SIGTERM (and, if the command was killed outright,
    by the next one: tests/base/test_scratch.py)."""
    scratch = Path(tempfile.mkdtemp(prefix="d14-", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
    try:
        path = sweep_file(tmp_path)
        process, log = start_sweep(path, env={"TMPDIR": str(scratch)})
        checkpointed = wait_for(process, lambda: any((tmp_path / "sweep").glob("*/checkpoint_0*")))
        assert checkpointed, log.read_text()[-3000:]
        sessions = [folder for folder in scratch.glob("*/session_2*") if not folder.is_symlink()]
        began = time.monotonic()
        code = group_signalled(process, signal.SIGTERM)
        output = log.read_text()
        # How long it took is printed, not bounded (issue 29): the defect was exit 1 after a 60 s hang without the
        # GCS, which exit 130 and the --resume line below tell apart; a bound in seconds failed only busy machines.
        print(f"SIGTERM -> exit {code}: {time.monotonic() - began:.1f} s")
        assert code == 130, output[-3000:]
        assert f"python -m raycomp.tune {path} --no-report --resume" in output and "Traceback" not in output
        statuses = run_statuses(tmp_path)
        assert statuses and "RUNNING" not in statuses, statuses
        (session,) = sessions  # while the sweep ran: its Ray's one session, in the command's own folder
        assert session.parent.parent == scratch and session.parent.name == f"raycomp-ray-{process.pid}"
        # No $TMPDIR/ray/session_* left, and the command's folder is gone (torch's compile cache, which the trials'
        # torch makes in TMPDIR, is not Ray's).
        assert [entry.name for entry in scratch.iterdir() if entry.name != "torchinductor_root"] == []
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.subprocess_cli
def test_d8_sigterm_while_the_private_ray_starts_is_an_interrupt_that_leaves_nothing_in_the_way(tmp_path):
    """Reliability notes D8: SIGTERM to a new sweep before Tune started (here while `ray.init` starts its GCS)
    reached Ray's handler (exit 15, no --resume command) and left training_config.json, so the same command was
    refused with `holds a sweep already`. Now it is Ctrl-C: exit 130, the command, runs KILLED, no record."""
    path = sweep_file(tmp_path)
    process, log = start_sweep(path)

    def gcs_started() -> bool:
        with contextlib.suppress(psutil.Error):
            return any("gcs_server" in child.name() for child in psutil.Process(process.pid).children(recursive=True))
        return False

    assert wait_for(process, gcs_started, seconds=120), log.read_text()[-3000:]
    code = group_signalled(process, signal.SIGTERM)
    output = log.read_text()
    assert code == 130, output[-3000:]
    assert f"python -m raycomp.tune {path} --no-report --resume" in output and "Traceback" not in output
    assert not (tmp_path / "sweep" / "training_config.json").exists()  # the same command starts it again
    assert "RUNNING" not in run_statuses(tmp_path)
