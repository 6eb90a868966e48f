"""The preflight: the model built on the CPU and run on a real batch of two from each split of the data, before Ray;
each problem one line at its key (defects D5, D6, D7)."""

from __future__ import annotations

import pytest
import torch
from config_files import only_problem, write

from raycomp.config import load_experiment
from raycomp.config.recipe import build_trainer
from raycomp.preflight.call_problems import refused_argument

TINY = "name: probe\nmax_duration: 1ba\ntracking: {enabled: false}\n"
TABULAR = "data: {class_path: my_project.cases.tabular}\n"
VIT = (  # a ViT built for 32x32 images: its patch grid takes no other size
    "model:\n  class_path: torchvision.models.VisionTransformer\n  init_args: {image_size: 32, patch_size: 8, "
    "num_layers: 1, num_heads: 2, hidden_dim: 16, mlp_dim: 16}\n"
)


def test_a_plain_module_returning_a_dict_of_logits_is_checked_and_trains(tmp_path, cases):
    config = load_experiment(write(tmp_path, TINY + "model: {class_path: my_project.cases.DictLogits}\n" + TABULAR))
    trainer = build_trainer(config, device="cpu")
    trainer.fit()  # cross-entropy on outputs["logits"], and an evaluation
    assert trainer.state.eval_metrics["eval/accuracy"] >= 0


@pytest.mark.parametrize(
    ("model", "line", "problem"),
    [
        ("{class_path: my_project.cases.mlp, init_args: {num_classes: 1}}", 1, "model.init_args.num_classes: "
         "my_project.cases.mlp on a batch of my_project.cases.tabular's train set: the model outputs 1 logits per "
         "sample but the data has labels up to 1: it needs at least 2 classes"),
        ("{class_path: my_project.cases.TupleOutput}", 1, "model.class_path: my_project.cases.TupleOutput fails on "
         "a batch of my_project.cases.tabular's train set: TypeError: the model returned a tuple of 2; a classifier "
         "returns a (batch, classes) tensor of logits, or a dict or object holding one as 'logits' (for other "
         "outputs, subclass raycomp.models.RaycompModel with a loss)"),
        ("{class_path: torch.nn.Identity}", 1, "model.class_path: torch.nn.Identity has no parameters to train (an "
         "optimizer needs at least one)"),
    ],
    ids=["too-few-logits", "tuple-output", "no-parameters"],
)  # fmt: skip
def test_a_model_that_cannot_train_on_the_data_is_one_line_at_its_key(tmp_path, cases, model, line, problem):
    path = write(tmp_path, f"model: {model}\n" + TABULAR)
    assert only_problem(path) == f"{path}:{line}: {problem}"


def test_a_raycomp_model_is_checked_with_its_own_loss_not_by_shape(tmp_path, cases):
    data = "data: {class_path: my_project.cases.tabular, init_args: {regression: true}}\n"
    config = load_experiment(write(tmp_path, "model: {class_path: my_project.cases.Regression}\n" + data))
    assert config.model.class_path == "my_project.cases.Regression"  # (2,) float outputs, float targets: its loss


def test_built_in_models_are_checked_against_the_data_too(tmp_path):
    path = write(tmp_path, "model: {name: cnn, num_classes: 4}\n")
    assert only_problem(path) == (
        f"{path}:1: model.num_classes: the 'cnn' model on a batch of the 'synthetic' data's train set: the model "
        "outputs 4 logits per sample but the data has labels up to 9: it needs at least 10 classes"
    )
    vit = write(tmp_path, VIT.replace("image_size: 32", "image_size: 64"), "vit.yaml")
    assert only_problem(vit).startswith(
        f"{vit}:2: model.class_path: torchvision.models.VisionTransformer fails on a batch of the 'synthetic' data's "
        "train set: AssertionError: Wrong image height! Expected 64 but got 32!"
    )


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ("{class_path: my_project.cases.tabular, init_args: {num_train: 0}}", "my_project.cases.tabular: its train "
         "set is empty (a run needs at least one train sample)"),
        ("{class_path: my_project.cases.tabular, init_args: {num_eval: 0}}", "my_project.cases.tabular: its eval set "
         "is empty (a run needs at least one eval sample)"),
        ("{class_path: my_project.cases.TabularModule, init_args: {num_eval: 0}}", "my_project.cases.TabularModule: "
         "its eval loader yielded no batches (an empty eval set)"),
        ("{class_path: my_project.cases.TabularModule, init_args: {fail_in_setup: true}}", "my_project.cases."
         "TabularModule: its prepare_data() or setup('fit') failed: RuntimeError: the feature store did not answer"),
        # L1 of the 2026-12-01 probe: a loader that is None crashed the preflight (rc 1, 40 lines)
        ("{class_path: my_project.cases.TabularModule, init_args: {no_train_loader: true}}", "my_project.cases."
         "TabularModule: its train loader cannot be iterated (NoneType): TypeError: 'NoneType' object is not "
         "iterable"),
    ],
    ids=["empty-train-set", "empty-eval-set", "empty-eval-loader", "setup-raises", "no-loader"],
)  # fmt: skip
def test_data_that_cannot_train_is_one_line_at_its_class_path(tmp_path, cases, data, problem):
    path = write(tmp_path, f"model: {{class_path: my_project.cases.mlp}}\ndata: {data}\n")
    assert only_problem(path) == f"{path}:2: data.class_path: {problem}"


