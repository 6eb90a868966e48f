"""The verdict rule (raycomp.results.decision): `faster` needs both halves shown, each verdict follows the same
logic, and a bounded metric's interval stays inside what the metric can take. Hand-made seeds, exact numbers."""

from __future__ import annotations

import pytest

from raycomp.results.decision import (
    EQUIVALENT,
    FASTER,
    LESS_ACCURATE,
    NO_EVIDENCE,
    SLOWER,
    TRADE_OFF,
    Evidence,
    decide,
    delta_text,
)
from raycomp.results.judging import metric_bounds
from raycomp.results.verdicts import Run, verdict_for

TIMES = (100.0, 110.0, 90.0, 105.0)
BASELINE = [Run(seed, 0.80, time_s) for seed, time_s in enumerate(TIMES)]
FRONTIER = [Run(seed, 0.70, 0.5 * t, budget=0.5) for seed, t in enumerate(TIMES)] + [
    Run(seed, 0.84, 1.5 * t, budget=1.5) for seed, t in enumerate(TIMES)
]
UNIT = (0.0, 1.0)


def method(speedup: float, deltas: tuple[float, ...]) -> list[Run]:
    return [Run(seed, 0.80 + d, TIMES[seed] / speedup * (1 + 0.01 * (-1) ** seed)) for seed, d in enumerate(deltas)]


def test_a_speedup_shown_with_its_accuracy_not_shown_is_no_evidence_with_the_reason():
    """The main job's case: 1.5x faster, accuracy -0.6 point [-5.7, +4.6] against a 0.5-point tolerance."""
    verdict = verdict_for(method(1.5, (0.02, -0.03, 0.01, -0.02)), BASELINE, FRONTIER, bounds=UNIT)
    assert verdict.speed_shown and not verdict.accuracy_shown
    assert verdict.verdict == NO_EVIDENCE
    assert verdict.note.startswith("accuracy not shown within 0.5 points: Δ [")
    assert verdict.note.endswith("] points")
    # the accuracy's uncertainty is carried into the speed-up: its low end is priced at the worse accuracy
    exact = verdict_for(method(1.5, (0.0, 0.0, 0.0, 0.0)), BASELINE, FRONTIER, bounds=UNIT)
    assert verdict.speedup_ci_low < exact.speedup_ci_low
    assert verdict.speedup == pytest.approx(exact.speedup, rel=0.02)


def test_both_halves_shown_is_faster():
    verdict = verdict_for(method(1.5, (0.001, -0.001, 0.0, 0.0)), BASELINE, FRONTIER, bounds=UNIT)
    assert verdict.verdict == FASTER and verdict.accuracy_shown and verdict.speed_shown
    assert verdict.accuracy_delta_ci_low >= -0.005
    assert verdict.speedup_ci_low > 1.4


def test_accuracy_shown_but_no_speedup_is_open_and_a_shown_loss_is_less_accurate():
    open_ = verdict_for(method(1.0, (0.0, 0.001, -0.001, 0.0)), BASELINE, FRONTIER, bounds=UNIT)
    assert open_.verdict in (NO_EVIDENCE, EQUIVALENT) and open_.accuracy_shown
    worse = verdict_for(method(2.0, (-0.05, -0.051, -0.049, -0.05)), BASELINE, FRONTIER, bounds=UNIT)
    assert worse.verdict == LESS_ACCURATE


def test_equivalent_needs_the_accuracy_interval_inside_the_tolerance_not_only_its_mean():
    tight = verdict_for(method(1.0, (0.0005, -0.0005, 0.0, 0.0)), BASELINE, FRONTIER, bounds=UNIT)
    assert tight.verdict == EQUIVALENT
    loose = verdict_for(method(1.0, (0.01, -0.01, 0.005, -0.005)), BASELINE, FRONTIER, bounds=UNIT)
    assert abs(loose.accuracy_delta) <= 0.005 and loose.verdict == NO_EVIDENCE


