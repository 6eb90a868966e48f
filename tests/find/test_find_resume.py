"""`python -m raycomp.find` for real: experiments/find_cnn.yaml shrunk (tests/find_experiments.py), its search on a
proxy of half the run and its Confirm at full length (issue 57), stopped by
SIGTERM, then killed outright mid-stage (SIGKILL to the driver's process group, its private Ray with it), each time
`--resume`d (the last time in this process, on the suite's Ray): the round in flight is restored from its Tune
folder, no finished trial trains again, every arm keeps one MLflow run; and the find it ends as: its answer and
files, its MLflow runs tagged by stage and its report attached to its parent run, its recipe.yaml trained by
`python -m raycomp.train`. (One find for both: a find costs rounds of trial processes, seconds of CPU each.)"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from find_experiments import check_answer, check_find_runs, shrunk_find_cnn
from helpers import built_store, command_here
from mlflow import MlflowClient

from raycomp.cli import find as find_cli
from raycomp.cli import train as train_cli

pytestmark = [pytest.mark.ray, pytest.mark.subprocess_cli]
TIMEOUT = 400


def start(path: Path, *flags: str) -> tuple[subprocess.Popen, Path]:
    log = path.with_suffix(f".{time.monotonic_ns()}.log")
    command = [sys.executable, "-m", "raycomp.find", str(path), *flags]
    with log.open("w") as output:
        process = subprocess.Popen(
            command,
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,
        )
    return process, log


def kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def trial_runs(storage: Path, name: str) -> list:
    client = built_store(storage)
    experiment = client.get_experiment_by_name(name) if client is not None else None
    if experiment is None:
        return []
    return client.search_runs([experiment.experiment_id], "tags.`raycomp.kind` = 'trial'", max_results=1000)


def steps(storage: Path, run_id: str) -> int:
    return len(MlflowClient(f"sqlite:///{storage / 'mlflow.db'}").get_metric_history(run_id, "train/loss"))


def evaluated(storage: Path, run_id: str) -> int:
    return len(MlflowClient(f"sqlite:///{storage / 'mlflow.db'}").get_metric_history(run_id, "eval/accuracy"))


def finished_steps(storage: Path) -> dict[str, int]:
    """Per FINISHED trial run: the training steps it logged (each step once, even if trained twice)."""
    return {run.info.run_id: steps(storage, run.info.run_id) for run in trial_runs(storage, "killed")
            if run.info.status == "FINISHED"}  # fmt: skip


def run_until_finished(path: Path, count: int, *flags: str) -> tuple[subprocess.Popen, Path]:
    """The find started (with ``flags``) and left running once ``count`` of its trial runs are FINISHED."""
    process, log = start(path, *flags)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and process.poll() is None and len(finished_steps(path.parent)) < count:
        time.sleep(0.5)
    if process.poll() is not None:
        kill_group(process)
        pytest.fail(f"the find ended before it was interrupted\n{log.read_text()[-3000:]}")
    return process, log


def test_a_find_stopped_by_sigterm_then_killed_mid_stage_resumes_to_its_answer_and_its_recipe_trains(
    tmp_path, capsys, local_ray
):
    """SIGTERM (as `timeout`, `kill` and batch schedulers stop a command; Ctrl-C's handler), then SIGKILL to the
    driver's process group, each once a trial more has finished, each followed by `--resume`: no finished trial
    trains again, every arm keeps one run, and the find ends with its answer. A rerun under the same name with
    another training config is refused before Ray (one name, one config).

    The find's trials run one at a time: each round's trials then share one trial process (its imports, its
    first MLflow and optimizer set-up: seconds of CPU each) instead of two, on a 2-core machine already busy.
    Its trials train 2 epochs, a checkpoint each: a trial killed mid-way has one to resume from."""
    path = shrunk_find_cnn(tmp_path, "killed", proxy="0.5dur")  # the search on 1 epoch of 2 (issue 57)

    process, log = run_until_finished(path, 1)
    before = finished_steps(tmp_path)
    os.kill(process.pid, signal.SIGTERM)  # to the driver alone
    try:
        assert process.wait(timeout=120) == 130, log.read_text()[-3000:]
    finally:
        kill_group(process)
    assert f"python -m raycomp.find {path} --resume" in log.read_text(), log.read_text()[-3000:]
    assert {run: finished_steps(tmp_path)[run] for run in before} == before
    # L9 of the 2026-12-01 probe: a trial the SIGTERM stopped is KILLED, never FINISHED with part of its evaluations
    evaluations = {run.info.run_id: evaluated(tmp_path, run.info.run_id) for run in trial_runs(tmp_path, "killed")}
    statuses = {run.info.run_id: run.info.status for run in trial_runs(tmp_path, "killed")}
    assert set(statuses.values()) <= {"FINISHED", "KILLED"}, statuses
    full = max(evaluations[run] for run in before)
    assert all(evaluations[run] == full for run, status in statuses.items() if status == "FINISHED"), evaluations

    process, log = run_until_finished(path, len(finished_steps(tmp_path)) + 1, "--resume")
    kill_group(process)
    before = finished_steps(tmp_path)
    # Killed mid-screen (its round: the method and the baseline at 2 seeds, 4 trials), or just after it if a trial
    # ended between the last look and the kill: either way, with work finished that --resume must not redo.
    assert 2 <= len(before) <= 4, before

    code, output = command_here([str(path), "--resume"], "find")  # on the suite's Ray: a Ray start less
    assert code == 0, output[-3000:]
    answer = check_answer(
        output,
        tmp_path / "killed",
        "find: 1 candidate methods on the 'cnn' model: progressive_resizing",
    )
    runs = trial_runs(tmp_path, "killed")
    arms = [(run.data.tags["raycomp.config_id"], run.data.tags["raycomp.repeat"]) for run in runs]
    assert len(arms) == len(set(arms)), "an arm was trained in two runs"
    assert {run.info.status for run in runs} == {"FINISHED"}
    by_id = {run.info.run_id: run for run in runs}
    for run_id, logged in before.items():  # finished before the kill: not one step trained again
        assert steps(tmp_path, run_id) == logged
        assert "raycomp.retrained_from_step" not in by_id[run_id].data.tags
    check_find_runs(tmp_path, "killed", answer, proxy=True)
    searched = [run for run in runs if run.data.tags["raycomp.config_id"].endswith("@proxy")]
    confirmed = [run for run in runs if run.data.tags.get("raycomp.find.stage") == "confirm"]
    assert searched and {run.data.tags.get("raycomp.find.stage") for run in searched} <= {"screen", "tune", "compose"}
    assert {run.data.tags.get("raycomp.find.proxy") for run in searched} == {"0.5dur"}
    if confirmed:  # the whole run: twice the proxy's steps
        assert min(steps(tmp_path, r.info.run_id) for r in confirmed) == 2 * max(steps(tmp_path, r.info.run_id)
                                                                                   for r in searched)  # fmt: skip
    if answer["recommended"]:  # the recipe trains, as a user trains it
        assert train_cli.main([str(tmp_path / "killed" / "recipe.yaml")]) == 0
        assert (tmp_path / "killed-recipe").is_dir()
        capsys.readouterr()

    changed = tmp_path / "changed.yaml"
    changed.write_text(path.read_text().replace("max_duration: 2ep", "max_duration: 3ep"))
    assert changed.read_text() != path.read_text()
    try:  # refused before Ray and MLflow start: here, not in a process of its own (its imports, seconds of CPU)
        code = find_cli.main([str(changed)])
    except SystemExit as exit_:
        code = exit_.code
    refused = capsys.readouterr().err
    assert code == 2 and "holds a" in refused and "Traceback" not in refused, refused
    # in the find's words (L8 of the 2026-12-01 probe): a find has no --extend
    assert "holds a find already; continue it with --resume, or" in refused and "--extend" not in refused, refused

    # a --resume with other settings is refused before the find's MLflow run is reopened: it stays FINISHED (L8)
    code = find_cli.main([str(path), "--resume", "--set", "find.confirm=[2, 5]"])
    refused = capsys.readouterr().err
    assert code == 2 and "searched other methods, settings or seeds" in refused, refused
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    parents = client.search_runs(
        [client.get_experiment_by_name("killed").experiment_id], "tags.`raycomp.kind` = 'find'"
    )
    assert [run.info.status for run in parents] == ["FINISHED"]
