"""Run lifecycle: a tagged parent per sweep or training, children per trial, found again on restore,
and each run's end status decided once when its block exits."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from helpers import free_port
from mlflow import MlflowClient

from raycomp.base import keys
from raycomp.base.errors import TrackingUnavailable
from raycomp.config import ExperimentConfig
from raycomp.config.arm import Arm
from raycomp.tracking import close_orphaned_run, log_files, sweep_run, train_run, trial_run
from raycomp.tracking.ref import RunRef

SB = "algorithms.selective_backprop"


def config(tmp_path, **changes) -> ExperimentConfig:
    data = {
        "name": "runs",
        "storage_path": str(tmp_path / "runs"),
        "algorithms": {"selective_backprop": {"keep": 0.3}},
        "tracking": {"tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}"},
    }
    return ExperimentConfig.from_dict({**data, **changes})


def status(ref: RunRef) -> str:
    return MlflowClient(ref.tracking_uri).get_run(ref.run_id).info.status


def git_commit(folder: Path) -> str:
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    identity = ["-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run(["git", "-C", str(folder), *identity, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    return subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True).stdout


def test_a_sweep_run_is_tagged_with_versions_file_commit_and_holds_the_resolved_yaml(tmp_path):
    head = git_commit(tmp_path)
    experiment_file = tmp_path / "sweep.yaml"
    with sweep_run(config(tmp_path), str(experiment_file), resume=False) as run:
        client = MlflowClient(run.ref.tracking_uri)
        stored = client.get_run(run.ref.run_id)
        assert stored.info.status == "RUNNING" and stored.info.run_name == "runs"
    tags = stored.data.tags
    assert tags["raycomp.experiment_file"] == str(experiment_file)
    assert tags["mlflow.source.git.commit"] == head.strip() and tags[keys.KIND_TAG] == "sweep"
    assert all(tags[f"raycomp.version.{name}"] not in ("", "unknown") for name in ("raycomp", "ray", "torch", "mlflow"))
    assert stored.data.params == {}  # a sweep's params are its trials'
    local = Path(client.download_artifacts(run.ref.run_id, "config.yaml", str(tmp_path)))
    assert ExperimentConfig.from_dict(yaml.safe_load(local.read_text())) == config(tmp_path)
    assert status(run.ref) == "FINISHED"


def test_no_commit_tag_outside_git_and_a_resumed_sweep_keeps_its_one_run(tmp_path):
    with pytest.raises(KeyboardInterrupt), sweep_run(config(tmp_path), "/nonexistent/x.yaml", resume=False) as first:
        raise KeyboardInterrupt  # Ctrl-C
    client = MlflowClient(first.ref.tracking_uri)
    tags = client.get_run(first.ref.run_id).data.tags
    assert "mlflow.source.git.commit" not in tags and tags[keys.RUN_KEY_TAG].startswith("sweep:")
    assert status(first.ref) == "KILLED"
    with sweep_run(config(tmp_path), None, resume=True) as again:
        assert again.ref == first.ref and status(first.ref) == "RUNNING"
    assert status(first.ref) == "FINISHED"
    with sweep_run(config(tmp_path), None, resume=True) as third:
        third.status = "KILLED"  # the block decides: an interrupted sweep
    # Finished, and resumed again: still its one run (each --resume used to open a new, empty one: defect 9).
    assert third.ref.run_id == first.ref.run_id and status(third.ref) == "KILLED"
    with sweep_run(config(tmp_path), None, resume=False) as fresh:
        pass
    assert fresh.ref.run_id != third.ref.run_id  # without resume: always a new one


def test_a_train_run_logs_params_reopens_an_unfinished_run_and_records_resumed_from(tmp_path):
    with pytest.raises(RuntimeError), train_run(config(tmp_path), None) as failed:
        raise RuntimeError("boom")
    stored = MlflowClient(failed.ref.tracking_uri).get_run(failed.ref.run_id)
    assert stored.info.status == "FAILED" and stored.data.params[f"{SB}.keep"] == "0.3"
    assert stored.data.tags[keys.KIND_TAG] == "train" and keys.RESUMED_FROM_TAG not in stored.data.tags
    reference = "runs:/" + "a" * 32
    with train_run(config(tmp_path), None, resumed_from=reference) as again:
        assert again.ref == failed.ref  # the same name continues its unfinished run
    tags = MlflowClient(again.ref.tracking_uri).get_run(again.ref.run_id).data.tags
    assert tags[keys.RESUMED_FROM_TAG] == reference and status(again.ref) == "FINISHED"
    with train_run(config(tmp_path), None) as fresh:
        pass
    assert fresh.ref != again.ref


def test_tracking_off_yields_none_and_a_dead_store_refuses_at_entry(tmp_path):
    off = config(tmp_path, tracking={"enabled": False})
    with sweep_run(off, None, resume=False) as sweep, train_run(off, None) as train:
        assert sweep is None and train is None
    dead = config(tmp_path, tracking={"tracking_uri": f"http://127.0.0.1:{free_port()}"})
    for opened in (sweep_run(dead, None, resume=False), train_run(dead, None)):
        with pytest.raises(TrackingUnavailable, match="not reachable"), opened:
            pytest.fail("the block must not run")


ARM = Arm("method", "method-1")


def test_trial_runs_nest_under_the_parent_with_flat_params_and_required_on_load_tags(tmp_path):
    with sweep_run(config(tmp_path), None, resume=False) as sweep:
        parent = sweep.ref
        trial_config = config(tmp_path, tracking={"tracking_uri": parent.tracking_uri, "experiment_name": "x" * 7000})
        with trial_run(parent, "t_00001", ARM, trial_config) as child:
            run = MlflowClient(parent.tracking_uri).get_run(child.run_id)
        tags = run.data.tags
        assert tags[keys.PARENT_TAG] == parent.run_id and tags[keys.TRIAL_TAG] == "t_00001"
        assert tags[keys.VARIANT_TAG] == "method" and tags[keys.KIND_TAG] == "trial"
        assert (tags[keys.CONFIG_ID_TAG], tags[keys.REPEAT_TAG]) == ("method-1", "0") and keys.BUDGET_TAG not in tags
        assert run.info.run_name == "t_00001-method" and run.info.status == "RUNNING"
        assert run.data.params[f"{SB}.keep"] == "0.3" and run.data.params[f"{SB}.interrupt"] == "2"  # defaults too
        assert len(run.data.params["tracking.experiment_name"]) == 6000  # MLflow's limit, cut with "..."
        assert tags["raycomp.algorithm.selective_backprop.required_on_load"] == "false"
        assert status(child) == "FINISHED"
        with trial_run(parent, "t_00001", ARM, trial_config) as again:  # a restored trial continues its run
            assert again == child and status(child) == "RUNNING"
        with trial_run(None, "t_00002", ARM, trial_config) as untracked:
            assert untracked is None


def test_a_trial_ends_finished_killed_when_tune_stops_it_and_failed_on_an_error(tmp_path):
    outcomes = {"stopped": SystemExit(0), "stopped-none": SystemExit(None), "exit-1": SystemExit(1)}
    outcomes["raised"] = RuntimeError("boom")
    with sweep_run(config(tmp_path), None, resume=False) as sweep:
        ended = {}
        for trial_id, error in outcomes.items():
            with (
                pytest.raises(type(error)),
                trial_run(sweep.ref, trial_id, ARM, config(tmp_path)) as child,
            ):
                raise error  # goes on after the run is ended
            ended[trial_id] = status(child)
        with trial_run(sweep.ref, "done", ARM, config(tmp_path)) as child:
            pass
        ended["done"] = status(child)
    assert ended == {
        "stopped": "KILLED",
        "stopped-none": "KILLED",
        "exit-1": "FAILED",
        "raised": "FAILED",
        "done": "FINISHED",
    }


def test_a_trial_trains_untracked_when_the_store_is_down_at_open(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    dead = RunRef(f"http://127.0.0.1:{free_port()}", "1", "a" * 32)
    trained = []
    with trial_run(dead, "t0", ARM, config(tmp_path)) as child:
        trained.append(child)
    assert trained == [None]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "t0" in err[0] and dead.tracking_uri in err[0] and "untracked" in err[0]


def test_a_store_that_fails_right_after_creating_the_run_keeps_the_run_tracked(tmp_path, capsys, monkeypatch):
    """The server died between creating the trial's run and logging its params (the CI race of h2): the run
    exists, so the trial must keep it, or its points are never spilled and it stays RUNNING forever."""
    import raycomp.tracking.params as params

    def store_gone(*args, **kwargs):
        raise ConnectionError("Connection refused")

    with sweep_run(config(tmp_path), None, resume=False) as sweep:
        monkeypatch.setattr(params, "log_config", store_gone)  # the fault lands after create_run
        with trial_run(sweep.ref, "t0", ARM, config(tmp_path)) as child:
            assert child is not None and status(child) == "RUNNING"
        assert status(child) == "FINISHED"
    err = capsys.readouterr().err
    assert child.run_id in err and "params" in err and "Connection refused" in err


def test_close_orphaned_run_ends_only_runs_still_running(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with sweep_run(config(tmp_path), None, resume=False) as sweep:
        parent = sweep.ref
        runs = {}
        for trial_id in ("done", "died", "stopped", "baseline"):
            with trial_run(parent, trial_id, ARM, config(tmp_path)) as child:
                runs[trial_id] = child
        for trial_id in ("died", "stopped", "baseline"):  # their processes never left the block
            MlflowClient(parent.tracking_uri).update_run(runs[trial_id].run_id, status="RUNNING")
        close_orphaned_run(parent, "done", failed=True)  # ended by the trial already: untouched
        # found by the run id the trial reported (the trial id given is no help: no search is made)
        close_orphaned_run(parent, "no-such-trial", failed=True, run_id=runs["died"].run_id)
        close_orphaned_run(parent, "stopped", failed=False)  # never reported: found by its tags
        close_orphaned_run(parent, "baseline", failed=False, finished=True)
        close_orphaned_run(parent, "never-ran", failed=True)  # no run: nothing to do
        ended = {trial_id: status(ref) for trial_id, ref in runs.items()}
        assert ended == {"done": "FINISHED", "died": "FAILED", "stopped": "KILLED", "baseline": "FINISHED"}
        close_orphaned_run(RunRef(f"http://127.0.0.1:{free_port()}", "1", parent.run_id), "x", failed=True)


def test_an_interrupted_sweep_ends_the_trial_runs_its_killed_processes_left_running(tmp_path):
    """Ray kills a trial's process at the driver's exit; one killed before its thread ended its run left it RUNNING
    (seen once in the suite, in the D1 test, now a step of test_crash_resume.py). The sweep's run, ended KILLED,
    ends those KILLED too: not the trials that ended their own runs, nor another sweep's."""
    with sweep_run(config(tmp_path, name="other"), None, resume=False) as other:
        with trial_run(other.ref, "elsewhere", ARM, config(tmp_path)) as elsewhere:
            pass
        MlflowClient(other.ref.tracking_uri).update_run(elsewhere.run_id, status="RUNNING")
        with sweep_run(config(tmp_path), None, resume=False) as sweep:
            runs = {}
            for trial_id in ("done", "killed-first", "killed-too"):
                with trial_run(sweep.ref, trial_id, ARM, config(tmp_path)) as child:
                    runs[trial_id] = child
            for trial_id in ("killed-first", "killed-too"):  # their processes never left the block
                MlflowClient(sweep.ref.tracking_uri).update_run(runs[trial_id].run_id, status="RUNNING")
            sweep.status = "KILLED"  # as the CLI's interrupted sweep sets it
        ended = {trial_id: status(ref) for trial_id, ref in runs.items()}
        assert ended == {"done": "FINISHED", "killed-first": "KILLED", "killed-too": "KILLED"}
        assert status(sweep.ref) == "KILLED" and status(elsewhere) == "RUNNING"
        other.status = "KILLED"
    assert status(elsewhere) == "KILLED"


