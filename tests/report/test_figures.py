"""The figures of a hand-made sweep, by their artists: the accuracy-against-time plot has one point per
configuration with its interval bars, the baseline frontier as a line and the control apart; the
time-to-accuracy curves show the frontier runs and the control (no Ray, no MLflow)."""

from __future__ import annotations

import dataclasses
import statistics

import pytest
from reportkit import hand_made_records, write_hand_made

from raycomp.base.keys import CPU, WALL
from raycomp.report.pareto import pareto_figure
from raycomp.report.plots import CONTROL_COLOR, curves_figure
from raycomp.report.sweep import Sweep, read_sweep
from raycomp.report.write import write_report
from raycomp.results.judging import Judging
from raycomp.results.results_files import Results
from raycomp.results.summary import summarize


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    return read_sweep(write_hand_made(tmp_path_factory.mktemp("figures") / "made"))


def by_gid(figure) -> dict:
    return {artist.get_gid(): artist for artist in figure.axes[0].get_children() if artist.get_gid()}


def test_the_pareto_plot_draws_each_configuration_with_its_intervals(sweep):
    artists = by_gid(pareto_figure(sweep))
    configs = {c.config_id: c for c in sweep.verdicts.configs}
    frontier = artists["frontier"]
    assert list(frontier.get_xdata()) == [configs["frontier-0.5"].time_median_s, configs["baseline"].time_median_s]
    assert list(frontier.get_ydata()) == [configs["frontier-0.5"].accuracy_median, configs["baseline"].accuracy_median]

    faster = configs["method-1"]
    v = faster.verdict
    times = artists["time-interval:method-1"].get_xdata()
    assert times[0] == pytest.approx(faster.time_median_s * v.speedup / v.speedup_ci_high)
    assert times[1] == pytest.approx(faster.time_median_s * v.speedup / v.speedup_ci_low)
    assert times[0] < faster.time_median_s < times[1]
    delta = configs["method-2"].verdict
    reference = configs["baseline"].accuracy_median
    metric = artists["metric-interval:method-2"].get_ydata()
    assert list(metric) == pytest.approx(
        [reference + delta.accuracy_delta_ci_low, reference + delta.accuracy_delta_ci_high]
    )

    control = artists["control"]
    assert list(control.get_offsets()[0]) == [configs["control"].time_median_s, configs["control"].accuracy_median]
    assert tuple(control.get_facecolor()[0][:3]) == pytest.approx(_rgb(CONTROL_COLOR))
    assert list(artists["best"].get_offsets()[0]) == [faster.time_median_s, faster.accuracy_median]
    assert "point:method-4" not in artists and "time-interval:method-4" not in artists  # never finished
    labels = pareto_figure(sweep).axes[0].get_legend_handles_labels()[1]
    assert "control: no evidence 0.99×" in labels and "method-3: slower 0.70×" in labels


def test_the_curves_show_the_frontier_runs_and_the_control(sweep):
    axes = curves_figure(sweep).axes[0]
    labels = axes.get_legend_handles_labels()[1]
    assert "frontier-0.5: the baseline at 50% of max_duration" in labels
    assert "control: no evidence 0.99×" in labels and "baseline: the baseline (full budget)" in labels
    drawn = [line for line in axes.get_lines() if (line.get_gid() or "").startswith("trial:")]
    assert len(drawn) == 23  # every trial with a report: all 24 but the failed one
    assert sum(line.get_linestyle() == "-." for line in drawn) == 3  # the control's 3 seeds


def test_the_pareto_png_is_written_for_a_sweep_without_repeats_frontier_or_control(tmp_path):
    records = [r for r in hand_made_records() if r.arm.repeat == 0 and r.arm.variant in ("baseline", "method")]
    sweep = read_sweep(write_hand_made(tmp_path / "plain", records))
    artists = by_gid(pareto_figure(sweep))
    assert len(artists["frontier"].get_xdata()) == 1  # the baseline alone
    assert not [gid for gid in artists if "interval" in gid] and "control" not in artists  # one seed: no intervals
    paths = write_report(sweep, tmp_path / "out")
    assert (tmp_path / "out" / "pareto.png") in paths and (tmp_path / "out" / "pareto.png").stat().st_size > 10_000


def _rgb(color: str) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    return to_rgb(color)


def _slowed(record, factor: float):
    """The trial as if the machine had run it ``factor`` times slower (wall and CPU time)."""
    history = [{**point, WALL: point[WALL] * factor, CPU: point[CPU] * factor} for point in record.history]
    return dataclasses.replace(record, history=history)


def test_the_axes_frame_the_measurements_not_two_seeds_wide_intervals(tmp_path):
    records = [r for r in hand_made_records() if r.arm.repeat in (0, 1)]  # t intervals with one degree of freedom
    # a bad seed
    records = [_slowed(r, 1.5) if (r.arm.config_id, r.arm.repeat) == ("control", 1) else r for r in records]
    sweep = read_sweep(write_hand_made(tmp_path / "two", records))
    axes = pareto_figure(sweep).axes[0]
    longest = max(t.wall_s for t in sweep.trials if t.has_result and t.status == "TERMINATED")
    assert axes.get_xlim() == pytest.approx((0, 1.1 * longest))
    bar = by_gid(axes.figure)["time-interval:control"].get_xdata()
    assert max(bar) > axes.get_xlim()[1]  # cut at the edge, and the figure says so
    assert any("wider than shown" in text.get_text() for text in axes.texts)


def _judged_on_cpu() -> Sweep:
    """The hand-made sweep judged on the steps' CPU time (sweep.timing: cpu), each trial's twice its wall time."""
    summaries = [
        dataclasses.replace(s, steps_cpu_s=None if s.wall_s is None else 2 * s.wall_s)
        for s in summarize(hand_made_records())
    ]
    return Sweep.from_results(Results("eval/accuracy", "max", tuple(summaries), Judging(timing="cpu")), "cpu", "made")


def test_the_accuracy_against_time_plot_labels_the_verdicts_clock_and_puts_every_point_on_it():
    sweep = _judged_on_cpu()
    axes = pareto_figure(sweep).axes[0]
    assert axes.get_xlabel() == "training steps' CPU time (s), median over seeds"
    dots = {gid.removeprefix("trial:"): artist.get_offsets()[0][0] for gid, artist in by_gid(axes.figure).items()
            if gid.startswith("trial:")}  # fmt: skip
    finished = [t for t in sweep.trials if t.has_result and t.status == "TERMINATED"]
    assert dots == {t.trial_id: t.steps_cpu_s for t in finished}  # the single trials: CPU time, not wall
    for config in sweep.verdicts.configs:  # each median is the median of its own dots
        ran = [dots[t.trial_id] for t in finished if t.config_id == config.config_id]
        if config.time_median_s is not None:
            assert config.time_median_s == pytest.approx(statistics.median(ran))


def test_the_curves_are_wall_time_throughout_and_say_which_clock_the_verdicts_compare():
    sweep = _judged_on_cpu()
    axes = curves_figure(sweep).axes[0]
    assert axes.get_xlabel() == "training wall time (s); the verdicts compare the training steps' CPU time"
    walls = [t.wall_s for t in sweep.trials if t.variant == "baseline" and t.status == "TERMINATED"]
    assert list(by_gid(axes.figure)["baseline-wall-median"].get_xdata()) == [statistics.median(walls)] * 2
