"""The Tune sweep: arms and trial configs (no Ray needed), then real sweeps on a local Ray."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
import yaml

from raycomp.base.layout import TRIAL_HISTORY
from raycomp.config import ExperimentConfig, load_experiment
from raycomp.config.arm import Arm

SB = "algorithms.selective_backprop"


def tiny_experiment(storage: Path, name: str = "tiny", **changes) -> dict:
    """A sweep that trains for a couple of seconds per trial on 1 CPU (local-mode trials)."""
    experiment = {
        "name": name,
        "data": {"num_train": 256, "num_test": 128, "batch_size": 64},
        "max_duration": "2ep",
        "algorithms": {"selective_backprop": {"start": 0.0, "end": 1.0, "keep": 0.5, "interrupt": 0}},
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "1ep"},
        "storage_path": str(storage),
        "sweep": {"space": {f"{SB}.keep": {"grid": [0.25, 0.75]}}},
    }
    for key, value in changes.items():
        experiment[key] = value
    return experiment


def write(path: Path, experiment: dict) -> Path:
    path.write_text(yaml.safe_dump(experiment))
    return path


# ---- arms and trial configs ------------------------------------------------------------------------------


def test_arms_hold_one_baseline_and_each_grid_point_num_samples_times(tmp_path):
    from raycomp.launch.sweep.space import sweep_arms

    experiment = tiny_experiment(tmp_path)
    experiment["sweep"] = {
        "space": {f"{SB}.keep": {"grid": [0.25, 0.75]}, f"{SB}.scale_factor": {"uniform": [0.5, 1.0]}},
        "num_samples": 3,
    }
    config = ExperimentConfig.from_dict(experiment)
    arms = sweep_arms(config)
    assert [arm.variant for arm in arms] == ["baseline"] + ["method"] * 6
    assert [arm.config_id for arm in arms] == ["baseline"] + [f"method-{k}" for k in range(1, 7)]
    assert [arm.overrides[f"{SB}.keep"] for arm in arms[1:]] == [0.25] * 3 + [0.75] * 3
    scale = [arm.overrides[f"{SB}.scale_factor"] for arm in arms[1:]]
    assert all(isinstance(value, float) and 0.5 <= value <= 1.0 for value in scale)
    assert len(set(scale)) == 6  # drawn once per configuration, at the driver
    assert sweep_arms(config) == arms  # the same draws on every run of the file (seeded by the experiment's seed)
    assert arms[0].overrides == {f"{SB}.keep": None, f"{SB}.scale_factor": None}


def test_repeats_pair_every_configuration_by_seed_and_interleave_them(tmp_path):
    from raycomp.launch.sweep.space import sweep_arms

    experiment = tiny_experiment(tmp_path)
    experiment["sweep"].update({"repeats": 3, "control": True, "baseline_budgets": [0.5, 1.0]})
    arms = sweep_arms(ExperimentConfig.from_dict(experiment))
    configs = {"baseline", "control", "frontier-0.5", "method-1", "method-2"}
    assert len(arms) == 3 * len(configs)
    for repeat in range(3):  # seed by seed: each block holds every configuration once
        block = arms[repeat * 5 : (repeat + 1) * 5]
        assert {arm.config_id for arm in block} == configs and {arm.repeat for arm in block} == {repeat}
    firsts = {arms[repeat * 5].config_id for repeat in range(3)}
    assert firsts != {"baseline"}  # shuffled within each block: the baseline does not always run first
    by_config = {}
    for arm in arms:
        by_config.setdefault(arm.config_id, []).append(arm.overrides)
    assert all(len({str(o) for o in overrides}) == 1 for overrides in by_config.values())  # same values per seed


def test_past_trials_per_experiment_a_random_search_on_fifo_trains_in_consecutive_experiments(tmp_path, monkeypatch):
    """Tune's driver keeps every trial of an experiment until it ends (issue 33: ~0.14 MB a trial, over 2 GB at
    10,000), so a long random search trains in parts; a scheduler that compares trials (ASHA) or a searcher
    (Optuna) keeps them in one experiment."""
    from raycomp.launch.sweep import runner
    from raycomp.launch.sweep.space import sweep_arms

    monkeypatch.setattr(runner, "TRIALS_PER_EXPERIMENT", 2)
    experiment = tiny_experiment(tmp_path)
    experiment["sweep"] = {"space": {f"{SB}.keep": {"uniform": [0.2, 0.9]}}, "num_samples": 4}
    config = ExperimentConfig.from_dict(experiment)
    arms = sweep_arms(config)
    assert runner.experiment_parts(config, None) == [arms[:2], arms[2:4], arms[4:]]
    assert runner.experiment_parts(config, arms[1:3]) == [arms[1:3]]
    experiment["sweep"]["scheduler"] = {"name": "asha", "grace_period": 1}
    assert runner.experiment_parts(ExperimentConfig.from_dict(experiment), None) == [None]  # all, as before
    experiment["sweep"] = {"space": experiment["sweep"]["space"], "num_samples": 4, "search_alg": "optuna"}
    assert runner.experiment_parts(ExperimentConfig.from_dict(experiment), None) == [None]


def test_no_baseline_when_switched_off(tmp_path):
    from raycomp.launch.sweep.space import sweep_arms

    experiment = tiny_experiment(tmp_path)
    experiment["sweep"]["baseline"] = False
    assert [arm.variant for arm in sweep_arms(ExperimentConfig.from_dict(experiment))] == ["method"] * 2


def test_trial_config_drops_swept_algorithm_for_baseline_and_applies_overrides(tmp_path):
    from raycomp.config import trial_config

    base = ExperimentConfig.from_dict(tiny_experiment(tmp_path))
    baseline = trial_config(base, Arm("baseline", overrides={f"{SB}.keep": None}))
    assert baseline.algorithms == {} and baseline.sweep is None
    method = trial_config(base, Arm("method", overrides={f"{SB}.keep": 0.75}))
    assert method.algorithms["selective_backprop"].keep == 0.75 and method.sweep is None


def test_trials_fit_the_cores(tmp_path):
    from raycomp.launch.sweep.tuner import concurrent_trials, trial_resources

    local = ExperimentConfig.from_dict(tiny_experiment(tmp_path))
    assert trial_resources(local) == {"CPU": 1.0, "GPU": 0.0}
    assert concurrent_trials(local, {"CPU": 2}) == 2
    ddp = local.with_overrides({"scaling.num_workers": 2})
    assert trial_resources(ddp) == {"CPU": 0, "trial_slot": 1}  # the trial's driver takes no core
    assert concurrent_trials(ddp, {"CPU": 2}) == 1
    assert concurrent_trials(ddp, {"CPU": 8}) == 4
    gpu = ddp.with_overrides({"scaling.use_gpu": True})
    assert concurrent_trials(gpu, {"CPU": 16, "GPU": 2}) == 1
    capped = local.with_overrides({"sweep.max_concurrent_trials": 1})
    assert concurrent_trials(capped, {"CPU": 64}) == 1


def test_local_mode_trials_share_a_gpu_by_asking_for_a_fraction(tmp_path):
    """Issue 24: four small local-mode trials on one card, each holding a quarter of it (docs/runner.md)."""
    from raycomp.launch.sweep.tuner import concurrent_trials, trial_resources

    shared = ExperimentConfig.from_dict(tiny_experiment(tmp_path)).with_overrides(
        {"scaling.use_gpu": True, "scaling.gpus_per_worker": 0.25, "scaling.cpus_per_worker": 2}
    )
    assert trial_resources(shared) == {"CPU": 2.0, "GPU": 0.25}  # Tune's resources for the trial's own process
    assert concurrent_trials(shared, {"CPU": 16, "GPU": 1}) == 4
    assert concurrent_trials(shared, {"CPU": 4, "GPU": 1}) == 2  # the cores bound it too


# ---- real sweeps ------------------------------------------------------------------------------------------


def test_an_optuna_sweep_runs_the_baseline_first_and_reports_every_trial_against_it(tmp_path, local_ray, capsys):
    """Optuna's own samples after the baseline (a grid search is the default, which most sweeps here run), each
    reported against the baseline in results.json, results.csv, the CLI's table and the trial's folder."""
    from raycomp.cli.tune import main

    experiment = tiny_experiment(tmp_path)
    experiment["sweep"] = {
        "space": {f"{SB}.keep": {"uniform": [0.2, 0.9]}, f"{SB}.scale_factor": {"choice": [0.5, 1.0]}},
        "num_samples": 2,
        "search_alg": "optuna",
        "max_concurrent_trials": 1,  # one trial process: a second costs more CPU than it saves
    }
    assert main([str(write(tmp_path / "tiny.yaml", experiment))]) == 0
    document = json.loads((tmp_path / "tiny" / "results.json").read_text())
    trials = document["trials"]
    assert [t["variant"] for t in trials] == ["baseline", "method", "method"]
    assert all(0.2 <= t[f"{SB}.keep"] <= 0.9 and t[f"{SB}.scale_factor"] in (0.5, 1.0) for t in trials[1:])
    assert all(t["status"] == "TERMINATED" and 0 <= t["eval/accuracy"] <= 1 and t["wall_s"] > 0 for t in trials)
    assert trials[0]["speedup"] == pytest.approx(1.0)
    assert document["best"]["eval/accuracy"] == max(t["eval/accuracy"] for t in trials)
    csv_header = (tmp_path / "tiny" / "results.csv").read_text().splitlines()[0]
    assert "speedup" in csv_header and f"{SB}.keep" in csv_header
    out = capsys.readouterr().out
    assert "baseline" in out and "best:" in out and "time_to_baseline_s" in out
    # Tune's JSON and CSV results in each trial's folder, no TensorBoard file. Tune is sent only the keys it reads
    # (sinks.TUNE_KEYS and the metric): each full result is in the trial's history.jsonl, what results.json is
    # built from, so the machine and the steps' CPU time are there and not in Tune's copy.
    for trial in trials:
        folder = tmp_path / "tiny" / trial["trial_id"]
        assert {"result.json", "progress.csv", TRIAL_HISTORY} <= {path.name for path in folder.iterdir()}
        sent = json.loads((folder / "result.json").read_text().splitlines()[-1])
        assert sent["finished"] and 0 <= sent["eval/accuracy"] <= 1 and "epoch" in sent and "train/loss" in sent
        assert not {"machine", "traces", "time/train_steps_cpu_s", "eval/loss"} & sent.keys(), sorted(sent)
        assert trial["machine"] and trial["steps_cpu_s"] > 0
    assert not list((tmp_path / "tiny").rglob("events.out.tfevents*"))


def test_a_sweep_in_parts_is_one_sweep_to_its_results_and_resume(tmp_path, local_ray, monkeypatch, capsys):
    """Three arms two to an experiment, a Ctrl-C between the two parts (while the second one's Tuner is built,
    outside Tune's handler): the sweep stops as at a Ctrl-C inside Tune, the arm of the part not started counts
    unfinished, ``--resume`` trains it in a ``more-<k>`` (ledger.py), each trial is once in results.json, and a
    second ``--resume`` restores both parts and trains nothing."""
    from raycomp.cli.tune import main
    from raycomp.launch.sweep import runner

    monkeypatch.setattr(runner, "TRIALS_PER_EXPERIMENT", 2)
    build = runner.build_tuner
    built = []

    def build_then_interrupt(*args, **kwargs):
        built.append(build(*args, **kwargs))
        if len(built) == 2:
            signal.raise_signal(signal.SIGINT)  # Ctrl-C as the second part is about to start
        return built[-1]

    monkeypatch.setattr(runner, "build_tuner", build_then_interrupt)
    experiment = tiny_experiment(tmp_path, name="parts", max_duration="1ep")
    experiment["sweep"]["max_concurrent_trials"] = 1
    path = write(tmp_path / "parts.yaml", experiment)
    run_dir = tmp_path / "parts"

    def trial_folders(folder: Path) -> int:
        return sum(1 for child in folder.iterdir() if (child / "params.json").exists())

    def trials() -> list[tuple[str, str]]:
        document = json.loads((run_dir / "results.json").read_text())
        return sorted((trial["config_id"], trial["status"]) for trial in document["trials"])

    assert main([str(path), "--no-report"]) == 130
    out = capsys.readouterr().out
    assert "sweep part 1 of 2: 2 trial(s)" in out and "sweep part 2 of 2" not in out
    assert "sweep interrupted with 1 trials unfinished" in out
    monkeypatch.setattr(runner, "build_tuner", build)
    assert main([str(path), "--no-report", "--resume"]) == 0
    assert "training 1 arm(s) the sweep has no trial of yet" in capsys.readouterr().out
    done = [("baseline", "TERMINATED"), ("method-1", "TERMINATED"), ("method-2", "TERMINATED")]
    assert trials() == done
    # more-1 is the experiment the Ctrl-C stopped before it started (Tune's tuner.pkl, no state, no trial)
    assert [trial_folders(folder) for folder in (run_dir, run_dir / "more-1", run_dir / "more-2")] == [2, 0, 1]
    assert main([str(path), "--no-report", "--resume"]) == 0
    assert "has no trial of yet" not in capsys.readouterr().out
    assert trials() == done and not (run_dir / "more-3").exists()


def test_multi_worker_trials_launch_a_torch_trainer(tmp_path, local_ray):
    from raycomp.cli.tune import main

    experiment = tiny_experiment(tmp_path, name="ddp")
    experiment["scaling"] = {"num_workers": 2}
    experiment["max_duration"] = "1ep"
    experiment["sweep"] = {"space": {f"{SB}.keep": {"grid": [0.5]}}, "baseline": False}
    assert main([str(write(tmp_path / "ddp.yaml", experiment))]) == 0
    trials = json.loads((tmp_path / "ddp" / "results.json").read_text())["trials"]
    assert len(trials) == 1 and trials[0]["status"] == "TERMINATED"
    train_runs = list((tmp_path / "ddp" / "train").iterdir())  # Ray Train's run, named after the trial
    assert [run.name for run in train_runs] == [trials[0]["trial_id"]]
    assert list(train_runs[0].glob("checkpoint_*/checkpoint.pt"))
    # Rank 0 appended each result to the Tune trial's own history (a killed driver's lost results are there).
    history = (tmp_path / "ddp" / trials[0]["trial_id"] / "history.jsonl").read_text().splitlines()
    assert [json.loads(row)["step"] for row in history] == [row["step"] for row in trials[0]["curve"]]


@pytest.mark.subprocess_cli
def test_experiments_sb_yaml_is_the_laptop_sweep():
    config = load_experiment(Path(__file__).parents[2] / "experiments" / "sb.yaml")
    assert config.scaling.num_workers == 0 and config.data.name == "synthetic"
    swept = {path.rsplit(".", 1)[-1] for path in config.sweep.space}
    assert swept == {"start", "end", "keep", "scale_factor", "interrupt"}
    assert config.sweep.adaptive and config.sweep.frontier_budgets == [0.5, 0.75, 1.5]  # issue 23
    assert config.sweep.timing == "cpu"


def test_d2_a_sweep_whose_saved_state_was_cut_short_resumes_to_its_end(tmp_path, local_ray, capsys):
    """Reliability notes D2: a full disk cut Tune's experiment state short. On --resume Tune, unable to read it,
    started the experiment again with an empty config: a trial with no arm, `KeyError: 'arm'` on every resume (exit
    1), which also overwrote the first trial's params.json. The damaged state is set aside now, and the trials go
    on from their own folders: each arm once, finished, under one MLflow run."""
    from mlflow import MlflowClient

    from raycomp.cli.tune import main

    experiment = tiny_experiment(tmp_path, name="cut", max_duration="1ep")
    experiment["sweep"] = {"space": {f"{SB}.keep": {"grid": [0.5]}}, "max_concurrent_trials": 1}
    path = write(tmp_path / "cut.yaml", experiment)
    assert main([str(path), "--no-report"]) == 0
    (state,) = (tmp_path / "cut").glob("experiment_state-*.json")
    state.write_text(state.read_text()[: state.stat().st_size // 2])  # what a disk that filled up left
    capsys.readouterr()
    assert main([str(path), "--no-report", "--resume"]) == 0
    out, err = capsys.readouterr()
    assert "cannot be read" in err and "KeyError" not in out + err
    trials = json.loads((tmp_path / "cut" / "results.json").read_text())["trials"]
    assert sorted((t["config_id"], t["status"]) for t in trials) == [
        ("baseline", "TERMINATED"),
        ("method-1", "TERMINATED"),
    ]
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("cut").experiment_id])
    kinds = sorted((run.data.tags["raycomp.kind"], run.info.status) for run in runs)
    assert kinds == [("sweep", "FINISHED"), ("trial", "FINISHED"), ("trial", "FINISHED")]  # each arm kept its run


def test_d2_a_trial_tune_makes_up_without_an_arm_ends_at_once_and_counts_nowhere(tmp_path, local_ray):
    """The trial Tune makes when it restarts an experiment it cannot read has an empty config: it trains nothing,
    fails nothing, and is in no table or count (it was a failed trial, `KeyError: 'arm'`, in every table)."""
    from ray import tune

    from raycomp.launch.sweep.outcome import trial_records, unfinished
    from raycomp.launch.sweep.tuner import make_trainable

    config = ExperimentConfig.from_dict(tiny_experiment(tmp_path, name="ghost"))
    run_config = tune.RunConfig(name="ghost", storage_path=str(tmp_path), verbose=0)
    grid = tune.Tuner(make_trainable(config, None), param_space={}, run_config=run_config).fit()
    assert len(grid) == 1 and grid[0].error is None and not list((tmp_path / "ghost").glob("*/checkpoint_*"))
    assert trial_records(grid) == [] and unfinished(grid) == 0