def test_a_sweeps_end_sends_spilled_points_and_ends_the_finished_trials_runs_over_every_page(tmp_path, monkeypatch):
    """finish_open_trial_runs reads only the children still RUNNING, a page at a time (two here): the finished
    trials' runs end FINISHED on every page, an unfinished trial's run stays open, and a spilled file's points
    reach their run before it ends."""
    from raycomp.tracking import finish_open_trial_runs, search

    monkeypatch.setattr(search, "SEARCH_PAGE", 2)
    experiment = config(tmp_path)
    with sweep_run(experiment, None, resume=False) as sweep:
        parent, runs = sweep.ref, {}
        for trial_id in ("ended", "open-1", "open-2", "open-3", "open-4", "unfinished"):
            with trial_run(parent, trial_id, ARM, experiment) as child:
                runs[trial_id] = child
        client = MlflowClient(parent.tracking_uri)
        for trial_id in runs.keys() - {"ended"}:  # their processes died in the block, or the store was down
            client.update_run(runs[trial_id].run_id, status="RUNNING")
        spilled = experiment.layout.unsent_metrics(runs["open-3"].run_id)
        spilled.parent.mkdir(parents=True)
        spilled.write_text('["eval/accuracy", 0.5, 1000, 7]\n')
        finished = ["ended", "open-1", "open-2", "open-3", "open-4"]
        assert finish_open_trial_runs(parent, finished, experiment) == 4
        assert {trial_id: status(ref) for trial_id, ref in runs.items()} == {
            **dict.fromkeys(finished, "FINISHED"),
            "unfinished": "RUNNING",
        }
        points = client.get_metric_history(runs["open-3"].run_id, "eval/accuracy")
        assert [(point.step, point.value) for point in points] == [(7, 0.5)] and not spilled.exists()


