"""A real sweep judges a planted slowdown `slower` and its A/A control `no evidence`, on a loaded machine too.

The slowdown (tests/plugins) sleeps 0.25 s per batch, many times a step's own time (tens of ms); with it the method
arm runs SelectiveBackprop at keep 1 over the whole run, which trains as the baseline does but for an extra
forward pass per batch (issue 23's arm). On this tiny run its accuracy equals the baseline's at every seed;
the case of a slower arm a few tenths more accurate, within tolerance, is tests/report/test_verdicts.py's
(test_a_slower_config_a_few_tenths_more_accurate_is_slower_not_no_evidence and the simulated sweeps).
The sweep is adaptive: 2 seeds (too few for any verdict at its look's level), then one seed at a time up
to 6, alpha spent over the looks at 99.9 % in all, so the method resolves within 6 seeds on a loaded
2-core machine and stops, and the control, identical to the baseline, comes out `faster` or `slower` about
once in a thousand runs. Times are the training steps' own (launch/step_clock.StepClock). The command runs in this
process on the suite's Ray, whose workers register the slowdown through ``RAYCOMP_PLUGINS`` (tests/conftest.py).
"""

from __future__ import annotations

import json

import pytest
import yaml
from helpers import command_here


@pytest.mark.measured
def test_planted_slowdown_is_slower_and_the_control_shows_no_evidence(tmp_path, local_ray, test_plugins):
    experiment = {
        "name": "planted",
        "model": {"name": "cnn_plain"},
        "data": {"num_train": 64, "num_test": 32, "batch_size": 16},
        "max_duration": "1ep",
        "storage_path": str(tmp_path),
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "1ep", "num_to_keep": 1},
        "tracking": {"enabled": False},
        "algorithms": {
            "slowdown": {"seconds": 0.25},
            "selective_backprop": {"start": 0.0, "end": 1.0, "keep": 1.0, "scale_factor": 1.0, "interrupt": 0},
        },
        "sweep": {
            "space": {
                "algorithms.slowdown.seconds": {"choice": [0.25]},
                "algorithms.selective_backprop.keep": {"choice": [1.0]},
            },
            "repeats": 2,
            "max_repeats": 6,
            "control": True,
            "confidence": 0.999,
            "scheduler": {"name": "fifo"},
            "max_concurrent_trials": 1,  # each round's trials in one reused trial process, one after another
        },
    }
    path = tmp_path / "planted.yaml"
    path.write_text(yaml.safe_dump(experiment))
    code, out = command_here([str(path), "--no-report"])
    assert code == 0, out[-6000:]
    document = json.loads((tmp_path / "planted" / "results.json").read_text())
    configs = {row["config_id"]: row for row in document["configs"]}
    assert set(configs) == {"baseline", "control", "method-1"}
    method, control = configs["method-1"], configs["control"]
    seeds = len(method["seeds"])
    assert 3 <= seeds <= 6 and method["stopped"] == f"resolved at {seeds} seeds", method  # when: timing noise
    assert len(configs["baseline"]["seeds"]) == len(control["seeds"]) == seeds  # references paired, no more
    assert method["verdict"] == "slower", method
    assert configs["method-1"]["speedup_ci_high"] < 1
    assert control["verdict"] == "no evidence", control
    assert "adaptive repeats: one more seed for method-1 (seed 2)" in out
    assert "adaptive repeats: the baseline's eval/accuracy varies by ±" in out  # said at the first look
    assert f"resolved at {seeds} seeds" in out
    assert document["control"] == "no evidence"
    assert "control (A/A): no evidence" in out
