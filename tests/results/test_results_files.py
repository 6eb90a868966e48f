"""results.json for the report: each trial's curve, the hardware its times were measured on and its traces,
and the summaries read back as they were written."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from reportkit import MACHINE, hand_made_records, traced_records, trial_by_config

from raycomp.base.errors import NotFound, RaycompError
from raycomp.base.keys import TRACES, WALL
from raycomp.config.arm import Arm
from raycomp.results.configs import summarize_configs
from raycomp.results.results_files import read_results, write_results
from raycomp.results.summary import TraceRow, TrialRecord, summarize


def test_results_json_carries_each_trials_curve_and_machine(tmp_path):
    records = hand_made_records()
    summaries = summarize(records)
    csv_path, json_path = write_results(tmp_path, summaries, "eval/accuracy", "max", summarize_configs(summaries))
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
    [summary] = summarize([TrialRecord("t", Arm("baseline"), "TERMINATED", history)])
    assert summary.curve == ((3, 3.0, 0.5), (4, None, 0.0)) and summary.machine == "new"


def test_summaries_come_back_from_results_json_as_they_went_in_traces_included(tmp_path):
    records = traced_records()
    summaries = {s.trial_id: s for s in summarize(records)}
    ids = trial_by_config(records)
    method, baseline, failed = ids["method-1", 0], ids["baseline", 0], ids["method-5", 0]
    assert summaries[method].traces == (TraceRow("SelectiveBackprop", "after_dataloader", 16, 1.0),)  # last report's
    assert summaries[baseline].traces == () and summaries[failed].traces is None  # ran none; never reported
    trials = list(summaries.values())
    write_results(tmp_path, trials, "eval/accuracy", "max", summarize_configs(trials))
    results = read_results(tmp_path)
    assert results.trials == tuple(summaries.values())
    assert (results.metric, results.mode) == ("eval/accuracy", "max")
    best = json.loads((tmp_path / "results.json").read_text())["best"]["trial_id"]
    assert best == ids["baseline", 1]  # the first of the most accurate single runs (seed 1's 0.81)
    trial = next(t for t in json.loads((tmp_path / "results.json").read_text())["trials"] if t["trial_id"] == method)
    assert trial["traces"] == [
        {"algorithm": "SelectiveBackprop", "event": "after_dataloader", "count": 16, "total_s": 1.0}
    ]
    assert (trial["config_id"], trial["repeat"], trial["variant"]) == ("method-1", 0, "method")


def test_a_records_traces_field_wins_over_its_reports_and_a_missing_value_is_not_traces():
    row = {"algorithm": "EMA", "event": "batch_end", "count": 3, "total_s": 0.5}
    given = TrialRecord("a", Arm("method"), "TERMINATED", [{WALL: 1.0, TRACES: []}], traces=[row])
    from_reports = TrialRecord("b", Arm("method"), "TERMINATED", [{TRACES: [row]}, {WALL: 1.0, TRACES: math.nan}])
    none = TrialRecord("c", Arm("method"), "TERMINATED", [{WALL: 1.0}])
    traces = [s.traces for s in summarize([given, from_reports, none])]
    assert traces == [(TraceRow("EMA", "batch_end", 3, 0.5),)] * 2 + [None]  # NaN: a report without the key


def test_a_missing_results_json_is_not_found(tmp_path):
    with pytest.raises(NotFound, match=r"no results\.json in"):
        read_results(tmp_path)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "cannot read it: the file is empty"),
        (b'{"metric": "eval/accuracy", "mode": "max", "tri', "cannot read it: Unterminated string"),
        (b"\xff\xfe{}", "cannot read it: 'utf-8' codec can't decode byte 0xff"),
        (b"[1, 2]", "not a sweep's results: must be a mapping of keys to values, got [1, 2]"),
        (b'{"metric": "eval/accuracy", "mode": "max"}', "not a sweep's results: no 'trials'"),
        (b'{"metric": "m", "mode": "max", "trials": []}', "not a sweep's results: no 'accuracy_tolerance'"),
    ],
)
def test_l10_a_damaged_results_json_is_one_error_naming_the_file(tmp_path, content, problem):
    (tmp_path / "results.json").write_bytes(content)
    with pytest.raises(RaycompError) as info:
        read_results(tmp_path)
    assert str(info.value).startswith(f"{tmp_path / 'results.json'}: {problem}"), str(info.value)
    assert info.value.exit_code == 2 and len(info.value.problems) == 1


def edited_results(folder, edit) -> dict:
    """A sweep's results.json as ``write_results`` wrote it, then edited by hand (``edit`` changes the document)."""
    summaries = summarize(traced_records())
    write_results(folder, summaries, "eval/accuracy", "max", summarize_configs(summaries))
    document = json.loads((folder / "results.json").read_text())
    edit(document)
    (folder / "results.json").write_text(json.dumps(document))
    return document