def test_the_sweeps_callback_ends_a_trials_run_by_the_id_its_reports_carry(tmp_path):
    """Tune's callback at a trial's end: the run its last report named (no search of the store), else by tags."""
    from types import SimpleNamespace

    from raycomp.launch.sweep.tuner import CloseOrphanedRuns

    with sweep_run(config(tmp_path), None, resume=False) as sweep:
        runs = {}
        for trial_id in ("reported", "silent"):
            with trial_run(sweep.ref, trial_id, ARM, config(tmp_path)) as child:
                runs[trial_id] = child
        for ref in runs.values():  # their processes died in the block
            MlflowClient(sweep.ref.tracking_uri).update_run(ref.run_id, status="RUNNING")
        callback = CloseOrphanedRuns(sweep.ref)
        named = {keys.FINISHED: True, keys.MLFLOW_RUN_ID: runs["reported"].run_id}
        callback.on_trial_complete(0, [], SimpleNamespace(trial_id="not-its-tag", last_result=named))
        callback.on_trial_error(0, [], SimpleNamespace(trial_id="silent", last_result=None))
        assert {trial_id: status(ref) for trial_id, ref in runs.items()} == {"reported": "FINISHED", "silent": "FAILED"}
        # Under FIFO a trial completes only by returning, its run ended: the store is not asked (only on an error).
        fifo = CloseOrphanedRuns(sweep.ref, scheduler_stops_trials=False)
        for ref in runs.values():
            MlflowClient(sweep.ref.tracking_uri).update_run(ref.run_id, status="RUNNING")
        fifo.on_trial_complete(0, [], SimpleNamespace(trial_id="not-its-tag", last_result=named))
        fifo.on_trial_error(0, [], SimpleNamespace(trial_id="silent", last_result=None))
        assert {trial_id: status(ref) for trial_id, ref in runs.items()} == {"reported": "RUNNING", "silent": "FAILED"}


def test_log_files_attaches_to_the_run(tmp_path):
    (tmp_path / "results.csv").write_text("a\n1\n")
    (tmp_path / "results.json").write_text("{}")
    with sweep_run(config(tmp_path), None, resume=False) as sweep:
        assert log_files(sweep.ref, [tmp_path / "results.csv", tmp_path / "results.json"])
        assert log_files(sweep.ref, [tmp_path / "results.json"], "report")
    listed = MlflowClient(sweep.ref.tracking_uri).list_artifacts(sweep.ref.run_id)
    assert {entry.path for entry in listed} == {"config.yaml", "results.csv", "results.json", "report"}
