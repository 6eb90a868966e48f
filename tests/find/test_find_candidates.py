"""Which methods a find races on a workload, and the settings each one's Tune stage tries (raycomp.find.candidates),
from what each algorithm declares (``tuned_arguments``, ``incompatible_with``)."""

from __future__ import annotations

import pytest

from raycomp.algorithms.registry import ALGORITHMS, arguments_schema
from raycomp.config import ExperimentConfig
from raycomp.find.candidates import find_candidates, find_plan

SMALL = {"data": {"num_train": 64, "num_test": 32, "batch_size": 16}, "max_duration": "1ep"}


def test_every_declared_tuned_value_is_a_valid_argument_and_every_incompatible_name_is_registered():
    for name, cls in ALGORITHMS.items():
        fields = arguments_schema(name).model_fields
        for argument, values in cls.tuned_arguments.items():
            assert argument in fields, (name, argument)
            for value in values:
                arguments_schema(name).model_validate({argument: value})
        assert cls.incompatible_with <= set(ALGORITHMS), name
    assert "cutmix" in ALGORITHMS["mixup"].incompatible_with


def test_auto_races_what_applies_to_the_cnn_and_says_why_the_rest_is_left_out():
    config = ExperimentConfig.from_dict({**SMALL, "algorithms": {"ema": {}}, "find": {"methods": "auto"}})
    candidates, left_out, problems = find_candidates(config)
    names = {candidate.name for candidate in candidates}
    assert not problems
    assert {"selective_backprop", "mixup", "cutmix", "label_smoothing"} <= names
    assert "ema" not in names  # the experiment's own algorithm: part of the baseline
    assert set(left_out) == {"alibi", "gated_linear_units", "fused_layernorm", "seq_length_warmup"}
    assert "attention" in left_out["alibi"] and "no token sequences" in left_out["seq_length_warmup"]


def test_settings_start_from_the_given_arguments_keep_them_and_stay_within_max_settings():
    find = {"methods": {"selective_backprop": {"keep": 0.5, "scale_factor": 1.0}}, "max_settings": 3}
    config = ExperimentConfig.from_dict({**SMALL, "find": find})
    (candidate,), _, _ = find_candidates(config)
    assert candidate.settings[0] == (("scale_factor", 1.0),)  # keep 0.5 is the default: not part of the key
    assert len(candidate.settings) == 3
    assert all(dict(setting)["scale_factor"] == 1.0 for setting in candidate.settings)
    for setting in candidate.settings:  # every combination builds: start < end
        values = dict(setting)
        assert values.get("start", 0.5) < values.get("end", 0.9)
    plan = find_plan(config, (candidate,))
    assert plan.budget_s == 1800.0 and plan.frontier_budgets == (0.5, 0.75, 1.5)


def test_a_named_method_that_cannot_run_here_is_a_problem_at_its_key():
    config = ExperimentConfig.from_dict({**SMALL, "find": {"methods": ["alibi", "mixup"]}})
    candidates, _, problems = find_candidates(config)
    assert [candidate.name for candidate in candidates] == ["mixup"]
    ((path, message),) = problems
    assert path == ("find", "methods", "alibi") and message.startswith("Alibi cannot run here:")


def test_the_find_experiments_load_with_their_candidates():
    from pathlib import Path

    from raycomp.config import load_experiment

    experiments = Path(__file__).parents[2] / "experiments"
    cnn = load_experiment(experiments / "find_cnn.yaml")
    candidates, left_out, problems = find_candidates(cnn)
    assert (
        not problems
        and len(candidates) >= 10
        and set(left_out) == {"alibi", "gated_linear_units", "fused_layernorm", "seq_length_warmup"}
    )
    lm = load_experiment(experiments / "find_lm.yaml")
    candidates, left_out, problems = find_candidates(lm)
    assert not problems and not left_out
    by_name = {candidate.name: candidate for candidate in candidates}
    assert set(by_name) == {"alibi", "gated_linear_units", "fused_layernorm", "seq_length_warmup", "selective_backprop"}
    assert all(dict(setting)["scale_factor"] == 1.0 for setting in by_name["selective_backprop"].settings)
    assert len(by_name["alibi"].settings) == 3  # train_sequence_length_scaling tuned
    assert find_plan(lm, candidates).mode == "min"


