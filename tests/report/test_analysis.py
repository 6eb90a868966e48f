"""How configurations are named and the frontier is drawn, on hand-made sweeps (no Ray, no MLflow)."""

from __future__ import annotations

import pytest
from reportkit import SB, hand_made_records

from raycomp.report.analysis import described, format_args, frontier_line, verdict_counts
from raycomp.results.configs import summarize_configs
from raycomp.results.judging import Judging
from raycomp.results.summary import summarize
from raycomp.results.verdict_text import format_verdicts


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
    header = format_verdicts(_verdicts()).splitlines()[1].split()  # under the verdict rule's line
    assert header[3] == "accuracy" and "Δ accuracy" in format_verdicts(_verdicts())
    table = format_verdicts(_verdicts(), "eval/loss")
    assert table.splitlines()[1].split()[3] == "loss" and "Δ loss [95% CI]" in table and "accuracy" not in table


def test_an_adaptive_sweep_judges_each_config_at_its_looks_level_and_says_why_it_stopped():
    """repeats 3, max_repeats 5: three seeds are the first look, at the level alpha spending gives it."""
    from raycomp.results.intervals import look_confidence

    verdicts = summarize_configs(summarize(hand_made_records()), "max", Judging(0.005, 0.95, 0.05, (3, 5)))
    method = next(c for c in verdicts.configs if c.config_id == "method-1")
    assert method.verdict.confidence == look_confidence(3, 3, 5) > 0.95
    assert verdicts.judging.looks == (3, 5) and verdicts.document()["max_repeats"] == 5
    stopped = {c.config_id: c.stopped for c in verdicts.configs}
    assert stopped["baseline"] is None
    assert stopped["method-1"] == stopped["method-2"] == stopped["method-3"] == "resolved at 3 seeds"
    assert stopped["method-4"] == "no finished trial paired with the baseline: no more seeds"  # all failed
    assert stopped["method-5"].startswith("unresolved at 2 seeds: sweep.max_sweep_s spent")
    assert stopped["control"] == "3 seeds: the methods' last seed (the control runs with them)"
    table = format_verdicts(verdicts)
    assert "speed-up [per look]" in table and "seeds: why stopped" in table and "adaptive repeats: 3 seeds" in table
    assert summarize_configs(summarize(hand_made_records()), "max", Judging(looks=(3, 3))).judging.looks is None


def test_sweep_timing_picks_the_time_verdicts_compare():
    import dataclasses

    from raycomp.results.configs import trial_time

    trial = summarize(hand_made_records())[0]
    timed = dataclasses.replace(trial, wall_s=30.0, steps_s=25.0, steps_cpu_s=20.0)
    assert [trial_time(timed, timing) for timing in ("steps", "cpu", "wall")] == [25.0, 20.0, 30.0]
    assert trial_time(dataclasses.replace(trial, wall_s=30.0), "cpu") == 30.0  # not timed: its wall time
    records = [dataclasses.replace(t, steps_cpu_s=t.wall_s and 2 * t.wall_s) for t in summarize(hand_made_records())]
    by_cpu = summarize_configs(records, "max", Judging(timing="cpu"))
    by_wall = summarize_configs(records, "max", Judging(timing="wall"))
    assert by_cpu.judging.timing == "cpu" and by_cpu.noise_floor == pytest.approx(by_wall.noise_floor)
    assert by_cpu.document()["timing"] == "cpu"
