"""Every method checked against the workload before Ray (issue 32 item 1): each algorithm says, on the real model
and a real batch of two, whether it can run; a configuration that cannot is one line at its key."""

from __future__ import annotations

import pytest
from config_files import only_problem, problems, write
from test_preflight import TABULAR, VIT

from raycomp.algorithms import LabelSmoothing
from raycomp.algorithms.registry import ALGORITHMS
from raycomp.config import load_experiment
from raycomp.core import Inapplicable
from raycomp.preflight.applicability import applicable_algorithms
from raycomp.preflight.probe import build_workload

MLP = "model: {class_path: my_project.cases.mlp}\n"
DOWNSAMPLING_TABULAR = (
    "the input is a 2-D float32 tensor of shape (2, 2); downsampling needs images (3-, 4- or 5-D float tensors): "
    "set it to 1"
)


def test_downsampling_tabular_inputs_is_refused_at_scale_factor(tmp_path, cases):
    path = write(tmp_path, MLP + TABULAR + "algorithms:\n  selective_backprop: {scale_factor: 0.5}\n")
    assert only_problem(path) == f"{path}:4: algorithms.selective_backprop.scale_factor: {DOWNSAMPLING_TABULAR}"
    assert load_experiment(path, ["algorithms.selective_backprop.scale_factor=1"]).algorithms["selective_backprop"]


def test_resizing_methods_are_refused_for_a_fixed_input_size_model(tmp_path):
    path = write(tmp_path, VIT + "algorithms:\n  selective_backprop: {}\n  progressive_resizing: {}\n")
    found = problems(path)
    assert len(found) == 2
    assert found[0].startswith(
        f"{path}:5: algorithms.selective_backprop.scale_factor: the model cannot take the (2, 3, 16, 16) inputs "
        "downsampling makes (AssertionError: Wrong image height! Expected 32 but got 16!): set it to 1"
    )  # scale_factor is not in the file: the line is its algorithm's
    assert found[1] == (
        f"{path}:6: algorithms.progressive_resizing: ProgressiveResizing cannot apply to torchvision.models."
        "VisionTransformer: the model cannot take the (2, 3, 16, 16) inputs downsampling makes (AssertionError: "
        "Wrong image height! Expected 32 but got 16!): remove progressive_resizing (it needs images and a model "
        "that takes any image size)"
    )
    cnn = write(tmp_path, "algorithms:\n  selective_backprop: {}\n  progressive_resizing: {}\n", "cnn.yaml")
    assert list(load_experiment(cnn).algorithms) == ["selective_backprop", "progressive_resizing"]


def test_a_method_switched_off_on_the_command_line_is_neither_run_nor_checked(tmp_path):
    """Issue 59 item 8: a ViT user sweeping SelectiveBackprop alone from an experiment that also runs
    ProgressiveResizing (which a fixed-size ViT cannot take) had to replace the whole ``algorithms`` mapping."""
    methods = "algorithms:\n  selective_backprop: {scale_factor: 1.0}\n  progressive_resizing: {}\n"
    space = "sweep:\n  space:\n    algorithms.selective_backprop.keep: {choice: [0.25, 0.5]}\n"
    path = write(tmp_path, VIT + methods + space)
    assert "algorithms.progressive_resizing: ProgressiveResizing cannot apply" in only_problem(path)
    config = load_experiment(path, ["algorithms.progressive_resizing=false"])
    assert list(config.algorithms) == ["selective_backprop"] and config.sweep is not None
    with pytest.raises(Exception, match=r"algorithms\.progressive_resizing: must map .*or false to switch it off"):
        load_experiment(path, ["algorithms.progressive_resizing=true"])


