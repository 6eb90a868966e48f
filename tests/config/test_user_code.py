"""``class_path`` + ``init_args``: each bad input is one line naming the file, line and key, before anything runs."""

from __future__ import annotations

import os
import sys
import time

import pytest
from config_files import only_problem, problems, write

from raycomp.cli.tune import main as tune_main
from raycomp.config import ConfigError, ExperimentConfig, load_experiment
from raycomp.config.arm import Arm
from raycomp.config.user_code import user_code_on_path

DATA = "data: {class_path: my_project.data.colour_squares, init_args: {num_train: 8, num_eval: 4}}\n"


def test_a_model_and_data_by_import_path_load_and_show_in_the_flat_params(tmp_path, user_project):
    path = write(
        tmp_path,
        "model:\n  class_path: my_project.nets.TinyResNet\n  init_args: {num_classes: 4, widths: [8, 16]}\n" + DATA,
    )
    config = load_experiment(path)
    assert config.model.init_args == {"num_classes": 4, "widths": [8, 16]}
    flat = config.flatten()
    assert flat["model.class_path"] == "my_project.nets.TinyResNet"
    assert flat["model.init_args.num_classes"] == 4 and flat["data.init_args.num_train"] == 8
    assert config.metric_num_classes == 4  # eval metrics count the user model's classes
    assert ExperimentConfig.from_dict(config.to_dict()) == config  # trials rebuild it from plain data


@pytest.mark.parametrize(
    ("model", "line", "problem"),
    [
        ("{class_path: my_projct.nets.TinyResNet}", 2, "model.class_path: cannot import 'my_projct.nets': no module "
         "named 'my_projct' (is its package in the directory you run from, on PYTHONPATH, or installed?)"),
        ("{class_path: my_project.nets.TinyResNt}", 2, "model.class_path: 'my_project.nets' has no attribute "
         "'TinyResNt' (did you mean 'TinyResNet'?)"),
        ("{class_path: my_project.nets.TinyResNet, init_args: {num_clases: 3}}", 2, "model.init_args.num_clases: "
         "TinyResNet takes no argument 'num_clases' (did you mean 'num_classes'?; valid arguments: num_classes, "
         "widths, dropout)"),
        ("{class_path: torch.nn.Linear}", 2, "model.init_args: Linear needs argument(s) in_features, out_features "
         "(add them under model.init_args)"),
        ("{class_path: my_project.odd.not_a_module}", 2, "model.class_path: my_project.odd.not_a_module returned "
         "a dict, not a torch nn.Module"),
        ("{init_args: {depth: 50}}", 2, "model.init_args: needs class_path (init_args are the arguments of the "
         "callable it names)"),
        ("{name: resnet20, class_path: torch.nn.Identity}", 2, "model.name: give model.name or model.class_path, "
         "not both"),
        ("{class_path: resnet18}", 2, "model.class_path: must be an import path such as 'torchvision.models."
         "resnet18' or 'my_project.nets:ResNet', got 'resnet18'"),
    ],
    ids=["misspelt-module", "missing-attribute", "unknown-argument", "missing-argument", "not-a-module",
         "arguments-without-path", "name-and-path", "not-a-path"],
)  # fmt: skip
def test_a_bad_model_is_one_line_at_its_key(tmp_path, user_project, model, line, problem):
    path = write(tmp_path, f"name: probe\nmodel: {model}\n")
    assert only_problem(path) == f"{path}:{line}: {problem}"


def test_an_argument_only_the_call_refuses_is_named_at_its_key(tmp_path):
    """torchvision's resnet18 takes ``**kwargs``: the signature cannot tell, calling it (on meta) does."""
    path = write(tmp_path, "model:\n  class_path: torchvision.models.resnet18\n  init_args:\n    num_clases: 3\n")
    assert only_problem(path) == (
        f"{path}:4: model.init_args.num_clases: calling torchvision.models.resnet18 failed: TypeError: "
        "ResNet.__init__() got an unexpected keyword argument 'num_clases'"
    )


def test_bad_data_is_one_line_at_its_key(tmp_path, user_project):
    wrong = write(tmp_path, "data: {class_path: my_project.odd.one_dataset}\n")
    assert only_problem(wrong) == (
        f"{wrong}:1: data.class_path: my_project.odd.one_dataset returned a list of 3; it must return (train, eval) "
        "Datasets or an object with train_dataloader() and val_dataloader()"
    )
    unknown = write(tmp_path, "data: {class_path: my_project.data.colour_squares, init_args: {sizes: 3}}\n", "u.yaml")
    assert only_problem(unknown).startswith(f"{unknown}:1: data.init_args.sizes: colour_squares takes no argument")


