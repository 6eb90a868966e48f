import csv
import json

import pytest

from raycomp.base.keys import WALL
from raycomp.config.arm import Arm
from raycomp.results.configs import summarize_configs
from raycomp.results.results_files import write_results
from raycomp.results.summary import TrialRecord, best, summarize
from raycomp.results.trial_text import format_table


def history(*points):
    return [{"eval/accuracy": acc, WALL: wall} for wall, acc in points]


TRIALS = [
    TrialRecord("t0", Arm("baseline"), "TERMINATED", history((10, 0.5), (20, 0.7), (30, 0.8))),
    TrialRecord(
        "t1",
        Arm("method", "method-1", {"algorithms.selective_backprop.keep": 0.5}),
        "TERMINATED",
        history((8, 0.6), (16, 0.8), (24, 0.85)),
    ),
    TrialRecord(
        "t2",
        Arm("method", "method-2", {"algorithms.selective_backprop.keep": 0.3}),
        "TERMINATED",
        history((7, 0.4), (14, 0.6), (21, 0.75)),
    ),
    TrialRecord(
        "t3", Arm("method", "method-3", {"algorithms.selective_backprop.keep": 0.1}), "ERROR", [], error="boom"
    ),
]


def test_speedup_is_baseline_time_over_time_to_baseline_accuracy():
    by_id = {s.trial_id: s for s in summarize(TRIALS)}
    assert by_id["t0"].speedup == 1.0 and by_id["t0"].time_to_baseline_s == 30
    assert by_id["t1"].time_to_baseline_s == 16 and by_id["t1"].speedup == 30 / 16
    assert by_id["t2"].time_to_baseline_s is None and by_id["t2"].speedup is None  # never reached 0.8
    assert by_id["t3"].final_metric is None and by_id["t3"].error == "boom"
    assert best(list(by_id.values())).trial_id == "t1"


def test_min_mode_and_no_baseline():
    trials = [TrialRecord("a", Arm("method"), "TERMINATED", [{"eval/loss": 1.0, WALL: 5}])]
    [summary] = summarize(trials, metric="eval/loss", mode="min")
    assert summary.speedup is None and summary.final_metric == 1.0


def test_table_and_files(tmp_path):
    summaries = summarize(TRIALS)
    table = format_table(summaries, "eval/accuracy")
    assert "1.88x" in table and "never" in table and "t3: boom" in table
    csv_path, json_path = write_results(tmp_path, summaries, "eval/accuracy", "max", summarize_configs(summaries))
    rows = list(csv.DictReader(csv_path.open()))
    assert [r["trial_id"] for r in rows] == ["t0", "t1", "t2", "t3"]
    document = json.loads(json_path.read_text())
    assert document["best"]["trial_id"] == "t1" and len(document["trials"]) == 4
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_diverged_trial_is_flagged_never_best_and_its_json_stays_valid(tmp_path):
    """Defect 14: a NaN or exploding loss was not flagged, `best` could name it, results.json held a bare NaN."""
    from raycomp.results.configs import summarize_configs
    from raycomp.results.results_files import read_results

    def run(trial_id, config_id, repeat, losses, accuracy):
        points = [
            {"eval/accuracy": accuracy, WALL: 10.0 * (i + 1), "train/loss": loss} for i, loss in enumerate(losses)
        ]
        variant = "baseline" if config_id == "baseline" else "method"
        return TrialRecord(trial_id, Arm(variant, config_id, repeat=repeat), "TERMINATED", points)

    trials = [
        *(run(f"b{seed}", "baseline", seed, [2.0, 1.5], 0.6) for seed in range(3)),
        *(run(f"n{seed}", "method-1", seed, [2.0, float("nan")], 0.9) for seed in range(3)),  # NaN loss
        *(run(f"x{seed}", "method-2", seed, [2.0, 50.0], 0.95) for seed in range(3)),  # 25x its first loss
        *(run(f"m{seed}", "method-3", seed, [2.0, 1.4], 0.61) for seed in range(3)),
    ]
    trials.append(TrialRecord("inf", Arm("method", "inf"), "TERMINATED", [{"eval/accuracy": float("inf"), WALL: 1.0}]))
    summaries = summarize(trials)
    flagged = {s.trial_id for s in summaries if s.diverged}
    assert flagged == {"n0", "n1", "n2", "x0", "x1", "x2"}
    assert best(summaries).trial_id.startswith("m")  # the most accurate trials diverged
    verdicts = summarize_configs([s for s in summaries if s.trial_id != "inf"])
    assert {c.config_id: c.diverged for c in verdicts.configs}["method-2"] == (0, 1, 2)
    assert verdicts.best not in ("method-1", "method-2")
    assert "DIVERGED" in format_table(summaries, "eval/accuracy")
    write_results(tmp_path, summaries, "eval/accuracy", "max", verdicts)
    text = (tmp_path / "results.json").read_text()
    document = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    rows = {row["trial_id"]: row for row in document["trials"]}
    assert rows["n0"]["diverged"] is True and rows["m0"]["diverged"] is False and rows["inf"]["eval/accuracy"] is None
    assert {s.trial_id for s in read_results(tmp_path).trials if s.diverged} == flagged  # read back as written