def test_selection_needs_one_loss_per_sample_from_a_raycomp_model(tmp_path, cases):
    data = "data: {class_path: my_project.cases.tabular, init_args: {regression: true}}\n"
    model = "model: {class_path: my_project.cases.Regression, init_args: {per_sample: false}}\n"
    path = write(tmp_path, model + data + "algorithms:\n  selective_backprop: {scale_factor: 1}\n")
    assert only_problem(path) == (
        f"{path}:4: algorithms.selective_backprop: SelectiveBackprop cannot apply to my_project.cases.Regression: "
        "loss(..., reduction='none') gave a 0-D float32 tensor of shape (); selection needs one loss per sample"
    )
    fits = path.replace("exp.yaml", "fits.yaml")
    write(tmp_path, model.replace("false", "true") + data + "algorithms:\n  selective_backprop: {scale_factor: 1}\n",
          "fits.yaml")  # fmt: skip
    assert list(load_experiment(fits).algorithms) == ["selective_backprop"]


def test_a_sweep_lists_the_values_and_configurations_that_cannot_run_before_any_trial(tmp_path, cases):
    swept = "    algorithms.selective_backprop.scale_factor: {choice: [0.5, 1.0]}\n"
    sb = "algorithms:\n  selective_backprop: {scale_factor: 1.0}\nsweep:\n  space:\n"
    path = write(tmp_path, MLP + TABULAR + sb + swept)
    assert only_problem(path) == (
        f"{path}:7: sweep.space.algorithms.selective_backprop.scale_factor.choice[0]: 0.5 cannot run: "
        f"{DOWNSAMPLING_TABULAR}"
    )
    lists = "[[label_smoothing], [progressive_resizing], [label_smoothing, progressive_resizing]]"
    methods = "algorithms:\n  label_smoothing: {}\n  progressive_resizing: {}\nsweep:\n  space:\n"
    selected = write(tmp_path, VIT + methods + f"    algorithms: {{grid: {lists}}}\n", "grid.yaml")
    reason = "algorithms.progressive_resizing: ProgressiveResizing cannot apply to torchvision.models.VisionTransformer"
    where = f"{selected}:9: sweep.space.algorithms.grid"
    assert [line.split(": the model cannot")[0] for line in problems(selected)] == [
        f"{where}[1]: the configuration ['progressive_resizing'] cannot run: {reason}",
        f"{where}[2]: the configuration ['label_smoothing', 'progressive_resizing'] cannot run: {reason}",
    ]


def test_applicable_algorithms_answers_for_every_registered_method(tmp_path, cases):
    config = load_experiment(write(tmp_path, MLP + TABULAR))
    answers = applicable_algorithms(config)
    assert list(answers) == list(ALGORITHMS)
    assert answers["selective_backprop"] == Inapplicable(DOWNSAMPLING_TABULAR, "scale_factor")
    no_convolutions = "the model has no 4-D weights (convolutions) to store channels-last"
    assert answers["channels_last"] == Inapplicable(no_convolutions)
    assert answers["blurpool"] is not None and answers["alibi"] is not None
    assert answers["label_smoothing"] is None and answers["gradient_clipping"] is None
    workload = build_workload(config)  # reused: the model is built once for any number of questions
    assert applicable_algorithms(config, ["selective_backprop"], workload=workload) == {
        "selective_backprop": answers["selective_backprop"]
    }
    assert LabelSmoothing().check_workload(workload.model, workload.train_batch) is None  # the default: no objection


def test_a_proxy_data_fraction_is_refused_for_a_data_module_whose_loaders_are_used_as_they_are(tmp_path, cases):
    """find.proxy.data_fraction takes a seeded share of a dataset; a data module hands over its own loaders."""
    from raycomp.find.candidates import proxy_problems

    def with_data(data: str) -> object:
        return load_experiment(
            write(tmp_path, MLP + data + "find:\n  methods: [mixup]\n  proxy: {data_fraction: 0.5}\n")
        )

    module = with_data("data: {class_path: my_project.cases.TabularModule}\n")
    assert proxy_problems(module) == [
        (("find", "proxy", "data_fraction"),
         "my_project.cases.TabularModule gives a data module, whose loaders are used as they are: drop data_fraction")
    ]  # fmt: skip
    assert proxy_problems(with_data(TABULAR)) == []  # datasets: a share of them
