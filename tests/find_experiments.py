"""Shrunk find experiments for the tests that run one for real (tests/find/test_find_resume.py, test_find_runs.py,
tests/launch/test_multinode.py), and what a finished one printed and wrote.

It races one ProgressiveResizing setting (an eighth of the pixels for most of training, a sure speed-up even on a
busy machine) at two seeds a stage, with an accuracy tolerance of 1 (the tiny set's accuracy says nothing): what
the tests check is the path through the stages, not a verdict on the CNN.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from mlflow import MlflowClient

from raycomp.config import load_experiment

EXPERIMENTS = Path(__file__).parents[1] / "experiments"
STAGES = ("screen", "tune", "compose", "confirm")
SHRUNK_METHOD = {"progressive_resizing": {"initial_scale": 0.25, "delay_fraction": 0.8, "finetune_fraction": 0.0}}


def shrunk(storage: Path, name: str, methods: Any = None, **find: Any) -> Path:
    config = {
        "name": name,
        "model": {"name": "cnn"},
        "data": {"name": "synthetic", "num_train": 512, "num_test": 128, "batch_size": 64},
        "max_duration": "1ep",
        "scaling": {"num_workers": 0, "cpus_per_worker": 1},
        "checkpoint": {"interval": "1ep", "num_to_keep": 1},
        "storage_path": str(storage),
        "tracking": {"tracking_uri": f"sqlite:///{storage / 'mlflow.db'}"},
        "find": {
            "methods": methods or SHRUNK_METHOD,
            "budget": "10m",
            "accuracy_tolerance": 1.0,
            "timing": "cpu",
            "baseline_budgets": [],
            "control": True,
            "max_settings": 1,
            **{stage: [2, 2] for stage in ("screen", "tune", "compose", "confirm")},
            **find,
        },
    }
    path = storage / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def shrunk_find_cnn(storage: Path, name: str, proxy: str | None = None) -> Path:
    """experiments/find_cnn.yaml shrunk: tiny data, one sure method, two seeds a stage (up to four in Screen and
    Confirm, when two do not resolve on a busy machine), tracked in a SQLite store in ``storage``; with ``proxy``
    (``0.5dur``) its search races on that share of the run (issue 57)."""
    config = yaml.safe_load((EXPERIMENTS / "find_cnn.yaml").read_text())
    config |= {
        "name": name,
        "storage_path": str(storage),
        "tracking": {"tracking_uri": f"sqlite:///{storage / 'mlflow.db'}"},
    }
    config["data"] |= {"num_train": 512, "num_test": 128, "batch_size": 64}
    config["find"] |= {
        "methods": SHRUNK_METHOD,
        "accuracy_tolerance": 1.0,  # the tiny set's accuracy says nothing
        "baseline_budgets": [],
        "max_settings": 1,
        # One trial at a time: each round's trials share one trial process (its imports and first MLflow and
        # optimizer set-up, seconds of CPU each), and none times its steps beside another.
        "max_concurrent_trials": 1,
        **{stage: [2, 4] if stage in ("screen", "confirm") else [2, 2] for stage in STAGES},
        **({"proxy": {"max_duration": proxy}} if proxy else {}),
    }
    path = storage / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


RECIPE = "progressive_resizing(delay_fraction=0.8,finetune_fraction=0.0,initial_scale=0.25)"


def check_answer(printed: str, folder: Path, candidates_line: str) -> dict:
    """What a finished shrunk find printed and wrote agrees with its find.json, whatever the answer.

    Whether two to four paired seeds show the sure method ``faster`` (in Screen, and again in Confirm with the
    control arm's timing holding) is a timed outcome: on a 2-core machine shared with another test it can come out
    ``no evidence`` (the paired t at two seeds needs both seeds' ratios within a ninth of each other), so the test
    checks the answer the find gave, each way, not the machine. The decisions themselves are checked on simulated
    times (test_find_simulated.py).
    """
    assert candidates_line in printed
    assert "candidates (the stage each reached, and how it ended there):" in printed
    answer = json.loads((folder / "find.json").read_text())
    # what its seeds could support, said before the race and under the answer (issue 55)
    assert answer["spread"].startswith("the baseline's eval/accuracy varies by ±"), answer["spread"]
    assert f"find: {answer['spread']}" in printed and f"  ({answer['spread']})" in printed
    # progress as it is decided (issue 59 item 2): where the find stands before each round, each step of a
    # candidate's path as it is taken (the last one, at least, in this process), and no stop printed as a traceback
    last = answer["paths"]["progressive_resizing"][-1]
    assert f"find: {last['stage']}: progressive_resizing: {last['outcome']}\n" in printed, printed[-3000:]
    assert re.search(r"find: \d+ trials done, \d+ in this round; [\d.]+ min of the \d+-minute budget spent", printed)
    assert "Exception ignored" not in printed
    assert "mlflow ui --backend-store-uri" in printed and "viewStateShareKey=" in printed  # its page (item 6)
    path = [step["stage"] for step in answer["paths"]["progressive_resizing"]]
    if answer["chosen"] is None:  # Screen could not show it faster on this machine
        assert path == ["screen"] and "not shown faster in" in answer["paths"]["progressive_resizing"][0]["outcome"]
    else:
        assert answer["chosen"] == RECIPE and path == list(STAGES)
        assert min(answer["verdict"]["seeds"]) >= 2  # Confirm's own seeds, after the search's (0, 1, maybe more)
    if answer["proxy"] is not None:  # issue 57: its cost said up front, and whether the proxy held under the answer
        assert re.search(r"find: at most [\d,]+ trial-epochs with the proxy \(0\.5dur of the run\)", printed)
        assert "did the proxy hold? (the search raced on 0.5dur of the run; Confirm ran at full length)" in printed
        if answer["chosen"] is not None:
            (held,) = [row for row in answer["proxy"]["recipes"] if row["recipe"] == RECIPE]
            assert held["full"]["verdict"] == answer["verdict"]["verdict"] and isinstance(held["held"], bool)
    if answer["recommended"] is not None:
        assert answer["recommended"] == SHRUNK_METHOD and answer["verdict"]["verdict"] == "faster"
        assert f"recommended: {RECIPE}" in printed
        assert "paste into your experiment:\n  algorithms:\n    progressive_resizing: {delay_fraction: 0.8" in printed
        recipe = load_experiment(str(folder / "recipe.yaml"))
        assert list(recipe.to_dict()["algorithms"]) == ["progressive_resizing"]
    else:  # said so, and no recipe.yaml to train
        assert "none of the 1 methods is faster at equal accuracy on this model" in printed
        if answer["chosen"] is not None:
            timing_held = answer["control"] is None or answer["control"]["verdict"] in ("no evidence", "equivalent")
            assert answer["verdict"]["verdict"] != "faster" or not timing_held
        assert not (folder / "recipe.yaml").exists()
    return answer


def check_find_runs(storage: Path, name: str, answer: dict, proxy: bool = False) -> None:
    """The find's MLflow runs: one parent with the recipe's tag, each trial's run tagged with its stage (the method
    and the baseline at each Screen seed; the recipe, the baseline and the control at each Confirm seed), all
    FINISHED, and the find's page attached to the parent. With a ``proxy`` the search's arms are its own
    (``baseline@proxy``) and Confirm's the full run's."""
    client = MlflowClient(f"sqlite:///{storage / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name(name).experiment_id], max_results=1000)
    (parent,) = [run for run in runs if run.data.tags.get("raycomp.kind") == "find"]
    trials = [run for run in runs if run.data.tags.get("raycomp.kind") == "trial"]
    assert parent.data.tags.get("raycomp.find.recipe") == (RECIPE if answer["recommended"] else "none")
    stages = {
        (t.data.tags["raycomp.config_id"], t.data.tags["raycomp.repeat"]): t.data.tags.get("raycomp.find.stage")
        for t in trials
    }
    by_stage = {stage: sorted(int(r) for (_, r), st in stages.items() if st == stage) for stage in STAGES}
    searched = "baseline@proxy" if proxy else "baseline"
    assert len(stages) == len(trials) and stages[(searched, "0")] == "screen"
    assert len(by_stage["screen"]) == 2 * len(set(by_stage["screen"]))  # the method and the baseline, each seed
    if answer["chosen"] is not None:  # Confirm: the recipe, the baseline and the control at each fresh seed
        fresh = answer["verdict"]["seeds"]
        assert by_stage["confirm"] == sorted(3 * fresh) and stages[("control", str(fresh[0]))] == "confirm"
    assert {t.info.status for t in [parent, *trials]} == {"FINISHED"}
    assert {f.path for f in client.list_artifacts(parent.info.run_id, "report")} >= {"report/report.html"}
