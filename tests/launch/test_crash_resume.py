"""Crash-proof sweeps: `python -m raycomp.tune` killed outright, stopped by SIGTERM (handled as Ctrl-C) while its
private Ray starts or mid-sweep, or its Ray stopped under it, then `--resume`d, ends as an uninterrupted sweep
does; a trial killed outright is retried (`failure.max_failures`); `--extend` adds repeats to a finished sweep; a
rerun that would mix configs is refused.

Each interrupted sweep runs as a process of its own (in its own session, so SIGKILL to its group takes its
private Ray with it); the reference, never interrupted, runs in this process on the suite's Ray. Trials train in
the trial's process (num_workers 0) on CPU, so they are deterministic: the resumed sweep's final metrics must
equal the reference's bit for bit.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from helpers import built_store, command_here
from mlflow import MlflowClient

from raycomp.base import keys

pytestmark = [pytest.mark.ray, pytest.mark.subprocess_cli]

KEEP = "algorithms.selective_backprop.keep"
TRIALS = 4  # baseline and one method configuration, two repeats each
CHECKPOINTS_PER_TRIAL = 3  # 3 epochs, one checkpoint each: enough work left for five interruptions
TIMEOUT = 240


def experiment(storage: Path, name: str, repeats: int = 2) -> Path:
    config = {
        "name": name,
        "data": {"num_train": 256, "num_test": 128, "batch_size": 64},
        "max_duration": "3ep",
        "algorithms": {"selective_backprop": {"start": 0.0, "end": 1.0, "keep": 0.5, "interrupt": 0}},
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "1ep"},
        "failure": {"max_failures": 1},
        "storage_path": str(storage),
        "tracking": {"tracking_uri": f"sqlite:///{storage / 'mlflow.db'}"},
        "sweep": {"space": {KEEP: {"grid": [0.5]}}, "repeats": repeats, "max_concurrent_trials": 1},
    }
    path = storage / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


LOGS: dict[int, Path] = {}


def start(path: Path, *flags: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Starts the sweep in a session of its own, as `timeout`, systemd or Slurm start a command."""
    log = path.with_suffix(f".{time.monotonic_ns()}.log")
    command = [sys.executable, "-m", "raycomp.tune", str(path), "--no-report", *flags]
    environment = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    with log.open("w") as output:
        process = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, env=environment, start_new_session=True
        )
    LOGS[process.pid] = log
    return process


def finish(process: subprocess.Popen) -> int:
    """Waits for the sweep; then ends whatever its session left (its private Ray's helpers)."""
    try:
        return process.wait(timeout=TIMEOUT)
    finally:
        kill_group(process)


def kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def log_tail(process: subprocess.Popen) -> str:
    return LOGS[process.pid].read_text()[-3000:]


def checkpoints(folder: Path) -> int:
    return sum(1 for _ in folder.glob("**/checkpoint_0*")) if folder.is_dir() else 0


def holds(folder: Path, count: int) -> bool:
    """Whether the sweep's ``folder`` holds ``count`` checkpoints or more."""
    return checkpoints(folder) >= count


def final_metrics(
    storage: Path, name: str, ignored: frozenset[str] = frozenset()
) -> dict[tuple[str, int], dict[str, Any]]:
    """Per arm (config id, repeat): the sweep's metric from results.json, its curve (each evaluation's step
    and accuracy, once each: a resumed trial's curve has no gap and no repeat), and the trial's last MLflow
    values."""
    results = json.loads((storage / name / "results.json").read_text())["trials"]
    assert all(trial["status"] == "TERMINATED" for trial in results)
    children = {run.data.tags["raycomp.trial_id"]: run for run in sweep_runs(storage, name, ignored)[1]}
    metrics = {}
    for trial in results:
        run = children[trial["trial_id"]]
        arm = (trial["config_id"], int(trial["repeat"]))
        metrics[arm] = {
            "result": trial["eval/accuracy"],
            "curve": [(point["step"], point["eval/accuracy"]) for point in trial["curve"]],
        }
        metrics[arm] |= {key: run.data.metrics[key] for key in ("eval/accuracy", "eval/loss", "train/loss")}
    return metrics


