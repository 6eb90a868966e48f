"""The ``find`` section (raycomp.config.find): methods, budget and seeds checked at their keys, file and line."""

from __future__ import annotations

import pytest

from raycomp.config import ConfigError, ExperimentConfig, load_experiment

EXPERIMENT = """\
name: f
data: {num_train: 64, num_test: 32, batch_size: 16}
max_duration: 1ep
find:
  methods: [label_smoothing, cutmx]
  budget: 20x
  screen: [1, 3]
"""


def test_a_bad_find_section_is_one_line_per_problem_at_its_file_line_and_key(tmp_path):
    path = tmp_path / "find.yaml"
    path.write_text(EXPERIMENT)
    with pytest.raises(ConfigError) as caught:
        load_experiment(str(path))
    problems = caught.value.problems
    assert any(f"{path}:5: find.methods[1]: unknown method (did you mean 'cutmix'?" in line for line in problems)
    assert any(f"{path}:6: find.budget: must be a time such as '30m'" in line for line in problems)


def test_methods_take_a_list_a_mapping_of_arguments_or_auto_and_budgets_take_units():
    listed = ExperimentConfig.from_dict({"find": {"methods": ["mixup"], "budget": "2h"}}).find
    assert listed.chosen_methods() == {"mixup": {}} and listed.budget == 7200.0
    mapped = ExperimentConfig.from_dict({"find": {"methods": {"selective_backprop": {"scale_factor": 1.0}}}}).find
    assert mapped.chosen_methods() == {"selective_backprop": {"scale_factor": 1.0}}
    assert ExperimentConfig.from_dict({"find": {"budget": 90}}).find.chosen_methods() is None


@pytest.mark.parametrize(
    ("find", "expected"),
    [
        ({"methods": {"mixup": {"alpha": -1}}}, "find.methods.mixup.alpha: must be >= 0"),
        ({"methods": ["mixup", "mixup"]}, "find.methods: names a method twice"),
        ({"screen": [3, 2]}, "find.screen: must be [first, last] seeds with 2 <= first <= last"),
        ({"baseline_budgets": [1.0]}, "find.baseline_budgets[0]: must be in (0, 4] and not 1"),
        ({"budget": "-5m"}, "find.budget: must be a time"),
        ({"proxy": {"max_duration": "1.5dur"}}, "find.proxy.max_duration: must be shorter than the run"),
        ({"proxy": {"max_duration": "100tok"}}, "find.proxy.max_duration: must be a fraction of the run"),
        ({"proxy": {"stages": ["tune", "screen"]}}, "find.proxy.stages: must be search stages in their order"),
        ({"proxy": {"stages": ["confirm"]}}, "find.proxy.stages[0]: "),
        ({"proxy": {"data_fraction": 0}}, "find.proxy.data_fraction: must be in (0, 1]"),
    ],
)
def test_each_bad_value_is_named_at_its_key(find, expected):
    with pytest.raises(ConfigError) as caught:
        ExperimentConfig.from_dict({"find": find})
    assert any(expected in line for line in caught.value.problems), caught.value.problems
