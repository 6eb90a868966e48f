"""H1 through a real sweep: a FIFO sweep over an overlapping SB range runs every trial to TERMINATED.

``start`` is drawn from [0, 0.6] and ``end`` is 0.5: the driver accepts this (each bound is valid beside the
other's base value), and the drawn start (below 0.5 at this seed) makes a valid trial. Before the fix a
trial kept the sweep section and was held to ``start``'s bound 0.6 beside its own ``end`` 0.5, so every
method trial ended ERROR; an explicit ``scheduler: {name: fifo}`` was refused in the trial the same way. (A trial
under ASHA trains with its scheduler's section too: tests/tracking/test_sweep_tracking.py's ASHA sweep, whose
stopped trials end KILLED, not ERROR.)
Shrunk as tests/launch/test_sweep.py's sweeps (256 samples, 2 epochs, local-mode trials, one shared Ray).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from raycomp.config import ExperimentConfig

SB = "algorithms.selective_backprop"


def _experiment(storage: Path, name: str, scheduler: dict) -> dict:
    return {
        "name": name,
        "seed": 1,  # draws start 0.195; seed 0 would draw 0.5997, an invalid pair
        "data": {"num_train": 256, "num_test": 128, "batch_size": 64},
        "max_duration": "2ep",
        "algorithms": {"selective_backprop": {"start": 0.0, "end": 0.9, "keep": 0.5, "interrupt": 0}},
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "1ep", "num_to_keep": 1},
        "storage_path": str(storage),
        "tracking": {"enabled": False},
        "sweep": {
            "space": {f"{SB}.start": {"uniform": [0.0, 0.6]}, f"{SB}.end": {"grid": [0.5]}},
            "scheduler": scheduler,
            "max_concurrent_trials": 1,
        },
    }


def test_h1_a_fifo_sweep_over_overlapping_ranges_runs_every_trial_to_terminated(tmp_path, local_ray):
    from raycomp.cli.tune import main
    from raycomp.launch.sweep.space import sweep_arms

    name = "fifo"
    experiment = _experiment(tmp_path, name, {"name": name})
    drawn = sweep_arms(ExperimentConfig.from_dict(experiment))[-1].overrides[f"{SB}.start"]
    assert drawn < 0.5  # this seed draws a valid start: the trial must train, not be held to the bound 0.6
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(experiment))
    assert main([str(path), "--no-report"]) == 0
    trials = json.loads((tmp_path / name / "results.json").read_text())["trials"]
    assert sorted(t["variant"] for t in trials) == ["baseline", "method"]
    assert [t["status"] for t in trials] == ["TERMINATED", "TERMINATED"], trials
    method = next(t for t in trials if t["variant"] == "method")
    assert (method[f"{SB}.start"], method[f"{SB}.end"]) == (drawn, 0.5)
    # checkpoint.num_to_keep: 1 honoured in each trial's Tune folder, 2 epochs a checkpoint each (issue 59 item 7)
    kept = [folder.parent for folder in (tmp_path / name).glob("**/checkpoint_*") if folder.is_dir()]
    assert len(kept) == 2 and len(set(kept)) == 2, kept


def test_actors_are_reused_only_where_no_scheduler_stops_trials_mid_run(tmp_path):
    """Under ASHA, reusing a stopped trial's actor waits for its thread to unwind and, when it has not, fails
    the next trial before it trains (a CI run lost a trial that way): each trial gets its own actor there."""
    from raycomp.launch.sweep.tuner import reuses_actors

    def config(scheduler, workers=0):
        experiment = _experiment(tmp_path, "reuse", scheduler)
        experiment["scaling"] = {"num_workers": workers}
        return ExperimentConfig.from_dict(experiment)

    assert reuses_actors(config(None)) and reuses_actors(config({"name": "fifo"}))
    assert not reuses_actors(config({"name": "asha", "grace_period": 1, "reduction_factor": 2}))
    assert not reuses_actors(config(None, workers=1))  # a TorchTrainer per trial: nothing to reuse
