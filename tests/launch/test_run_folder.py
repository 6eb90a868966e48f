"""The run folder's claim (issue 14 M4, L7) and SIGTERM (M7): one process and one config per name, storage
checked before anything starts, and SIGTERM ending a run the way Ctrl-C does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from mlflow import MlflowClient

from raycomp.base.errors import NotFound, RunConflict, StorageUnwritable
from raycomp.config import ExperimentConfig
from raycomp.launch.run_folder import RunLock, check_writable, claimed, nothing_to_resume
from raycomp.launch.training_record import training_config


def experiment(tmp_path: Path, **changes) -> dict:
    data = {
        "name": "claimed",
        "data": {"num_train": 256, "num_test": 128, "batch_size": 32},
        "max_duration": "2ep",
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "1ep"},
        "storage_path": str(tmp_path / "runs"),
    }
    data.update(changes)
    return data


def config(tmp_path: Path, **changes) -> ExperimentConfig:
    return ExperimentConfig.from_dict(experiment(tmp_path, **changes))


def fake_checkpoint(config: ExperimentConfig) -> None:
    (Path(config.layout.run_dir) / "checkpoint_000000").mkdir(parents=True)


def test_m4_a_second_process_on_the_same_name_is_refused_naming_the_holder(tmp_path):
    first = config(tmp_path)
    # flock belongs to an open file: a second open of the lock file conflicts even within one process
    holder = r"in use by process \d+ on .* wait for it to end, or pick another"
    with claimed(first), pytest.raises(RunConflict, match=holder), RunLock(first.layout.lock_file):
        pass
    with claimed(first):  # released at the end of the block: the next command takes it
        pass


def test_the_lock_file_names_its_holders_command_without_a_password(tmp_path, monkeypatch):
    """Defect 5: `.raycomp.lock` and the refusal that quotes it held the tracking URI's password."""
    argv = ["raycomp.tune", "x.yaml", "--set", "tracking.tracking_uri=http://alice:s3cretPW@127.0.0.1:5055"]
    monkeypatch.setattr(sys, "argv", argv)
    lock = tmp_path / ".raycomp.lock"
    with RunLock(lock):
        assert "s3cretPW" not in lock.read_text() and "alice:***@127.0.0.1:5055" in lock.read_text()
        with pytest.raises(RunConflict) as refused, RunLock(lock):
            pass
    assert "s3cretPW" not in str(refused.value) and "alice:***@" in str(refused.value)