def test_slower_holds_at_the_accuracy_intervals_better_end_and_a_shown_gain_beyond_every_budget_is_a_trade_off():
    slower = verdict_for(method(0.6, (0.001, -0.001, 0.0, 0.0)), BASELINE, FRONTIER, bounds=UNIT)
    assert slower.verdict == SLOWER
    beyond = verdict_for(method(0.6, (0.1, 0.101, 0.099, 0.1)), BASELINE, FRONTIER, bounds=UNIT)
    assert beyond.verdict == TRADE_OFF and "more accurate than every budget" in beyond.note
    maybe = verdict_for(method(0.6, (0.0, 0.09, -0.01, 0.05)), BASELINE, FRONTIER, bounds=UNIT)
    assert maybe.verdict == NO_EVIDENCE  # it may out-score every budget: no `slower` claimed


def test_a_bounded_metrics_difference_interval_stays_within_what_the_metric_can_take():
    """Two seeds 60 points apart: the t interval (12.7 standard errors) claims differences beyond 100 points."""
    wide = method(1.5, (0.3, -0.3))
    unbounded = verdict_for(wide, BASELINE[:2], FRONTIER)
    assert unbounded.accuracy_delta_ci_low < -1 and unbounded.accuracy_delta_ci_high > 1
    bounded = verdict_for(wide, BASELINE[:2], FRONTIER, bounds=UNIT)
    assert bounded.accuracy_delta_ci_low == -1.0 and bounded.accuracy_delta_ci_high == 1.0
    assert bounded.verdict == NO_EVIDENCE


def test_the_control_is_judged_on_its_time_alone():
    """The control is the baseline itself: its accuracy noise must not blunt the timing check it exists for."""
    control = [Run(seed, 0.80 + d, 1.3 * TIMES[seed]) for seed, d in enumerate((0.02, -0.02, 0.01, -0.01))]
    assert verdict_for(control, BASELINE, FRONTIER, bounds=UNIT).verdict == NO_EVIDENCE
    assert verdict_for(control, BASELINE, FRONTIER, bounds=UNIT, same_model=True).verdict == SLOWER


def test_a_metric_to_minimise_reads_the_interval_from_its_other_end():
    """A loss 2x faster whose difference is [-0.001, +0.02] against a 0.005 tolerance: its worse end is the high one."""
    runs = [Run(seed, 1.0 + d, TIMES[seed] / 2) for seed, d in enumerate((0.0, 0.02, 0.0, 0.01))]
    baseline = [Run(seed, 1.0, t) for seed, t in enumerate(TIMES)]
    shorter = [Run(seed, 1.2, 0.5 * t, budget=0.5) for seed, t in enumerate(TIMES)]
    verdict = verdict_for(runs, baseline, shorter, mode="min", tolerance=0.005)
    assert verdict.verdict == NO_EVIDENCE and verdict.note.startswith("accuracy not shown within 0.005")


def test_decide_without_intervals_is_no_evidence():
    assert decide(Evidence(1, None, None, None), 0.005, 0.05) == (NO_EVIDENCE, "one paired seed: no interval")
    assert decide(Evidence(0, None, None, None), 0.005, 0.05) == (NO_EVIDENCE, "no paired seeds")


def test_delta_text_says_what_the_interval_rules_out():
    assert delta_text(-0.057, 0.046, True, 0.005) == "[-5.7, +4.6] points: not shown within 0.5 points"
    assert delta_text(-0.002, 0.003, True, 0.005) == "[-0.2, +0.3] points: equal within ±0.5 points"
    assert delta_text(-0.002, 0.03, True, 0.005) == "[-0.2, +3.0] points: no worse than 0.5 points"
    assert delta_text(-0.03, -0.02, True, 0.005) == "[-3.0, -2.0] points: worse by more than 0.5 points"
    assert delta_text(-0.01, 0.002, False, 0.005, sign=-1) == "[-0.0100, +0.0020]: no worse than 0.005"  # a loss
    assert delta_text(-0.002, 0.01, False, 0.005, sign=-1) == "[-0.0020, +0.0100]: not shown within 0.005"


@pytest.mark.parametrize(
    ("metric", "bounds"),
    [
        ("eval/accuracy", UNIT),
        ("eval/top5_accuracy", UNIT),
        ("eval/MulticlassF1Score", UNIT),
        ("eval/auc", UNIT),
        ("eval/loss", None),
        ("eval/mae", None),
        ("eval/perplexity", None),
    ],
)
def test_which_metrics_are_known_to_lie_in_0_1(metric, bounds):
    assert metric_bounds(metric) == bounds