def test_auto_screens_ema_at_a_half_life_shorter_than_a_short_run_and_tunes_fractions_of_it():
    """EMA's default half-life (1000 batches) on a 4-batch run evaluates nearly the initial weights (issue 55): under
    ``auto`` the find starts from a tenth of the run and tunes half and twice that, none of them past its end."""
    from raycomp.config.run_length import run_length
    from raycomp.launch.find.command import find_duration_warnings

    config = ExperimentConfig.from_dict({**SMALL, "find": {"methods": "auto"}})
    candidates, _, _ = find_candidates(config)
    (ema,) = [candidate for candidate in candidates if candidate.name == "ema"]
    assert ema.default.key == "ema(half_life=0.1dur)"
    assert [dict(setting)["half_life"] for setting in ema.settings] == ["0.1dur", "0.05dur", "0.2dur"]
    assert run_length(config).batches == 4 and run_length(config).outlasted_by("1000ba") == "longer than"
    assert find_duration_warnings(config, find_plan(config, candidates)) == []


def test_a_named_ema_keeps_the_arguments_given_and_a_given_half_life_past_the_run_is_warned_of():
    from raycomp.launch.find.command import find_duration_warnings

    methods = {"ema": {"half_life": None, "smoothing": 0.9}, "label_smoothing": {}}
    config = ExperimentConfig.from_dict({**SMALL, "find": {"methods": methods}})
    candidates, _, _ = find_candidates(config)
    assert candidates[0].settings == ((("half_life", None), ("smoothing", 0.9)),)  # no half-life added to smoothing
    config = ExperimentConfig.from_dict({**SMALL, "find": {"methods": {"ema": {"half_life": "1000ba"}}}})
    candidates, _, _ = find_candidates(config)
    assert candidates[0].settings == ((),)  # the given half-life is kept, and not tuned
    assert find_duration_warnings(config, find_plan(config, candidates)) == [
        "find.methods.ema.half_life: 1000ba is longer than the run (1ep, 4ba): shorten it, or give it as a fraction "
        "of the run where it takes one (e.g. '0.1dur')"
    ]


def test_the_finds_metric_and_mode_are_checked_before_the_race():
    """M2 of the reliability probe: `find.metric: eval/loss` with `mode: max` ran a whole find that called a higher
    loss "more accurate"; a misspelt metric was caught only after Ray and the MLflow parent had started."""
    from raycomp.config import ExperimentConfig
    from raycomp.find.candidates import find_candidates

    def problems(**find):
        data = {"num_train": 64, "num_test": 32, "batch_size": 16}
        config = ExperimentConfig.from_dict({"name": "x", "data": data, "find": {"methods": ["mixup"], **find}})
        return find_candidates(config)[2]

    ((where, message),) = problems(metric="eval/loss", mode="max")
    assert where == ("find", "mode") and "set find.mode: min" in message and "sweep" not in message
    ((where, message),) = problems(metric="eval/acuracy")
    assert where == ("find", "metric") and "'eval/acuracy' is not computed" in message
    assert problems(metric="eval/loss", mode="min") == [] and problems() == []


REGRESSION_FIND = """name: sums
model: {class_path: my_project.regression.SumRegression}
data: {class_path: my_project.regression.SumsModule}
max_duration: 1ep
find: {methods: auto, metric: eval/mae, mode: min, max_settings: 1}
"""
TABULAR_FIND = """name: labelled
model: {class_path: my_project.regression.three_classes}
data: {class_path: my_project.regression.LabelledModule}
max_duration: 1ep
find: {methods: auto, max_settings: 1}
"""


@pytest.fixture
def regression_project(user_project, monkeypatch):
    from user_code import REGRESSION_MODULE

    (user_project / "my_project" / "regression.py").write_text(REGRESSION_MODULE)
    monkeypatch.chdir(user_project)
    return user_project