def sweep_runs(storage: Path, name: str, ignored: frozenset[str] = frozenset()) -> tuple[list, list]:
    """The experiment's sweep runs and trial runs, checked: one sweep run, one child per trial, all FINISHED.
    ``ignored``: the runs of a sweep under the same name that was stopped before it started (ended KILLED)."""
    client = MlflowClient(f"sqlite:///{storage / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name(name).experiment_id], max_results=1000)
    runs = [run for run in runs if run.info.run_id not in ignored]
    parents = [run for run in runs if run.data.tags.get("raycomp.kind") == "sweep"]
    children = [run for run in runs if run.data.tags.get("raycomp.kind") == "trial"]
    assert len(parents) == 1, [run.info.status for run in parents]
    assert all(run.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for run in children)
    trial_ids = [run.data.tags["raycomp.trial_id"] for run in children]
    assert len(set(trial_ids)) == len(trial_ids)
    arms = [(run.data.tags["raycomp.config_id"], run.data.tags["raycomp.repeat"]) for run in children]
    assert len(set(arms)) == len(arms), "an arm has two runs"
    assert {run.info.status for run in runs} == {"FINISHED"}, [(r.info.run_name, r.info.status) for r in runs]
    return parents, children


def trained_steps(storage: Path, name: str) -> dict[str, tuple[int, str | None]]:
    """Per FINISHED trial run: how many training steps it logged (train/loss points, each step once even if
    trained twice) and the step it trained again from, if it did (the callback's tag)."""
    client = built_store(storage)
    experiment = client.get_experiment_by_name(name) if client is not None else None
    if experiment is None:
        return {}
    runs = client.search_runs([experiment.experiment_id], "tags.`raycomp.kind` = 'trial'", max_results=1000)
    return {
        run.info.run_id: (
            len(client.get_metric_history(run.info.run_id, "train/loss")),
            run.data.tags.get(keys.RETRAINED_FROM_TAG),
        )
        for run in runs
        if run.info.status == "FINISHED"
    }


def test_a_sweep_interrupted_every_way_resumes_to_the_sweep_grown_without_interruption(tmp_path, local_ray):
    """One sweep, interrupted each way a user's sweep is, `--resume`d after each: SIGTERM while its private Ray
    starts (D8), a trial's process SIGKILLed then SIGTERM to the whole process group (D1, D14), its Ray stopped
    under it, SIGKILL at a random checkpoint. No finished trial trains again, and it ends bit for bit as the same
    sweep grown without interruption: one repeat, its lost trial continued by `--resume`, a second repeat added by
    `--extend` (``grow_a_sweep``, which checks those). One sweep for all of them: each interruption a process of
    its own would cost a private Ray and a trial process more (seconds of CPU each, issue 34's suite time)."""
    reference = grow_a_sweep(tmp_path / "grown")
    assert len(reference) == TRIALS
    assert all(len(arm["curve"]) == CHECKPOINTS_PER_TRIAL for arm in reference.values())  # an evaluation per epoch
    storage = tmp_path / "interrupted"
    storage.mkdir()
    assert interrupt_every_way_then_resume(storage) == reference  # bitwise: == on floats


def interrupt_every_way_then_resume(storage: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """Runs the sweep through each interruption and `--resume`s it to the end; returns its final metrics."""
    path = experiment(storage, "sweep")
    folder = storage / "sweep"
    rng = random.Random(14)
    # Ray's session folders go under a short TMPDIR of this test's (Ray's socket paths must fit 107 bytes).
    scratch = Path(tempfile.mkdtemp(prefix="d14-", dir="/tmp"))
    stopped_before_start: frozenset[str] = frozenset()  # its MLflow run, ended KILLED: the next start is a new sweep
    try:
        for step, how in enumerate(["sigterm while ray starts", "sigterm to the group", "stop ray", "kill"]):
            before = trained_steps(storage, "sweep")
            # A sweep stopped before it saved its config has nothing to resume: --resume would refuse it as a typo.
            flags = ["--resume"] if (folder / "training_config.json").exists() else []
            # Once its GCS is gone the driver waits this long for it to come back before it exits (Ray's default:
            # 60 s). Each process's private Ray keeps its sessions in the scratch folder (D14).
            env = {"RAY_gcs_rpc_server_reconnect_timeout_s": "3", "TMPDIR": str(scratch)}
            process = start(path, *flags, env=env)
            if how == "sigterm while ray starts":
                reached = wait_until(process, TIMEOUT, ready=partial(gcs_started, process))
            else:  # a checkpoint more than there were (two before a kill): this sweep's Ray and Tune are up
                count = checkpoints(folder) + (rng.randint(1, 2) if how == "kill" else 1)
                reached = wait_until(process, TIMEOUT, ready=partial(holds, folder, count))
            assert reached, f"the sweep ended before its {how} (step {step}): make it longer\n{log_tail(process)}"
            time.sleep(rng.uniform(0.0, 0.3))
            if how == "sigterm while ray starts":
                stopped_before_start = sigterm_while_ray_starts(process, path, folder)
            elif how == "sigterm to the group":
                sigterm_to_the_group(process, path, folder, scratch)
            elif how == "stop ray":
                stop_ray_of(process)
                assert finish(process) != 0, log_tail(process)
            else:
                kill_group(process)
            after = trained_steps(storage, "sweep")
            assert all(after[run] == steps for run, steps in before.items()), f"a finished trial trained again ({how})"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    before = trained_steps(storage, "sweep")
    code, output = command_here([str(path), "--no-report", "--resume"])  # on the suite's Ray: a Ray start less
    assert code == 0, output[-3000:]
    after = trained_steps(storage, "sweep")
    assert all(after[run] == steps for run, steps in before.items()), "a finished trial trained again"
    return final_metrics(storage, "sweep", stopped_before_start)


def sigterm_while_ray_starts(process: subprocess.Popen, path: Path, folder: Path) -> frozenset[str]:
    """Reliability notes D8: SIGTERM to a new sweep while `ray.init` starts its GCS reached Ray's handler (exit 15,
    no --resume command) and left training_config.json, so the same command was refused with `holds a sweep
    already`. Now it is Ctrl-C: exit 130, the command printed, its MLflow run KILLED, no config kept. Returns the
    ids of the runs it left."""
    code = group_signalled(process, signal.SIGTERM)
    output = log_tail(process)
    assert code == 130, output
    assert f"python -m raycomp.tune {path} --no-report --resume" in output and "Traceback" not in output
    assert not (folder / "training_config.json").exists()  # the same command starts it again
    runs = experiment_runs(folder.parent, folder.name)
    assert {run.info.status for run in runs} <= {"KILLED"}, [run.info.status for run in runs]
    return frozenset(run.info.run_id for run in runs)


def sigterm_to_the_group(process: subprocess.Popen, path: Path, folder: Path, scratch: Path) -> None:
    """First a trial's process is killed outright: Tune retries it from its checkpoint (failure.max_failures 1) and
    the sweep goes on; the final comparison shows the retried trial ends bit for bit the same. Then SIGTERM to the
    command's whole process group, as `timeout`, systemd and Slurm send it.

    Reliability notes D1: the private Ray's GCS and raylet were in the group and died at once; the driver hung 60 s
    without its GCS, died with exit 1, left its MLflow runs RUNNING and printed no --resume command. Ray now runs in
    a session of its own, and the sweep ends as Ctrl-C ends it (the same handler). D14: each command's private Ray
    left its session (logs, sockets, copies of the sweep's state) in $TMPDIR/ray for good; it is in
    $TMPDIR/raycomp-ray-<pid> now, removed at the end (killed outright: by the next command, test_scratch.py)."""
    assert kill_a_trial(process), f"no trial process to kill\n{log_tail(process)}"
    count = checkpoints(folder) + 1
    assert wait_until(process, TIMEOUT, ready=partial(holds, folder, count)), log_tail(process)
    sessions = [session for session in scratch.glob("*/session_2*") if not session.is_symlink()]
    began = time.monotonic()
    code = group_signalled(process, signal.SIGTERM)
    # How long it took is printed, not bounded (issue 29): the defect was exit 1 after a 60 s hang without the GCS,
    # which exit 130 and the --resume line tell apart; a bound in seconds failed only busy machines.
    print(f"SIGTERM -> exit {code}: {time.monotonic() - began:.1f} s")
    output = log_tail(process)
    assert code == 130, output
    assert f"python -m raycomp.tune {path} --no-report --resume" in output and "Traceback" not in output
    assert not (folder / "results.json").exists()
    assert "RUNNING" not in {run.info.status for run in experiment_runs(folder.parent, folder.name)}
    (session,) = sessions  # while the sweep ran: its Ray's one session, in the command's own folder
    assert session.parent.parent == scratch and session.parent.name == f"raycomp-ray-{process.pid}"
    # No $TMPDIR/ray/session_* left, and the command's folder is gone (torch's compile cache, which the trials'
    # torch makes in TMPDIR, and the earlier commands' folders, gone too, are not this command's).
    assert [entry.name for entry in scratch.iterdir() if entry.name != "torchinductor_root"] == []


def group_signalled(process: subprocess.Popen, signum: int) -> int:
    """Sends ``signum`` to the command's whole process group, as `timeout` does; its exit code. Whatever the group
    left is SIGKILLed after."""
    try:
        os.killpg(process.pid, signum)
        return process.wait(timeout=120)
    finally:
        kill_group(process)


def gcs_started(process: subprocess.Popen) -> bool:
    with contextlib.suppress(psutil.Error):
        return any("gcs_server" in child.name() for child in psutil.Process(process.pid).children(recursive=True))
    return False


def experiment_runs(storage: Path, name: str) -> list:
    """The experiment's MLflow runs (none before raycomp has built its store)."""
    client = built_store(storage)
    experiment = client.get_experiment_by_name(name) if client is not None else None
    if experiment is None:
        return []
    return client.search_runs([experiment.experiment_id], max_results=1000)


def kill_a_trial(process: subprocess.Popen) -> bool:
    """SIGKILLs the process of the trial running now (a local-mode trial trains in its Tune actor)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        for child in psutil.Process(process.pid).children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                if "ImplicitFunc.train" in " ".join(child.cmdline()):
                    child.kill()
                    return True
        time.sleep(0.05)
    return False


def wait_until(process: subprocess.Popen, seconds: float, ready: Callable[[], bool] = lambda: False) -> bool:
    """Whether ``process`` still runs once ``ready()`` came true, or else ``seconds`` passed."""
    deadline = time.monotonic() + seconds
    while process.poll() is None and time.monotonic() < deadline and not ready():
        time.sleep(0.05)
    return process.poll() is None


def stop_ray_of(process: subprocess.Popen) -> None:
    """What `ray stop --force` does to this sweep's Ray, and only to it: its GCS and raylet are killed."""
    for child in psutil.Process(process.pid).children(recursive=True):
        try:
            if any(name in " ".join(child.cmdline()) for name in ("gcs_server", "raylet")):
                child.kill()
        except psutil.NoSuchProcess:
            pass


def forget_last_trial(folder: Path) -> str:
    """Tune's saved state as a driver saved it just before its last trial began (and was then killed
    outright after that trial finished): the trial's folder and MLflow run stay, Tune no longer knows it."""
    (state_file,) = folder.glob("experiment_state-*.json")
    state = json.loads(state_file.read_text())
    trials = sorted(state["trial_data"], key=lambda entry: json.loads(entry[0])["trial_id"])
    lost = json.loads(trials[-1][0])["trial_id"]
    state["trial_data"] = trials[:-1]
    state_file.write_text(json.dumps(state))
    (parent,), _ = sweep_runs(folder.parent, folder.name)
    MlflowClient(f"sqlite:///{folder.parent / 'mlflow.db'}").update_run(parent.info.run_id, "RUNNING")  # never ended
    return lost


def refuse_to_mix_configs(storage: Path, path: Path) -> None:
    """A rerun under the sweep's name without --resume/--extend, even with a changed hyperparameter (defect 2),
    and a --resume or --extend with another max_duration (defect 4): exit 2, one line, nothing trained.

    Each is `python -m raycomp.tune`'s main in this process: a refusal comes before Ray or MLflow starts, so a
    process of its own (its imports and preflight, seconds each) would show nothing more."""
    config = yaml.safe_load(path.read_text())
    changed = storage / "changed.yaml"
    changed.write_text(yaml.safe_dump({**config, "optimizer": {"lr": 0.01}}))
    longer = storage / "longer.yaml"
    longer.write_text(yaml.safe_dump({**config, "max_duration": "6ep"}))
    cases = [(changed, [], "holds a sweep already; continue it with --resume"), (path, [], "holds a sweep already")]
    cases += [(longer, [flag], 'max_duration: "3ep" -> "6ep"') for flag in ("--resume", "--extend")]
    for file, flags, said in cases:
        code, output = command_here([str(file), "--no-report", *flags])
        assert code == 2, output
        assert said in output and "Traceback" not in own_lines(output), output
    assert json.loads((storage / "grown" / "training_config.json").read_text())["max_duration"] == "3ep"


def own_lines(output: str) -> str:
    """``output`` without the lines Ray forwards from workers of the suite's shared Ray ("(run_trial pid=N) ...", in
    colour), which may print at any moment: a trial actor of the sweep before, ended by Ray, once printed its
    SIGTERM's traceback inside a refusal's capture (a refusal comes before Ray: none of those lines are its own)."""
    return "".join(line for line in output.splitlines(True) if not RAY_WORKER_LINE.match(line))


RAY_WORKER_LINE = re.compile(r"(\x1b\[[0-9;]*m)*\((\S+ )?pid=\d+(, ip=\S+)?\)")


def grow_a_sweep(storage: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """A sweep of one repeat, finished. `--resume`: the arm of a trial Tune's saved state lost trains in a new
    trial, which continues the lost one: from its final checkpoint, under its MLflow run, with its curve (before, it
    trained again under a second run). `--extend` then adds a second repeat under the same sweep run and trains
    none of the old trials again. Returns the grown sweep's final metrics."""
    storage.mkdir()
    path = experiment(storage, "grown", repeats=1)
    code, output = command_here([str(path), "--no-report"])
    assert code == 0, output[-3000:]
    finished, steps = final_metrics(storage, "grown"), trained_steps(storage, "grown")
    refuse_to_mix_configs(storage, path)
    parents, children = sweep_runs(storage, "grown")
    assert len(children) == 2
    lost = forget_last_trial(storage / "grown")
    code, output = command_here([str(path), "--no-report", "--resume"])
    assert code == 0, output[-3000:]
    assert trained_steps(storage, "grown") == steps  # no step trained again, no second run (sweep_runs checks)
    assert final_metrics(storage, "grown") == finished  # its result and curve as the lost trial left them
    assert f"continues trial {lost}" in output

    old = {t["trial_id"]: t for t in json.loads((storage / "grown" / "results.json").read_text())["trials"]}
    code, output = command_here([str(experiment(storage, "grown", repeats=2)), "--extend"])
    assert code == 0, output[-3000:]
    trials = json.loads((storage / "grown" / "results.json").read_text())["trials"]
    assert sorted((t["config_id"], t["repeat"]) for t in trials) == [
        ("baseline", 0),
        ("baseline", 1),
        ("method-1", 0),
        ("method-1", 1),
    ]
    for trial in trials:  # the old trials are in the new results as they were, not trained again
        if trial["trial_id"] in old:
            assert trial["eval/accuracy"] == old[trial["trial_id"]]["eval/accuracy"]
    assert len(old.keys() & {t["trial_id"] for t in trials}) == 2
    assert trained_steps(storage, "grown").items() >= steps.items()
    extended_parents, extended_children = sweep_runs(storage, "grown")
    assert extended_parents[0].info.run_id == parents[0].info.run_id
    assert len(extended_children) == 4
    configs = json.loads((storage / "grown" / "results.json").read_text())["configs"]
    assert {config["config_id"]: len(config["seeds"]) for config in configs} == {"baseline": 2, "method-1": 2}
    report = (storage / "grown" / "report" / "report.html").read_text()
    assert all(trial["trial_id"] in report for trial in trials)  # the report covers old and new trials
    return final_metrics(storage, "grown")