def test_an_image_folder_without_val_is_one_line_at_root(tmp_path, user_project):
    from my_project.data import write_image_folder

    images = write_image_folder(tmp_path / "images", per_class=(2, 1), size=8)
    path = write(tmp_path, f"data: {{name: image_folder, root: {images}}}\n")
    assert load_experiment(path).data.train_size == 6
    (images / "val" / "class_0" / "0.png").unlink()  # a val/ class without images is allowed
    assert load_experiment(path).data.root == str(images)
    for png in (images / "val").rglob("*.png"):
        png.unlink()
    for folder in sorted((images / "val").iterdir()):
        folder.rmdir()
    (images / "val").rmdir()
    assert only_problem(path) == (
        f"{path}:1: data.root: {images} has no val/ folder (image_folder reads train/ and val/)"
    )
    missing = write(tmp_path, "data: {name: image_folder}\n", "m.yaml")
    assert only_problem(missing).startswith(f"{missing}:1: data.root: required when data.name is 'image_folder'")


def test_a_relative_image_root_is_made_absolute_where_the_config_is_read(tmp_path, monkeypatch, user_project):
    from my_project.data import write_image_folder

    write_image_folder(tmp_path / "images", per_class=(1, 1), size=8)
    monkeypatch.chdir(tmp_path)
    config = ExperimentConfig.from_dict({"data": {"name": "image_folder", "root": "images"}})
    assert config.data.root == str(tmp_path / "images")  # a trial runs in its own folder


