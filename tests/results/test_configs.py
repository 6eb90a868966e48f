"""raycomp/results/configs.py: the line under the verdict table says why no configuration is best."""

from __future__ import annotations

from raycomp.base.keys import WALL
from raycomp.config.arm import Arm
from raycomp.results.configs import summarize_configs
from raycomp.results.summary import TrialRecord, summarize
from raycomp.results.verdict_text import best_line


def trials(config_id: str, losses: list[float], accuracy: float, seeds: int = 3, wall: float = 10.0) -> list:
    variant = "baseline" if config_id == "baseline" else "method"
    return [
        TrialRecord(
            f"{config_id}-{seed}",
            Arm(variant, config_id, repeat=seed),
            "TERMINATED",
            [
                {"eval/accuracy": accuracy * (i + 1) / len(losses), WALL: wall * (i + 1) * (1 + 0.01 * seed),
                 "train/loss": loss}
                for i, loss in enumerate(losses)
            ],
        )
        for seed in range(seeds)
    ]  # fmt: skip


def line(*groups: list) -> str:
    return best_line(summarize_configs(summarize([trial for group in groups for trial in group])))


def test_d12_when_the_only_method_diverged_the_line_says_so():
    """Defect D12: it said a speed-up interval needs sweep.repeats >= 2 and a baseline, which the sweep had."""
    baseline = trials("baseline", [2.0, 1.5], 0.6)
    assert line(baseline, trials("method-1", [2.0, float("nan")], 0.9)) == "best: none (every configuration diverged)"
    exploding = trials("method-2", [2.0, 50.0], 0.9)  # 25x its first loss
    assert line(baseline, trials("method-1", [2.0, float("nan")], 0.9), exploding) == (
        "best: none (every configuration diverged)"
    )


def test_the_other_reasons_for_no_best_are_the_real_ones():
    baseline = trials("baseline", [2.0, 1.5], 0.6)
    less_accurate = trials("method-1", [2.0, 1.9], 0.3, wall=5.0)
    assert line(baseline, less_accurate) == "best: none (no configuration was shown faster: 1 less accurate)"
    one_seed = trials("method-1", [2.0, 1.4], 0.6, seeds=1)
    assert line(trials("baseline", [2.0, 1.5], 0.6, seeds=1), one_seed) == (
        "best: none (a speed-up interval needs sweep.repeats >= 2 and a baseline)"
    )
    diverged = trials("method-2", [2.0, float("inf")], 0.6, seeds=1)
    assert line(trials("baseline", [2.0, 1.5], 0.6, seeds=1), one_seed, diverged) == (
        "best: none (a speed-up interval needs sweep.repeats >= 2 and a baseline; 1 of 2 configurations diverged)"
    )
    faster = trials("method-1", [2.0, 1.4], 0.6, wall=5.0)
    assert line(baseline, faster).startswith(
        "best (the faster configuration with the highest speed-up lower bound): method-1 faster"
    )
