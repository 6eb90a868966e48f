"""experiments/lm.yaml and lm_gpu.yaml: the language-model sweep runs end to end, shrunk, with MLflow tracking."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow import MlflowClient

from raycomp.base import keys
from raycomp.cli.tune import main
from raycomp.config import load_experiment
from raycomp.tracking import read

EXPERIMENTS = Path(__file__).parents[2] / "experiments"
METHODS = {"selective_backprop", "alibi", "gated_linear_units", "fused_layernorm", "seq_length_warmup"}


def shrunk(tmp_path: Path, *changes: str) -> list[str]:
    return [
        arg
        for change in (
            f"storage_path={tmp_path / 'runs'}",
            "max_duration=4ba",
            "eval.interval=2ba",
            "checkpoint.interval=2ba",
            "data.max_bytes=60000",
            "data.seq_len=32",
            "algorithms.seq_length_warmup.max_seq_length=32",
            "algorithms.seq_length_warmup.min_seq_length=8",
            "algorithms.seq_length_warmup.step_size=8",
            "data.batch_size=8",
            "model.d_model=16",
            "model.n_layers=1",
            "sweep.max_concurrent_trials=1",  # one trial process: a second costs more CPU than it saves here
            *changes,
        )
        for arg in ("--set", change)
    ]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    # This process's own cache; the session's local Ray gives its trial processes the run's (tests/conftest.py).
    monkeypatch.setenv("RAYCOMP_CACHE_DIR", str(tmp_path / "cache"))


def test_lm_yaml_runs_shrunk_with_tracking(tmp_path, cache_dir, local_ray):
    """Each method alone, then all five together, against one baseline that runs none of them."""
    config = load_experiment(EXPERIMENTS / "lm.yaml")
    assert (config.model.name, config.data.name) == ("gpt", "stdlib_text")
    assert set(config.sweep.swept_algorithms()) == METHODS  # so the baseline drops all five
    changes = ("sweep.repeats=1", "sweep.max_repeats=null", "sweep.control=false", "sweep.baseline_budgets=[1.0]")
    assert main([str(EXPERIMENTS / "lm.yaml"), *shrunk(tmp_path, *changes)]) == 0
    results = json.loads((tmp_path / "runs" / "lm" / "results.json").read_text())
    trials = results["trials"]
    assert sorted(t["config_id"] for t in trials) == ["baseline", *(f"method-{i}" for i in range(1, 6))]
    assert all(t["status"] == "TERMINATED" for t in trials)
    client = MlflowClient(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("lm")
    runs = client.search_runs([experiment.experiment_id], "tags.`raycomp.kind` = 'trial'", max_results=100)
    assert len(runs) == len(trials) and {run.info.status for run in runs} == {"FINISHED"}
    ran = {run.data.tags["raycomp.config_id"]: set(run.data.tags[keys.ALGORITHMS_TAG].split(",")) for run in runs}
    listed = {t["config_id"]: set(t.get("algorithms") or ["none"]) for t in trials}
    assert ran == listed and ran["baseline"] == {"none"} and ran["method-5"] == METHODS
    alone = sorted(name for names in ran.values() if len(names) == 1 for name in names if name != "none")
    assert alone == sorted(METHODS - {"fused_layernorm"})  # FusedLayerNorm alone is the control on a CPU
    with_alibi = [run for run in runs if "alibi" in ran[run.data.tags["raycomp.config_id"]]]
    assert len(with_alibi) == 2 and all(run.data.metrics["alibi/num_replaced"] == 1 for run in with_alibi)
    assert all("eval/perplexity" in run.data.metrics for run in runs)
    # Rebuilt from the child runs alone (a sweep whose results.json artifact is lost), each lists what it ran.
    parent = client.search_runs([experiment.experiment_id], "tags.`raycomp.kind` = 'sweep'")[0]
    rebuilt = {t.config_id: t.overrides.get("algorithms") for t in read._rebuild(client, parent).trials}
    assert rebuilt == {t["config_id"]: t.get("algorithms") for t in trials}


def test_lm_gpu_yaml_is_the_gpu_version_of_the_same_study():
    cpu, gpu = load_experiment(EXPERIMENTS / "lm.yaml"), load_experiment(EXPERIMENTS / "lm_gpu.yaml")
    assert gpu.scaling.use_gpu and gpu.data.num_workers > 0 and gpu.scaling.num_workers >= 1
    assert gpu.model.d_model > cpu.model.d_model and gpu.data.seq_len > cpu.data.seq_len
    assert set(gpu.algorithms) == set(cpu.algorithms) == METHODS
    assert gpu.algorithms["seq_length_warmup"].max_seq_length == gpu.data.seq_len
