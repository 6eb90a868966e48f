"""The Pareto front, repeats and argument labels, on hand-made points (no Ray, no MLflow)."""

from __future__ import annotations

from reportkit import SB, hand_made_records

from raycomp.report.analysis import format_args, front_trials, pareto_front, repeats
from raycomp.report.summary import summarize
from raycomp.report.sweep import Sweep


def test_front_keeps_only_points_nothing_is_faster_and_better_than():
    points = [(10, 0.80), (5, 0.70), (7, 0.70), (12, 0.79), (20, 0.85), (3, 0.50), (20, 0.84)]
    assert pareto_front(points) == [5, 1, 0, 4]  # (3, .5) (5, .7) (10, .8) (20, .85): sorted by time


def test_equal_points_both_stay_and_a_tie_in_one_coordinate_is_dominated():
    assert pareto_front([(1, 0.5), (1, 0.5)]) == [0, 1]
    assert pareto_front([(1, 0.5), (1, 0.6)]) == [1]  # as fast, more accurate
    assert pareto_front([(1, 0.5), (2, 0.5)]) == [0]  # as accurate, faster


def test_min_mode_prefers_lower_values():
    assert pareto_front([(1, 2.0), (2, 1.0), (3, 1.5)], mode="min") == [0, 1]


def test_empty_and_single():
    assert pareto_front([]) == []
    assert pareto_front([(4, 0.1)]) == [0]


def _sweep():
    return Sweep.of(summarize(hand_made_records()), "made", "eval/accuracy", "max", "test")


def test_front_trials_leave_out_stopped_and_failed_trials():
    front = {t.trial_id for t in front_trials(_sweep())}
    assert "t4" not in front and "t5" not in front  # stopped mid-schedule; failed
    assert front == {"t3", "t2", "t1"}  # t0, the baseline, is slower than t1 and less accurate


def test_repeats_group_configs_with_the_seed_aside():
    groups = {format_args(g.overrides): g for g in repeats(_sweep())}
    assert groups["keep=0.5"].n == 2 and {t.trial_id for t in groups["keep=0.5"].trials} == {"t1", "t2"}
    assert groups["keep=0.5"].range("final_metric") == (0.82 * 0.9375, 0.81 * 0.9375)[::-1]
    assert all(g.n == 1 for name, g in groups.items() if name != "keep=0.5")
    assert "keep=0.9" not in groups  # the failed trial has no result to spread


def test_argument_labels_are_short_unless_two_keys_share_a_name():
    assert format_args({f"{SB}.keep": 0.41234, f"{SB}.interrupt": 2}) == "interrupt=2, keep=0.412"
    both = format_args({"algorithms.a.keep": 0.5, "algorithms.b.keep": 0.25})
    assert both == "algorithms.a.keep=0.5, algorithms.b.keep=0.25"
