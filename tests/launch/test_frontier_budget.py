"""The frontier trains the budget it names, with any data (issue 55): a data module batching by 32 over 400 samples
takes 13 steps an epoch, not the 4 that the default ``data.batch_size`` of 128 would give, and each frontier arm
trains its budget of the steps the baseline really takes (``config.trial.worker_budget``, counted by the worker from
its train loader)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from helpers import command_here

from raycomp.base import keys
from raycomp.config import ExperimentConfig, trial_config
from raycomp.config.arm import Arm
from raycomp.config.trial import worker_budget

BASELINE_STEPS = 3 * 13  # 3 epochs of 400 samples by 32: 12 full batches and one of 16


def by_32(storage: Path, budgets: list[float], **changes: object) -> dict:
    """A sweep of a plain classifier on ``raycomp_test_nets.Batches32`` (tests/plugins), trained for 3 epochs."""
    return {
        "name": "by32",
        "model": {"class_path": "torch.nn.Linear", "init_args": {"in_features": 4, "out_features": 2}},
        "data": {"class_path": "raycomp_test_nets.Batches32"},
        "max_duration": "3ep",
        "storage_path": str(storage),
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "3ep", "num_to_keep": 1},
        "sweep": {
            "space": {"optimizer.lr": {"grid": [0.05]}},
            "baseline_budgets": budgets,
            "scheduler": {"name": "fifo"},
            "max_concurrent_trials": 1,  # one trial process at a time: a second costs more CPU than it saves here
        },
        **changes,
    }


def test_each_frontier_arm_trains_its_budget_of_the_steps_the_baseline_takes(tmp_path, test_plugins):
    """Each arm as its trial trains it (``trial_config``, ``worker_budget``, the worker's recipe), in this process;
    gradient accumulation splits each batch, not the steps."""
    from raycomp.launch.sinks import FolderSink
    from raycomp.launch.spec import TrialSpec
    from raycomp.launch.worker import run_in_process
    from raycomp.loop.checkpoint import KeptCheckpoints

    sweep = ExperimentConfig.from_dict(by_32(tmp_path, [0.5, 0.75, 1.0, 1.5], grad_accum=2))
    arms = [Arm(keys.BASELINE)] + [Arm(keys.FRONTIER, f"frontier-{b:g}", budget=b) for b in (0.5, 0.75, 1.5)]
    steps = {}
    for arm in arms:
        config = trial_config(sweep, arm)
        assert config.max_duration == sweep.max_duration  # 1.5, 2.25 and 4.5 epochs: counted by the worker
        sink = FolderSink(KeptCheckpoints(tmp_path / arm.config_id))
        run_in_process(TrialSpec(config, *sweep.objective, budget=worker_budget(sweep, arm)), sink)  # as a trial
        steps[arm.budget or 1.0] = sink.history[-1][keys.STEP]
    assert steps == {budget: round(budget * BASELINE_STEPS) for budget in (0.5, 0.75, 1.0, 1.5)}  # 20, 29, 39, 58


def test_a_sweep_of_a_data_module_batching_by_32_prices_its_frontier_in_its_real_steps(
    tmp_path, local_ray, test_plugins
):
    """``python -m raycomp.tune`` on the suite's Ray: frontier-1.5 trains 1.5x the baseline's 39 steps (the find of
    issue 55 trained it 18), says so in results.json and in its MLflow run's params, and the frontier is judged."""
    from mlflow import MlflowClient

    (tmp_path / "by32.yaml").write_text(yaml.safe_dump(by_32(tmp_path / "runs", [1.0, 1.5])))
    code, out = command_here([str(tmp_path / "by32.yaml"), "--no-report"])
    assert code == 0, out[-6000:]
    document = json.loads((tmp_path / "runs" / "by32" / "results.json").read_text())
    steps = {trial["config_id"]: trial["curve"][-1]["step"] for trial in document["trials"]}
    assert steps["baseline"] == BASELINE_STEPS and steps["frontier-1.5"] == round(1.5 * BASELINE_STEPS)
    assert document["frontier_refused"] is None
    client = MlflowClient(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    frontier = client.search_runs(
        [e.experiment_id for e in client.search_experiments()], f"tags.{keys.CONFIG_ID_TAG} = 'frontier-1.5'"
    )
    assert [(run.data.params["max_duration"], run.data.params["data.batch_size"]) for run in frontier] == [
        (f"{round(1.5 * BASELINE_STEPS)}ba", "32")
    ]


def test_under_ddp_each_worker_counts_the_steps_of_its_own_shard(tmp_path, local_ray, test_plugins):
    """Two Ray Train workers shard the 400 samples (``user_data._sharded``): 7 batches an epoch each, so the
    baseline takes 21 steps and frontier-1.5 round(31.5) = 32, on every rank."""
    from raycomp.launch.cluster import torch_trainer
    from raycomp.launch.spec import TrialSpec

    sweep = ExperimentConfig.from_dict(by_32(tmp_path, [1.0, 1.5], scaling={"num_workers": 2}))
    arm = Arm(keys.FRONTIER, "frontier-1.5", budget=1.5)
    spec = TrialSpec(trial_config(sweep, arm), *sweep.objective, budget=worker_budget(sweep, arm))  # as a trial
    result = torch_trainer(spec, "frontier", str(tmp_path)).fit()
    assert (result.metrics[keys.STEP], result.metrics["workers"]) == (round(1.5 * 3 * 7), 2)