def test_an_image_folder_needs_an_image_per_class_and_its_first_ones_must_decode(tmp_path, user_project):
    from my_project.data import write_image_folder

    images = write_image_folder(tmp_path / "images", per_class=(2, 1), size=8)
    path = write(tmp_path, f"model: {{name: cnn, num_classes: 3}}\ndata: {{name: image_folder, root: {images}, "
                 "image_size: 8}\n")  # fmt: skip
    assert load_experiment(path).data.root == str(images)
    (images / "train" / "class_3").mkdir()
    assert only_problem(path) == (
        f"{path}:2: data.root: {images / 'train'} has class folders without images: class_3 (give each an image, "
        "or remove it)"
    )
    (images / "train" / "class_3").rmdir()
    corrupt = images / "train" / "class_1" / "0.png"
    corrupt.write_bytes(b"\x89PNG\r\n\x1a\n not an image")
    assert only_problem(path).startswith(f"{path}:2: data.root: {corrupt} cannot be decoded (UnidentifiedImageError")
    corrupt.unlink()
    for png in (images / "val").rglob("*.png"):
        png.unlink()
    assert only_problem(path) == (
        f"{path}:2: data.root: {images / 'val'} holds no images: the eval set would be empty (add images per class "
        "under it)"
    )


def test_each_swept_model_and_data_value_is_run_before_any_trial(tmp_path, cases):
    sweep = "sweep:\n  space:\n    model.class_path: {choice: [my_project.cases.mlp, my_project.cases.TupleOutput]}\n"
    path = write(tmp_path, "model: {class_path: my_project.cases.mlp}\n" + TABULAR + sweep)
    assert only_problem(path).startswith(
        f"{path}:5: sweep.space.model.class_path.choice[1]: 'my_project.cases.TupleOutput' cannot run: "
        "model.class_path: my_project.cases.TupleOutput fails on a batch of my_project.cases.tabular's train set: "
        "TypeError: the model returned a tuple of 2"
    )
    data = "sweep:\n  space:\n    data.init_args.num_eval: {grid: [4, 0]}\n"
    swept = write(tmp_path, "model: {class_path: my_project.cases.mlp}\n" + TABULAR + data, "data.yaml")
    assert only_problem(swept) == (
        f"{swept}:5: sweep.space.data.init_args.num_eval.grid[1]: 0 cannot run: data.class_path: my_project.cases."
        "tabular: its eval set is empty (a run needs at least one eval sample)"
    )


def test_an_argument_a_callable_passes_on_is_found_by_binding_and_calling_without_it(tmp_path, cases):
    from my_project.cases import forwarded

    path = write(tmp_path, "model:\n  class_path: my_project.cases.forwarded\n  init_args: {in_features: 2, "
                 "out_features: 2, bias: true, widht: 3}\n" + TABULAR)  # fmt: skip
    assert only_problem(path) == (
        f"{path}:3: model.init_args.widht: calling my_project.cases.forwarded failed: TypeError: Linear.__init__() "
        "got an unexpected keyword argument 'widht'"
    )
    try:
        forwarded(in_features=2, out_features=2, widht=3)
    except TypeError as error:
        assert refused_argument(forwarded, {"in_features": 2, "out_features": 2, "widht": 3}, error) == "widht"
    assert refused_argument(forwarded, {"in_features": 2}, ValueError("not an argument's fault")) is None


def test_the_preflight_leaves_the_random_generators_as_they_were(tmp_path):
    before = torch.random.get_rng_state()
    load_experiment("experiments/sb.yaml")
    assert torch.equal(torch.random.get_rng_state(), before)
