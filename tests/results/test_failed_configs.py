"""Failed is a state, not a verdict (issue 32 item 2): a configuration whose trials failed says ``failed`` with its
error's first line in the CLI's table, results.json and MLflow's records, never ``no evidence (no paired seeds)``;
and "best" is only ever a configuration shown ``faster``, else none with the real reason. Simulated trials, no Ray."""

from __future__ import annotations

import dataclasses
import json

from reportkit import ARMS, Arm, hand_made_records

from raycomp.base import keys
from raycomp.results.configs import FAILED, summarize_configs
from raycomp.results.results_files import read_results, write_results
from raycomp.results.summary import TrialRecord, summarize
from raycomp.results.verdict_text import best_line, format_verdicts
from raycomp.tracking.sweep_results import _verdict_records

FIRST_LINE = "RuntimeError: planted failure at step 3"
WHOLE_ERROR = f"{FIRST_LINE} | the second line, which no verdict row shows"


def failing(records: list[TrialRecord], config_id: str, seeds: tuple[int, ...] | None = None) -> list[TrialRecord]:
    """The records with ``config_id``'s trials at ``seeds`` (all, by default) ended by an error, as outcome.py
    records one: status ERROR, the whole error on one line, and its first line apart."""
    return [
        dataclasses.replace(r, status=keys.ERROR, history=[], error=WHOLE_ERROR, error_line=FIRST_LINE)
        if r.arm.config_id == config_id and (seeds is None or r.arm.repeat in seeds)
        else r
        for r in records
    ]


def configs_of(verdicts) -> dict:
    return {c.config_id: c for c in verdicts.configs}


def test_a_configuration_whose_every_trial_failed_is_failed_with_its_errors_first_line(tmp_path):
    summaries = summarize(failing(hand_made_records(), "method-1"))
    verdicts = summarize_configs(summaries, "max")
    method = configs_of(verdicts)["method-1"]
    assert method.failure == FIRST_LINE and method.verdict is None and method.failed == (0, 1, 2)
    assert method.shown_verdict == FAILED
    assert method.row()["verdict"] == "failed" and method.row()["error"] == FIRST_LINE

    row = next(line for line in format_verdicts(verdicts).splitlines() if line.startswith("method-1 "))
    assert "failed" in row and FIRST_LINE in row
    assert "no evidence" not in row and "second line" not in row

    _, json_path = write_results(tmp_path, summaries, "eval/accuracy", "max", verdicts)
    document = json.loads(json_path.read_text())
    written = next(c for c in document["configs"] if c["config_id"] == "method-1")
    assert (written["verdict"], written["error"], written["failed"]) == ("failed", FIRST_LINE, [0, 1, 2])
    read = read_results(json_path)  # the report judges again from the trials: the first line came with them
    assert configs_of(summarize_configs(read.trials, "max"))["method-1"].failure == FIRST_LINE


def test_mlflow_gets_failed_as_the_configurations_verdict_and_the_error_on_its_trials():
    summaries = summarize(failing(hand_made_records(), "method-1"))
    verdicts = summarize_configs(summaries, "max")
    (columns, rows), _, trial_tags = _verdict_records(verdicts, summaries)
    table = {row[columns.index("config_id")]: dict(zip(columns, row, strict=True)) for row in rows}
    assert table["method-1"]["verdict"] == "failed" and table["method-1"]["error"] == FIRST_LINE
    failed_trials = [s.trial_id for s in summaries if s.config_id == "method-1"]
    assert all(trial_tags[t][keys.VERDICT_TAG] == "failed" for t in failed_trials)
    assert all(trial_tags[t][keys.ERROR_TAG] == FIRST_LINE for t in failed_trials)


def test_a_trial_that_failed_beside_paired_ones_leaves_the_configuration_judged():
    verdicts = summarize_configs(summarize(failing(hand_made_records(), "method-1", (0,))), "max")
    method = configs_of(verdicts)["method-1"]
    assert method.failure is None and method.failed == (0,) and method.verdict.n == 2
    row = next(line for line in format_verdicts(verdicts).splitlines() if line.startswith("method-1 "))
    assert "FAILED at seed 0" in row


def test_no_paired_seed_because_its_trials_failed_is_failed_too():
    """One seed failed and the scheduler stopped the others: nothing of it can be judged, and the error says why."""
    arms = (*ARMS[:3], Arm("method-1", "method", {"x": 1}, stopped=(1, 2)))
    verdicts = summarize_configs(summarize(failing(hand_made_records(arms=arms), "method-1", (0,))), "max")
    assert configs_of(verdicts)["method-1"].failure == FIRST_LINE


def test_a_failed_control_is_no_timing_alarm_and_a_failed_baseline_is_the_reason_for_no_best():
    verdicts = summarize_configs(summarize(failing(hand_made_records(), "control")), "max")
    assert verdicts.control == "failed" and verdicts.warning() is None
    assert f"control (A/A): failed ({FIRST_LINE})" in format_verdicts(verdicts)

    verdicts = summarize_configs(summarize(failing(hand_made_records(), "baseline")), "max")
    assert configs_of(verdicts)["baseline"].failure == FIRST_LINE
    assert best_line(verdicts) == f"best: none (the baseline failed: {FIRST_LINE})"


def test_best_is_only_ever_a_faster_configuration():
    """It named a `no evidence` configuration once and a `slower` (0.64x) one in another run."""
    slower = Arm("method-1", "method", {"x": 1}, speed=0.64)
    unresolved = Arm("method-2", "method", {"x": 2}, speed=1.05, failed=(0,))  # 2 paired seeds, wide interval
    records = failing(hand_made_records(arms=(*ARMS[:3], slower, unresolved)), "method-2", (0,))
    verdicts = summarize_configs(summarize(records), "max")
    assert configs_of(verdicts)["method-1"].verdict.verdict == "slower"
    assert configs_of(verdicts)["method-2"].verdict.verdict == "no evidence"
    assert verdicts.best is None
    assert best_line(verdicts) == (
        "best: none (no configuration was shown faster: 1 slower, 1 no evidence; 1 from fewer than 3 seeds, "
        "uninformative)"
    )

    every_failed = failing(failing(hand_made_records(arms=(*ARMS[:3], slower, unresolved)), "method-1"), "method-2")
    assert best_line(summarize_configs(summarize(every_failed), "max")) == (
        f"best: none (every configuration failed: {FIRST_LINE})"
    )
    one_failed = summarize_configs(summarize(failing(hand_made_records(), "method-3")), "max")
    assert one_failed.best == "method-1"  # a failed configuration takes no part in choosing the best
