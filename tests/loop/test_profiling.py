"""`profile:` records a torch.profiler trace of a few batches beside the checkpoints and on the MLflow run."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from mlflow import MlflowClient

from raycomp.cli.train import main
from raycomp.core import Callback


class SeesTheProfiler(Callback):
    """What a user's callback sees: the running profiler during training, None after."""

    def __init__(self) -> None:
        self.seen: list[bool] = []

    def batch_start(self, state, logger) -> None:
        self.seen.append(state.profiler is not None)


def test_a_trace_of_the_profiled_batches_is_written_and_attached_to_the_mlflow_run(tmp_path):
    from raycomp.config import ExperimentConfig
    from raycomp.config.recipe import build_trainer

    data = {
        "name": "profiled",
        "data": {"num_train": 64, "num_test": 32, "batch_size": 8},
        "max_duration": "6ba",
        "algorithms": {"selective_backprop": {"start": 0.0, "end": 1.0, "keep": 0.5, "interrupt": 0}},
        "scaling": {"num_workers": 0},
        "storage_path": str(tmp_path / "runs"),
        "profile": {"wait": 1, "warmup": 1, "active": 2},
    }
    watcher = SeesTheProfiler()
    trainer = build_trainer(ExperimentConfig.from_dict(data), callbacks=[watcher])
    trainer.fit()
    assert watcher.seen == [True] * 6 and trainer.state.profiler is None
    (trace,) = (tmp_path / "runs" / "profiled" / "profile").glob("trace-rank0-*.pt.trace.json")
    events = json.loads(trace.read_text())["traceEvents"]  # Chrome trace format: chrome://tracing, Perfetto
    names = {event.get("name") for event in events}
    assert "aten::convolution" in names and "ProfilerStep#3" in names and "ProfilerStep#1" not in names

    path = tmp_path / "profiled.yaml"  # the same through the CLI, tracked: the run carries the trace
    path.write_text(yaml.safe_dump({**data, "name": "cli"}))
    assert main([str(path)]) == 0
    client = MlflowClient(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("cli").experiment_id])
    (artifact,) = client.list_artifacts(run.info.run_id, "profile")
    local = Path(client.download_artifacts(run.info.run_id, artifact.path, str(tmp_path)))
    assert json.loads(local.read_text())["traceEvents"]