def _set(*path_and_value):
    *path, value = path_and_value

    def edit(document):
        for key in path[:-1]:
            document = document[key]
        document[path[-1]] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (_set("timing", "bogus"), "timing: must be 'steps', 'cpu' or 'wall', got 'bogus'"),
        (_set("confidence", 1.5), "confidence: must be in (0.5, 1), got 1.5"),  # was judged at 150 %, rc 0
        (_set("confidence", 0.5), "confidence: must be in (0.5, 1), got 0.5"),
        (_set("equivalence", "5%"), "equivalence: must be a number, got '5%'"),
        (_set("mode", "maximum"), "mode: must be 'max' or 'min', got 'maximum'"),
        (_set("repeats", 3), "max_repeats: must be at least repeats (3), got None"),
        (_set("trials", 0, "wall_s", "fast"), "trials[0].wall_s: must be a number, got 'fast'"),
        (_set("trials", 1, "repeat", "one"), "trials[1].repeat: must be an integer, got 'one'"),
        (_set("trials", 2, "eval/accuracy", "high"), "trials[2].eval/accuracy: must be a number, got 'high'"),
        (_set("trials", 0, "steps_s", -4.0), "trials[0].steps_s: must be >= 0, got -4.0"),
        (_set("trials", 0, "diverged", "no"), "trials[0].diverged: must be true or false, got 'no'"),
        (_set("trials", 0, "curve", 1, "wall_s", "x"), "trials[0].curve[1].wall_s: must be a number, got 'x'"),
        (_set("trials", 3, "traces", [{"algorithm": "A", "event": "e", "count": "2", "total_s": 1.0}]),
         "trials[3].traces[0].count: must be an integer, got '2'"),
        (_set("trials", 0, "variant", None), "trials[0].variant: must be a string, got null"),
        # L2 of the 2026-12-01 probe: overflowed the intervals (OverflowError, rc 1)
        (_set("trials", 0, "eval/accuracy", 1e308), "trials[0].eval/accuracy: must be within ±1e+15, got 1e+308"),
    ],
)  # fmt: skip
def test_d9_a_hand_edited_results_json_is_one_error_naming_the_key(tmp_path, edit, problem):
    """Defect D9: a wrong type or an out-of-range judging key was a traceback deep in the verdicts (rc 1), or
    silently judged (a confidence of 1.5)."""
    edited_results(tmp_path, edit)
    with pytest.raises(RaycompError) as info:
        read_results(tmp_path)
    assert str(info.value) == (
        f"{tmp_path / 'results.json'}: not a sweep's results: {problem} (python -m raycomp.tune writes it at a "
        "sweep's end; the report needs an intact one)"
    )
    assert info.value.exit_code == 2


def test_d9_values_results_json_may_hold_still_read_as_before(tmp_path):
    """A NaN (an older raycomp wrote them) reads as a value never measured, whole numbers stay ints, and keys the
    reader does not use (the stored verdicts) are left alone."""
    document = edited_results(tmp_path, _set("trials", 0, "wall_s", math.nan))
    trial = read_results(tmp_path).trials[0]
    assert trial.wall_s is None and trial.curve[0][0] == document["trials"][0]["curve"][0]["step"] == 10
    assert isinstance(trial.curve[0][0], int) and isinstance(trial.repeat, int)


@pytest.mark.spawns
def test_d9_the_report_of_a_hand_edited_results_json_exits_2_in_one_line(tmp_path):
    edited_results(tmp_path, _set("timing", "bogus"))
    command = [sys.executable, "-m", "raycomp.report", str(tmp_path), "--no-mlflow"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'results.json'}: not a sweep's results: timing: must be 'steps', 'cpu' or 'wall', got "
        "'bogus' (python -m raycomp.tune writes it at a sweep's end; the report needs an intact one)"
    ]
    assert not (tmp_path / "report").exists()