@pytest.mark.parametrize("experiment", [REGRESSION_FIND, TABULAR_FIND], ids=["regression", "tabular"])
def test_auto_on_a_model_without_images_races_what_trains_and_selective_backprop_at_full_size(
    regression_project, experiment
):
    """Issue 59 item 1: on a regression MLP (float targets) and on a plain classifier of tabular features, `auto`
    raced label smoothing, CutMix and RandAugment, whose every trial failed, and left SelectiveBackprop out though
    its refusal named the fix. Each candidate tried in training first: what raced before and failed is left out
    with its error; SelectiveBackprop starts at scale_factor 1.0 and says so; every candidate's start trains a
    real epoch of the experiment as a trial would (``build_trainer``)."""
    from raycomp.config import load_experiment
    from raycomp.config.recipe import build_trainer
    from raycomp.find.answer import answer_of
    from raycomp.find.state import FindState
    from raycomp.find.text import answer_lines

    (regression_project / "find.yaml").write_text(experiment)
    config = load_experiment("find.yaml")
    candidates, left_out, problems = find_candidates(config)
    assert not problems
    by_name = {candidate.name: candidate for candidate in candidates}
    assert {"selective_backprop", "mixup", "gradient_clipping", "ema"} <= set(by_name)
    assert {"cutmix", "randaugment"} <= set(left_out)
    assert "CutMix needs inputs of shape (N, ..., H, W)" in left_out["cutmix"]
    assert left_out["randaugment"].startswith("training my_project.regression.")
    if experiment == REGRESSION_FIND:  # float targets: no labels to smooth
        assert "label_smoothing" in left_out and "IndexError" in left_out["label_smoothing"]
    else:
        assert "label_smoothing" in by_name
    selective = by_name["selective_backprop"]
    assert selective.settings == ((("scale_factor", 1.0),),)
    assert selective.changed.startswith("starts at scale_factor: 1.0, since at its default the input is a 2-D")
    for candidate in candidates:
        experiment = {key: value for key, value in config.to_dict().items() if key != "find"}
        arm = ExperimentConfig.from_dict({**experiment, "algorithms": {candidate.name: dict(candidate.settings[0])}})
        build_trainer(arm, device="cpu").fit()
    lines = answer_lines(answer_of(find_plan(config, candidates), FindState()), None, left_out)
    assert f"({selective.changed})" in [line.strip() for line in lines]  # under its candidate's line


def test_a_find_whose_every_candidate_failed_says_so():
    from raycomp.find.answer import Answer
    from raycomp.find.state import TRIALS_FAILED, Line

    lines = {name: Line("screen", f"{TRIALS_FAILED}: RuntimeError: boom") for name in ("mixup", "ema")}
    answer = Answer(None, None, None, lines, 2)
    assert answer.headline() == "no method could train on this model: the trials of all 2 candidates failed"
    lines["ema"] = Line("screen", "not shown faster in screen")
    assert "none of the 2 methods is faster" in Answer(None, None, None, lines, 2).headline()


def test_a_method_that_may_not_train_with_the_experiments_own_is_never_raced():
    """L7 of the 2026-12-01 probe: CutMix was raced though every arm runs the experiment's MixUp (both mix the
    batch). Named, it is refused at its key; under `auto`, left out with why."""
    config = ExperimentConfig.from_dict({**SMALL, "algorithms": {"mixup": {}}, "find": {"methods": "auto"}})
    candidates, left_out, _ = find_candidates(config)
    assert "cutmix" not in {c.name for c in candidates}
    assert left_out["cutmix"] == "it cannot be trained with mixup, which the experiment's algorithms run in every arm"
    named = ExperimentConfig.from_dict({**SMALL, "algorithms": {"mixup": {}}, "find": {"methods": ["cutmix"]}})
    ((where, message),) = find_candidates(named)[2]
    assert where == ("find", "methods", "cutmix") and "cannot be trained with mixup" in message


def test_the_cost_of_a_find_on_a_proxy_is_said_up_front_against_racing_at_full_length():
    """Issue 57 item 4: per stage, the most it trains on the proxy and what that would be at full length."""
    from raycomp.find.recipes import Candidate
    from raycomp.launch.find.command import cost_line

    find = {"methods": ["mixup", "cutmix"], "baseline_budgets": [0.5], "proxy": {"max_duration": "1ep"}}
    config = ExperimentConfig.from_dict({**SMALL, "max_duration": "4ep", "find": find})
    plan = find_plan(config, (Candidate("mixup"), Candidate("cutmix")))
    line = cost_line(config, plan)
    # Screen: 2 candidates at 6 seeds, a quarter of 4 epochs each; Confirm: 8 seeds of recipe, baseline, half-budget
    # frontier and control at full length (112), each candidate alone at Confirm's 3 first seeds (24), and one second
    # guess's recipe at Confirm's 8 seeds (32)
    assert "with the proxy (1ep of the run): screen 12 on the proxy (48 at full length)" in line, line
    assert "confirm 168 at full length" in line and line.startswith("at most ")
    total = int(line.split(" trial-epochs")[0].removeprefix("at most ").replace(",", ""))
    full = int(line.rsplit("every stage at full length: ", 1)[1].replace(",", ""))
    assert total < full
