"""A find's MLflow runs when the server dies mid-find (issue 30 item 5, as h2 is for a sweep): the find trains on,
untracked, and answers; once the server is back, `--resume` of the finished find ends every run it left open, sets
the stage tags the outage kept from the store, and puts the answer on the parent run."""

from __future__ import annotations

import json

import pytest
from find_experiments import shrunk

from raycomp.cli import find as find_cli

pytestmark = [pytest.mark.ray]


def test_a_server_dying_mid_find_costs_no_trial_and_resume_leaves_every_run_ended_and_tagged(
    tmp_path, mlflow_server, local_ray, capsys
):
    path = shrunk(tmp_path, "outage", control=False, max_concurrent_trials=1)
    config = path.read_text().replace(str(f"sqlite:///{tmp_path / 'mlflow.db'}"), mlflow_server.uri)
    path.write_text(config.replace("max_duration: 1ep", "max_duration: 3ep"))  # a trial trains a few seconds

    def runs() -> list:
        return mlflow_server.runs("outage")

    killer = mlflow_server.stop_once_a_trial_run_opens("outage")
    assert find_cli.main([str(path)]) == 0
    killer.join(timeout=10)
    answer = json.loads((tmp_path / "outage" / "find.json").read_text())
    assert all(not arm["failed"] for arm in answer["tried"]), answer["tried"]  # trained on, untracked
    left_open = [r for r in runs() if r.info.status == "RUNNING"]
    assert left_open, "the server did not die while the find ran: make its trials longer"

    mlflow_server.start()  # the server is back
    capsys.readouterr()
    assert find_cli.main([str(path), "--resume"]) == 0
    out = capsys.readouterr().out
    assert "candidates (the stage each reached, and how it ended there):" in out
    assert {r.info.status for r in runs()} == {"FINISHED"}, [(r.info.run_name, r.info.status) for r in runs()]
    (parent,) = [r for r in runs() if r.data.tags.get("raycomp.kind") == "find"]  # the resume kept its run
    trials = [r for r in runs() if r.data.tags.get("raycomp.kind") == "trial"]
    assert trials and all(r.data.tags.get("raycomp.find.stage") in ("screen", "confirm") for r in trials)
    assert parent.data.tags["raycomp.find.verdict"] == (answer["verdict"] or {}).get("verdict", "none")