def test_the_cli_exits_2_before_ray_and_finds_packages_in_the_working_directory(
    tmp_path, monkeypatch, capsys, user_project
):
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(user_project)])
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    monkeypatch.chdir(user_project)  # only the working directory makes my_project importable
    (user_project / "bad.yaml").write_text("name: probe\nmodel:\n  class_path: my_project.odd.not_a_module\n")
    with pytest.raises(SystemExit) as info:
        tune_main(["bad.yaml"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[1:] == [
        "  bad.yaml:3: model.class_path: my_project.odd.not_a_module returned a dict, not a torch nn.Module"
    ]
    assert os.environ["PYTHONPATH"].split(os.pathsep)[0] == str(user_project)  # Ray's workers inherit it
    assert not (user_project / "runs").exists()


@pytest.mark.parametrize(
    ("class_path", "arguments"),
    [
        ("os.system", ["model.init_args.command=touch {marker}"]),
        ("subprocess.run", ["model.init_args.args=[touch, {marker}]"]),
        ("subprocess.Popen", ["model.init_args.args=[touch, {marker}]"]),
        ("builtins.__import__", ["model.init_args.name=my_project.touches"]),  # its import touches the marker
        ("my_project.shortcuts.run", ["model.init_args.args=[touch, {marker}]"]),  # subprocess.run re-exported
    ],
)
def test_d4_a_class_path_to_the_standard_library_exits_2_before_anything_is_called(
    tmp_path, capsys, user_project, class_path, arguments
):
    """Defect D4: ``--set model.class_path=os.system`` ran ``touch`` from the config, then said "returned a int"."""
    marker = tmp_path / "PWNED"
    (user_project / "my_project" / "touches.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n")
    (user_project / "my_project" / "shortcuts.py").write_text("from subprocess import run\n")
    path = write(tmp_path, f"name: probe\nstorage_path: {tmp_path / 'runs'}\ntracking: {{enabled: false}}\n")
    overrides = [f"model.class_path={class_path}", *(argument.format(marker=marker) for argument in arguments)]
    with pytest.raises(SystemExit) as info:
        tune_main([str(path), *(word for override in overrides for word in ("--set", override))])
    time.sleep(0.2)  # a Popen'd touch would have run by now
    assert info.value.code == 2 and not marker.exists()
    problem = capsys.readouterr().err.splitlines()[1]
    assert f"model.class_path: {class_path!r} is Python's standard library (" in problem
    assert problem.endswith("(an experiment file runs the code it names: run only configs you trust)")
    assert not (tmp_path / "runs").exists()


def test_user_code_on_path_is_idempotent(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    assert user_code_on_path(str(tmp_path)) == str(tmp_path) == user_code_on_path(str(tmp_path))
    assert os.environ["PYTHONPATH"] == f"{tmp_path}{os.pathsep}/elsewhere"
    assert sys.path.count(str(tmp_path)) == 1


def test_surgery_finds_its_targets_in_foreign_models_or_refuses_in_one_line(tmp_path, user_project):
    resnet = "model: {class_path: torchvision.models.resnet18}\n"
    fits = write(tmp_path, resnet + "algorithms: {blurpool: {}, channels_last: {}}\n", "fits.yaml")
    assert load_experiment(fits).to_dict()["algorithms"] == {"blurpool": {}, "channels_last": {}}
    refused = write(
        tmp_path,
        resnet + "algorithms:\n  alibi: {max_sequence_length: 64}\n  gated_linear_units: {}\n  fused_layernorm: {}\n",
    )
    assert problems(refused) == [
        f"{refused}:3: algorithms.alibi: Alibi cannot apply to torchvision.models.resnet18: no raycomp GPT or "
        "Hugging Face GPT-2 attention found",
        f"{refused}:4: algorithms.gated_linear_units: GatedLinearUnits cannot apply to torchvision.models.resnet18: "
        "no GPT MLP or GPT2MLP in the model",
        f"{refused}:5: algorithms.fused_layernorm: FusedLayerNorm cannot apply to torchvision.models.resnet18: the "
        "model has no nn.LayerNorm",
    ]
    vit = write(tmp_path, "model:\n  class_path: torchvision.models.VisionTransformer\n  init_args: {image_size: 32, "
                "patch_size: 8, num_layers: 1, num_heads: 2, hidden_dim: 16, mlp_dim: 16}\n"
                "algorithms: {blurpool: {}}\n", "v.yaml")  # fmt: skip
    assert only_problem(vit) == (
        f"{vit}:4: algorithms.blurpool: BlurPool cannot apply to torchvision.models.VisionTransformer: the model has "
        "no strided Conv2d with >= min_channels input channels and no MaxPool2d"
    )
    mlp = write(tmp_path, "model: {class_path: my_project.odd.linear_classifier, "
                "init_args: {num_classes: 10, size: 32}}\nalgorithms: {channels_last: {}}\n", "mlp.yaml")  # fmt: skip
    assert only_problem(mlp) == (
        f"{mlp}:2: algorithms.channels_last: ChannelsLast cannot apply to my_project.odd.linear_classifier: the model "
        "has no 4-D weights (convolutions) to store channels-last"
    )


def test_a_timm_model_by_class_path_is_checked_like_any_other(tmp_path):
    pytest.importorskip("timm")
    good = write(tmp_path, "model: {class_path: timm.create_model, init_args: {model_name: resnet18, num_classes: 10}}"
                 "\nalgorithms: {blurpool: {}, channels_last: {}}\n")  # fmt: skip
    assert load_experiment(good).metric_num_classes == 10
    timm = "model:\n  class_path: timm.create_model\n"
    bad = write(tmp_path, timm + "  init_args: {model_name: resnet18, num_clases: 3}\n", "bad.yaml")
    assert only_problem(bad).startswith(f"{bad}:3: model.init_args.num_clases: calling timm.create_model failed")


def test_a_sweep_may_search_the_user_models_arguments(user_project):
    from raycomp.config import trial_config

    base = {"model": {"class_path": "my_project.nets.TinyResNet", "init_args": {"num_classes": 3}}}
    config = ExperimentConfig.from_dict({**base, "sweep": {"space": {"model.init_args.dropout": {"choice": [0.2]}}}})
    arm = Arm("method", overrides={"model.init_args.dropout": 0.2}, repeat=1)
    assert trial_config(config, arm).model.init_args == {"num_classes": 3, "dropout": 0.2}
    with pytest.raises(ConfigError, match=r"sweep\.space\.model\.init_args\.dropot: TinyResNet takes no argument "
                                          r"'dropot' \(did you mean 'dropout'\?"):  # fmt: skip
        ExperimentConfig.from_dict({**base, "sweep": {"space": {"model.init_args.dropot": {"choice": [0.2]}}}})


def test_transformer_surgery_finds_its_targets_in_a_hugging_face_gpt2(tmp_path):
    pytest.importorskip("transformers")
    path = write(tmp_path, """\
        model: {name: gpt2_hf, d_model: 32, n_layers: 1, n_heads: 2}
        data: {name: stdlib_text, seq_len: 64}
        algorithms: {alibi: {max_sequence_length: 128}, gated_linear_units: {}, fused_layernorm: {}}
        """)  # fmt: skip
    assert list(load_experiment(path).algorithms) == ["alibi", "gated_linear_units", "fused_layernorm"]
    not_a_model = write(tmp_path, "model:\n  class_path: raycomp.models.hugging_face.from_config\n"
                        "  init_args: {model_class: torch.nn.Linear}\n", "linear.yaml")  # fmt: skip
    assert only_problem(not_a_model) == (
        f"{not_a_model}:3: model.init_args: calling raycomp.models.hugging_face.from_config failed: TypeError: "
        "torch.nn.Linear has no config_class: it is not a Hugging Face transformers model class"
    )
