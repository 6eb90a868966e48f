"""How configurations are named and the frontier is drawn, on hand-made sweeps (no Ray, no MLflow)."""

from __future__ import annotations

from reportkit import SB, hand_made_records

from raycomp.report.analysis import described, format_args, frontier_line, verdict_counts
from raycomp.report.configs import format_verdicts, summarize_configs
from raycomp.report.summary import summarize


def _verdicts():
    return summarize_configs(summarize(hand_made_records()), "max")


def test_the_frontier_is_the_baseline_and_its_budgets_sorted_by_time():
    line = frontier_line(_verdicts())
    assert [c.config_id for c in line] == ["frontier-0.5", "baseline"]
    assert line[0].time_median_s < line[1].time_median_s


def test_configurations_are_named_by_their_arguments_or_what_they_are():
    configs = {c.config_id: c for c in _verdicts().configs}
    assert described(configs["method-1"]) == "keep=0.5"
    assert described(configs["baseline"]) == "the baseline (full budget)"
    assert described(configs["frontier-0.5"]) == "the baseline at 50% of max_duration"
    assert described(configs["control"]) == "identical to the baseline (A/A control)"


def test_verdicts_are_counted_over_the_methods_only():
    assert verdict_counts(_verdicts()) == {"faster": 1, "less accurate": 1, "slower": 1, "no evidence": 2}


def test_argument_labels_are_short_unless_two_keys_share_a_name():
    assert format_args({f"{SB}.keep": 0.41234, f"{SB}.interrupt": 2}) == "interrupt=2, keep=0.412"
    both = format_args({"algorithms.a.keep": 0.5, "algorithms.b.keep": 0.25})
    assert both == "algorithms.a.keep=0.5, algorithms.b.keep=0.25"


def test_a_reference_arms_blank_columns_are_no_arguments():
    assert format_args({f"{SB}.keep": None, f"{SB}.interrupt": None}) == ""
    assert format_args({"algorithms.a.keep": None, "algorithms.b.keep": 0.25}) == "keep=0.25"


def test_the_verdict_table_names_the_sweeps_metric():
    header = format_verdicts(_verdicts()).splitlines()[0].split()
    assert header[3] == "accuracy" and "Δ accuracy" in format_verdicts(_verdicts())
    table = format_verdicts(_verdicts(), "eval/loss")
    assert table.splitlines()[0].split()[3] == "loss" and "Δ loss [95% CI]" in table and "accuracy" not in table