@pytest.mark.spawns
def test_m4_the_lock_is_released_when_its_holder_is_killed(tmp_path):
    lock = tmp_path / "runs" / "claimed" / ".raycomp.lock"
    script = (
        "from pathlib import Path\nfrom raycomp.launch.run_folder import RunLock\n"
        f"RunLock(Path({str(lock)!r})).__enter__()\nprint('held', flush=True)\nimport time; time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunConflict, match=f"process {holder.pid}"):
            RunLock(lock).__enter__()
    finally:
        holder.kill()
        holder.wait()
    with RunLock(lock):  # SIGKILL left no stale lock
        pass


def test_m4_resuming_checkpoints_with_a_changed_training_config_is_refused(tmp_path):
    first = config(tmp_path)
    with claimed(first):
        fake_checkpoint(first)
    changed = config(tmp_path, optimizer={"lr": 0.9})
    refused = r"another config \(optimizer\.lr: 0\.05 -> 0\.9\).*--set name="
    with pytest.raises(RunConflict, match=refused), claimed(changed):
        pass
    longer = config(tmp_path, max_duration="5ep", checkpoint={"interval": "2ep"})
    with claimed(longer):  # raycomp.train: a longer run, or other checkpointing, resumes on purpose
        pass
    assert training_config(changed)["optimizer.lr"] == 0.9


def test_a_new_sweep_over_a_name_that_holds_one_is_refused_naming_the_three_ways_on(tmp_path):
    """Defect 2: a new sweep under an old name adopted the old trials and printed their results as its own."""
    first = config(tmp_path, sweep={"space": {"optimizer.lr": {"grid": [0.05]}}})
    with claimed(first, resume=False):
        pass
    ways = r"holds a sweep already; continue it with --resume, add .* with --extend, or .* another name \(--set name="
    for again in (first, config(tmp_path, optimizer={"lr": 0.01}, sweep={"space": {"optimizer.lr": {"grid": [0.05]}}})):
        with pytest.raises(RunConflict, match=ways), claimed(again, resume=False):
            pytest.fail("the block must not run")


def test_resume_and_extend_refuse_another_max_duration_and_a_missing_or_damaged_record(tmp_path):
    """Defects 4 and 10: a sweep's trials all train to one max_duration; a lost record never turns the check off."""
    space = {"optimizer.lr": {"grid": [0.05]}}
    first = config(tmp_path, sweep={"space": space})
    with claimed(first, resume=False):
        pass
    longer = config(tmp_path, max_duration="6ep", sweep={"space": space})
    for extend in (False, True):
        with (
            pytest.raises(RunConflict, match=r"max_duration: \"2ep\" -> \"6ep\""),
            claimed(longer, resume=True, extend=extend),
        ):
            pytest.fail("the block must not run")
    record = first.layout.training_config_file
    (Path(first.layout.run_dir) / "tuner.pkl").write_bytes(b"")  # Tune's saved sweep: the folder holds one
    for damage, reason in ((lambda: record.write_text("{not json"), "cannot be read"), (record.unlink, "is missing")):
        damage()
        with pytest.raises(RunConflict, match=f"training_config.json {reason}"), claimed(first, resume=True):
            pytest.fail("the block must not run")
        assert not record.exists() or record.read_text() == "{not json"  # left as it was: not rewritten


def test_m4_how_many_trials_run_at_once_and_how_verdicts_judge_may_change_on_resume(tmp_path):
    space = {"optimizer.lr": {"grid": [0.05, 0.1]}}
    first = config(tmp_path, sweep={"space": space})
    with claimed(first, resume=False):
        fake_checkpoint(first)
    judged = config(tmp_path, sweep={"space": space, "max_concurrent_trials": 1, "accuracy_tolerance": 0.02})
    with claimed(judged, resume=True):
        pass
    with (
        pytest.raises(RunConflict, match=r"sweep\.repeats: 1 -> 2"),
        claimed(config(tmp_path, sweep={"space": space, "repeats": 2}), resume=True),
    ):
        pass


def test_m4_a_folder_without_checkpoints_takes_any_config(tmp_path):
    with claimed(config(tmp_path)):
        pass
    with claimed(config(tmp_path, optimizer={"lr": 0.9})):
        pass


def test_m4_cli_rerun_with_a_changed_config_exits_2_before_training(tmp_path, capsys):
    from raycomp.cli.train import main

    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump(experiment(tmp_path, tracking={"enabled": False})))
    assert main([str(path)]) == 0
    capsys.readouterr()
    assert main([str(path), "--set", "optimizer.lr=0.9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "optimizer.lr: 0.05 -> 0.9" in err and len(err.splitlines()) == 1


def test_l7_an_unwritable_storage_path_is_one_error_at_start(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(StorageUnwritable, match=r"cannot write to .*a-file/x \(storage_path\).*writable folder"):
        check_writable(blocker / "x", "storage_path")
    with (
        pytest.raises(StorageUnwritable, match=r"\(storage_path\)"),
        claimed(config(tmp_path, storage_path=str(blocker))),
    ):
        pytest.fail("the block must not run")


@pytest.mark.spawns
def test_m7_sigterm_ends_a_tracked_local_run_killed_and_leaves_no_temporary_checkpoint(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    data = experiment(tmp_path, max_duration="40ep", tracking={"enabled": True})
    data["checkpoint"] = {"interval": "1ba"}  # a report with a checkpoint on every batch: SIGTERM lands in one
    data["eval"] = {"interval": "1ba"}
    path = tmp_path / "long.yaml"
    path.write_text(yaml.safe_dump(data))
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONUNBUFFERED": "1"}
    run = subprocess.Popen(
        [sys.executable, "-m", "raycomp.train", str(path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    run_folder = tmp_path / "runs" / "claimed"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list(run_folder.glob("checkpoint_*"))) < 2:
            time.sleep(0.1)
        assert list(run_folder.glob("checkpoint_*")), "no checkpoint in time"
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 130, err.decode()[-2000:]
    assert "Traceback" not in err.decode()
    client = MlflowClient(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("claimed").experiment_id])
    assert [r.info.status for r in runs] == ["KILLED"] and runs[0].info.end_time
    assert not [p.name for p in scratch.iterdir() if p.name.startswith("raycomp-")]  # no leaked checkpoint


def test_resume_of_a_sweep_killed_before_it_saved_anything_starts_it(tmp_path, capsys):
    """SIGKILLed in its first seconds, a driver leaves no record: --resume then starts the sweep, saying so."""
    fresh = config(tmp_path)
    assert not nothing_to_resume(fresh.layout)  # no folder at all: a typo, which --resume refuses (defect 16)
    with pytest.raises(NotFound, match="no sweep to continue"), claimed(fresh, resume=True):
        pass
    fresh.layout.local_dir.mkdir(parents=True)  # what a driver killed in its first seconds leaves (its lock)
    fresh.layout.lock_file.write_text("")
    assert nothing_to_resume(fresh.layout)
    assert "nothing of this sweep was saved" in capsys.readouterr().err
    with pytest.raises(NotFound, match="no sweep to continue"), claimed(fresh, resume=True):  # what it said
        pass
    with claimed(fresh):  # a started sweep records its config before anything else
        pass
    assert not nothing_to_resume(fresh.layout) and capsys.readouterr().err == ""


def image_folder(root: Path, classes: tuple[str, ...] = ("a", "b")) -> Path:
    """An ``image_folder`` root that validates (train/ and val/, a class per folder; nothing is decoded here)."""
    for split in ("train", "val"):
        for name in classes:
            (root / split / name).mkdir(parents=True, exist_ok=True)
            (root / split / name / "0.png").write_bytes(b"not decoded by the claim")
    return root


def test_d3_a_dataset_root_that_is_the_data_is_a_training_value_and_a_cache_root_is_not(tmp_path):
    """Reliability notes D3: for image_folder (hf_dataset, text_files) data.root *is* the dataset, so a rerun or a
    sweep's --resume/--extend over another folder, or over changed files in it, trained the rest on other data
    and reported it all as one. Refused now, naming the key; synthetic's and cifar10's root stays a cache."""
    first_root, other_root = image_folder(tmp_path / "images"), image_folder(tmp_path / "other")
    data = {"name": "image_folder", "root": str(first_root), "image_size": 8}
    first = config(tmp_path, data=data)
    with claimed(first):  # raycomp.train: its checkpoints are resumed by a rerun
        fake_checkpoint(first)
    moved = config(tmp_path, data={**data, "root": str(other_root)})
    with pytest.raises(RunConflict, match=r"another config \(data\.root: .*/images\" -> .*/other"), claimed(moved):
        pytest.fail("the block must not run")
    (first_root / "train" / "a" / "1.png").write_bytes(b"one more image")  # the same folder, other files
    with (
        pytest.raises(RunConflict, match=r"another config \(data\.root_files: .*4 files.* -> .*5 files"),
        claimed(first),
    ):
        pytest.fail("the block must not run")

    space = {"optimizer.lr": {"grid": [0.05]}}
    sweep = config(tmp_path, name="sweep", data=data, sweep={"space": space})
    with claimed(sweep, resume=False):
        pass
    moved_sweep = config(tmp_path, name="sweep", data={**data, "root": str(other_root)}, sweep={"space": space})
    for extend in (False, True):  # --resume, --extend
        with pytest.raises(RunConflict, match=r"data\.root: "), claimed(moved_sweep, resume=True, extend=extend):
            pytest.fail("the block must not run")

    cached = config(tmp_path, name="cached", data={"root": str(tmp_path / "cache-1")})
    with claimed(cached):
        fake_checkpoint(cached)
    with claimed(config(tmp_path, name="cached", data={"root": str(tmp_path / "cache-2")})):
        pass  # synthetic data: the root is where it would be cached, not what it is


def test_d8_a_sweep_whose_store_did_not_answer_can_be_run_again_as_it_was(tmp_path, capsys):
    """Reliability notes D8: a sweep stopped before anything ran (exit 3: its MLflow server was down) left its
    training_config.json, so the same command was then refused with `holds a sweep already` (exit 2)."""
    from helpers import free_port

    from raycomp.cli.tune import main

    down = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    sweep = experiment(tmp_path, tracking={"tracking_uri": down}, sweep={"space": {"optimizer.lr": {"grid": [0.05]}}})
    path = tmp_path / "down.yaml"
    path.write_text(yaml.safe_dump(sweep))
    for _ in range(2):
        assert main([str(path), "--no-report"]) == 3
        err = capsys.readouterr().err
        assert "is not reachable" in err and "holds a sweep already" not in err, err
        assert not ExperimentConfig.from_dict(sweep).layout.training_config_file.exists()


def test_a_finds_folder_is_said_in_the_finds_words(tmp_path):
    """L8 of the 2026-12-01 probe: a rerun of a find's name said `--extend`, which a find lacks."""
    from raycomp.base.remedies import COMMAND_LINE, speaking

    config = ExperimentConfig.from_dict({"name": "f", "storage_path": str(tmp_path)})
    with speaking(COMMAND_LINE.for_a_find()):
        missing = r"^no find to continue at .* \(run without --resume to start one\)$"
        with pytest.raises(NotFound, match=missing), claimed(config, resume=True):
            pass
        with claimed(config, resume=False):
            pass
        with pytest.raises(RunConflict) as refused, claimed(config, resume=False):
            pass
    assert "holds a find already; continue it with --resume, or start a new one" in str(refused.value)
    assert "--extend" not in str(refused.value)
