"""What results.json gained for the report: each trial's curve and the hardware its times were measured on."""

from __future__ import annotations

import json
import math

from reportkit import MACHINE, hand_made_records

from raycomp.results import WALL, TrialRecord, summarize, write_results


def test_results_json_carries_each_trials_curve_and_machine(tmp_path):
    records = hand_made_records()
    csv_path, json_path = write_results(tmp_path, summarize(records), "eval/accuracy", "max")
    trials = {t["trial_id"]: t for t in json.loads(json_path.read_text())["trials"]}
    for record in records:
        expected = [{"step": r["step"], "wall_s": r[WALL], "eval/accuracy": r["eval/accuracy"]} for r in record.history]
        assert trials[record.trial_id]["curve"] == expected
        assert trials[record.trial_id]["machine"] == (MACHINE if record.history else None)
    header = csv_path.read_text().splitlines()[0]
    assert "curve" not in header and "machine" not in header  # the CSV stays one flat row per trial


def test_reports_without_the_metric_or_with_nan_are_not_points():
    history = [
        {"step": 1, WALL: 1.0, "eval/accuracy": math.nan},
        {"step": 2, WALL: 2.0},
        {"step": 3, WALL: 3.0, "eval/accuracy": 0.5, "machine": "old"},
        {"step": 4, WALL: math.nan, "eval/accuracy": 0.0, "machine": "new"},
    ]
    [summary] = summarize([TrialRecord("t", "baseline", {}, "TERMINATED", history)])
    assert summary.curve == ((3, 3.0, 0.5), (4, None, 0.0)) and summary.machine == "new"
