"""Adaptive repeats (raycomp.launch.sweep.adaptive): which configurations get another seed, and which arms.

Pure: hand-made verdicts and the sweep's own arm list, no Ray (tests/launch/test_verdict_sweep.py runs it).
"""

from __future__ import annotations

from collections import Counter

from raycomp.base import keys
from raycomp.config import load_experiment
from raycomp.launch.sweep.adaptive import next_arms, open_configs
from raycomp.launch.sweep.space import sweep_arms
from raycomp.results.configs import ConfigSummary, SweepVerdicts
from raycomp.results.verdicts import FASTER, LESS_ACCURATE, NO_EVIDENCE, SLOWER, Verdict

EXPERIMENT = """\
algorithms:
  selective_backprop: {}
sweep:
  space:
    algorithms.selective_backprop.keep: {uniform: [0.25, 0.75]}
  num_samples: 4
  repeats: 2
  max_repeats: 4
  control: true
  baseline_budgets: [0.5, 1.0, 1.5]
"""


def verdict(name: str, n: int) -> Verdict:
    return Verdict(name, n, tuple(range(n)), 1.0, 0.9, 1.1, None, 0, 0.9, 10.0, 0.0, -0.01, 0.01, 0, 0)


def config(config_id: str, variant: str, name: str | None, seeds: int) -> ConfigSummary:
    made = verdict(name, seeds) if name else None
    return ConfigSummary(config_id, variant, {}, tuple(range(seeds)), 0.9, 10.0, made)


def test_only_unresolved_methods_below_max_repeats_get_a_seed():
    verdicts = SweepVerdicts(
        (
            config("baseline", keys.BASELINE, None, 3),
            config("control", keys.CONTROL, NO_EVIDENCE, 3),
            config("method-1", keys.METHOD, NO_EVIDENCE, 3),
            config("method-2", keys.METHOD, FASTER, 3),
            config("method-3", keys.METHOD, LESS_ACCURATE, 2),  # clearly worse: stops
            config("method-4", keys.METHOD, NO_EVIDENCE, 4),  # at max_repeats
            config("method-5", keys.METHOD, SLOWER, 3),
            config("method-6", keys.METHOD, NO_EVIDENCE, 2),
            config("method-7", keys.METHOD, NO_EVIDENCE, 0),  # every trial failed: no more seeds
        ),
        NO_EVIDENCE,
        0.05,
        None,
    )
    assert open_configs(verdicts, max_repeats=4) == {"method-1": 3, "method-6": 2}


def test_the_next_round_pairs_each_open_configuration_with_the_references_at_its_seed(tmp_path):
    path = tmp_path / "adaptive.yaml"
    path.write_text(EXPERIMENT)
    experiment = load_experiment(str(path))
    trained = sweep_arms(experiment)  # the first two seeds, every arm
    assert {arm.repeat for arm in trained} == {0, 1}
    arms = next_arms(experiment, {"method-2": 2}, trained)
    assert Counter((arm.config_id, arm.repeat) for arm in arms) == Counter(
        {("baseline", 2): 1, ("control", 2): 1, ("frontier-0.5", 2): 1, ("frontier-1.5", 2): 1, ("method-2", 2): 1}
    )
    method = next(arm for arm in arms if arm.config_id == "method-2")
    assert method.overrides == next(a for a in trained if a.config_id == "method-2").overrides
    later = next_arms(experiment, {"method-1": 3}, [*trained, *arms])  # seed 3: seed 2's references exist
    assert {(arm.config_id, arm.repeat) for arm in later} == {
        ("baseline", 3),
        ("control", 3),
        ("frontier-0.5", 3),
        ("frontier-1.5", 3),
        ("method-1", 3),
    }
    assert next_arms(experiment, {"method-2": 2}, [*trained, *arms]) == []  # trained already


def test_a_resumed_adaptive_sweep_retrains_none_of_its_extra_seeds(tmp_path):
    """--resume compares the sweep's own arms (its first repeats) with what was trained: the adaptive
    rounds' arms are extra, never missing, and the first repeats' arms are all there."""
    from raycomp.launch.sweep.ledger import missing_arms, relabeled

    path = tmp_path / "adaptive.yaml"
    path.write_text(EXPERIMENT)
    experiment = load_experiment(str(path))
    trained = sweep_arms(experiment)
    trained += next_arms(experiment, {"method-2": 2}, trained)
    assert missing_arms(relabeled(sweep_arms(experiment), trained), trained) == []


def test_a_round_past_trials_per_experiment_trains_in_parts(tmp_path, monkeypatch, capsys):
    """A round of seeds is trained as the sweep's own arms are: past ``runner.TRIALS_PER_EXPERIMENT`` arms, in
    consecutive Tune experiments (issue 33: one experiment of thousands of trials takes Tune's driver past 2 GB).
    Tune stands aside here: each experiment's results are made up from its arms, and the verdicts are set."""
    from ray import tune

    from raycomp.launch.sweep import adaptive, runner

    path = tmp_path / "adaptive.yaml"
    path.write_text(EXPERIMENT)
    experiment = load_experiment(str(path), [f"storage_path={tmp_path}"])
    monkeypatch.setattr(runner, "TRIALS_PER_EXPERIMENT", 2)
    experiments: list[list[str]] = []

    def fit(arms):  # what Tune would return: one finished result per arm
        experiments.append([f"{arm.config_id}@{arm.repeat}" for arm in arms])
        return [
            tune.Result({"config": {"arm": arm.as_tune()}, "done": True}, None, None, str(tmp_path)) for arm in arms
        ]

    monkeypatch.setattr(runner, "build_tuner", lambda config, parent, arms, folder: arms)
    monkeypatch.setattr(runner, "fit_experiment", lambda arms: (fit(arms), False))
    rounds = iter([{"method-2": 2}, {}])  # one configuration open after the first seeds, then none
    monkeypatch.setattr(adaptive, "open_configs", lambda verdicts, max_repeats: next(rounds))
    monkeypatch.setattr(adaptive, "judge", lambda config, grids: None)

    outcome = runner.run_sweep(experiment, None)
    own = len(sweep_arms(experiment))
    assert [len(arms) for arms in experiments[: (own + 1) // 2]] == [2] * (own // 2) + [1] * (own % 2)
    round_arms = [arm for arms in experiments[(own + 1) // 2 :] for arm in arms]
    assert sorted(round_arms) == ["baseline@2", "control@2", "frontier-0.5@2", "frontier-1.5@2", "method-2@2"]
    assert [len(arms) for arms in experiments[(own + 1) // 2 :]] == [2, 2, 1]  # five arms, two to an experiment
    assert len(outcome.grids) == len(experiments) and not outcome.interrupted
    out = capsys.readouterr().out
    assert "adaptive repeats: one more seed for method-2 (seed 2)\nsweep part 1 of 3: 2 trial(s)" in out
