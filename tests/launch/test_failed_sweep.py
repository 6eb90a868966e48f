"""A real sweep whose method trials fail (issue 32 items 2 and 5): a user's own model
(tests/plugins/raycomp_test_nets.py) raises in forward after a few training steps in the method arm only. The
configuration says ``failed`` with the error's first line in the CLI's verdict rows, results.json, the report and
the MLflow store, "best" is none with that reason, and the sweep's two seeds are called uninformative before it
starts and on its page."""

from __future__ import annotations

import json

import yaml
from helpers import command_here

FIRST_LINE = "RuntimeError: planted failure at training step 3"


def test_a_sweep_whose_method_fails_says_failed_everywhere(tmp_path, local_ray, test_plugins):
    """``python -m raycomp.tune`` in this process, on the suite's Ray; its model (tests/plugins/raycomp_test_nets.py)
    fails after two training steps in the method's trials."""
    experiment = {
        "name": "failing",
        "model": {"class_path": "raycomp_test_nets.FailsAfter", "init_args": {"num_classes": 10}},
        "data": {"num_train": 64, "num_test": 32, "batch_size": 16},
        "max_duration": "1ep",
        "storage_path": str(tmp_path / "runs"),
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "1ep", "num_to_keep": 1},
        "sweep": {
            "space": {"model.init_args.fail_after": {"choice": [2]}},
            "repeats": 2,
            "control": True,
            "scheduler": {"name": "fifo"},
            "max_concurrent_trials": 1,  # one trial process at a time: a second costs more CPU than it saves here
        },
    }
    (tmp_path / "failing.yaml").write_text(yaml.safe_dump(experiment))
    code, out = command_here([str(tmp_path / "failing.yaml")])
    assert code == 1, out[-6000:]  # a trial failed

    # Before any trial: two seeds cannot resolve a speed-up.
    warning = "warning: sweep.repeats: 2 gives intervals from 2 seeds, which are uninformative"
    assert warning in out and out.index(warning) < out.index("== Status ==")  # Tune's first trial table

    row = next(line for line in out.splitlines() if line.startswith("method-1 "))
    assert " failed " in f"{row} " and FIRST_LINE in row and "no evidence" not in row and "second line" not in row
    assert f"best: none (every configuration failed: {FIRST_LINE})" in out

    folder = tmp_path / "runs" / "failing"
    document = json.loads((folder / "results.json").read_text())
    configs = {row["config_id"]: row for row in document["configs"]}
    assert (configs["method-1"]["verdict"], configs["method-1"]["error"]) == ("failed", FIRST_LINE)
    assert configs["method-1"]["failed"] == [0, 1] and document["best_config"] is None
    assert {t["error_line"] for t in document["trials"] if t["variant"] == "method"} == {FIRST_LINE}

    page = (folder / "report" / "report.html").read_text()
    assert '<span class="verdict failed">failed</span>' in page and FIRST_LINE in page
    assert "as it should be" not in page
    if document["control"] == "no evidence":  # on trials this short, timing noise may resolve it either way
        assert "control (A/A): no evidence (from 2 seeds: uninformative, it tests nothing)" in out
        assert "uninformative: from 2 seeds its interval rules nothing out" in page

    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("failing").experiment_id])
    trials = [run for run in runs if run.data.tags.get("raycomp.config_id") == "method-1"]
    assert len(trials) == 2
    assert all(run.data.tags["raycomp.verdict"] == "failed" for run in trials)
    assert all(run.data.tags["raycomp.error"] == FIRST_LINE for run in trials)
    # each trial's run ends as the trial did, and the rest of the sweep finished
    assert {run.info.status for run in trials} == {"FAILED"}
    assert {run.info.status for run in runs if run not in trials} == {"FINISHED"}
    parent = next(run for run in runs if "raycomp.best_config" in run.data.tags)
    assert parent.data.tags["raycomp.best_config"] == "None"
    with open(client.download_artifacts(parent.info.run_id, "configs.json", str(tmp_path))) as file:
        table = json.load(file)
    rows = {row[0]: dict(zip(table["columns"], row, strict=True)) for row in table["data"]}  # config_id first
    assert (rows["method-1"]["verdict"], rows["method-1"]["error"]) == ("failed", FIRST_LINE)
