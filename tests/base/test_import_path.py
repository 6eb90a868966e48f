"""raycomp/base/import_path.py: what a ``class_path`` may name (defect D4: a config named ``os.system``)."""

from __future__ import annotations

import functools
import subprocess

import pytest

from raycomp.base.import_path import callable_refusal, import_callable


@pytest.mark.parametrize(
    "class_path",
    [
        "os.system",
        "subprocess.run",
        "subprocess.Popen",  # a class, but not a model or dataset: a standard-library class is refused too
        "builtins.__import__",
        "builtins:eval",
        "operator.methodcaller",
        "shutil.rmtree",
        "pickle.loads",
    ],
)
def test_the_standard_library_is_refused_before_it_is_imported(class_path):
    with pytest.raises(ValueError, match=r"is Python's standard library \(.*run only configs you trust"):
        import_callable(class_path)


@pytest.mark.parametrize(
    ("class_path", "defined_in"),
    [
        ("torch.hub.load", "torch.hub.load"),  # fetches and runs a repository's hubconf.py
        ("torch.load", "torch.serialization.load"),  # unpickles
        ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"),
        ("raycomp.base.atomic_files.atomic_write_text", "raycomp.base.atomic_files.atomic_write_text"),
    ],
)
def test_a_librarys_callables_other_than_its_models_datasets_and_factories_are_refused(class_path, defined_in):
    with pytest.raises(ValueError) as refused:
        import_callable(class_path)
    assert str(refused.value).startswith(f"{class_path!r} ({defined_in}) is neither a model or dataset class")


def test_the_libraries_raycomp_runs_on_and_private_callables_are_refused():
    """L10 of the 2026-12-01 probe: `mlflow.utils.process._exec_cmd` ran `touch` from `--set`."""
    with pytest.raises(ValueError, match=r"is mlflow's, which raycomp runs on"):
        import_callable("mlflow.utils.process._exec_cmd")
    with pytest.raises(ValueError, match=r"is ray's, which raycomp runs on"):
        import_callable("ray.init")

    def _helper():
        return None

    assert "names a private callable (_helper)" in str(callable_refusal("my_pkg._helper", _helper))


def test_a_reexport_or_partial_of_the_standard_library_is_refused_as_the_original_is():
    """Decided by where the callable is defined, not by the path that names it: no denylist of names to dodge."""
    assert "standard library (subprocess.run)" in str(callable_refusal("my_pkg.run", subprocess.run))
    wrapped = functools.partial(subprocess.run, ["true"])
    assert "standard library (subprocess.run)" in str(callable_refusal("my_pkg.run_true", wrapped))


@pytest.mark.parametrize(
    "class_path",
    [
        "torch.nn.Linear",
        "torchvision.models.resnet18",
        "torchvision.models.get_model",
        "torchvision.datasets.FakeData",
        "raycomp.models.hugging_face.from_config",
        "my_project.nets.TinyResNet",  # the user's own class, function and data module
        "my_project.odd.linear_classifier",
        "my_project.data.colour_squares",
        "my_project.data.ColourSquaresModule",
    ],
)
def test_models_datasets_factories_and_the_users_own_callables_are_named(user_project, class_path):
    assert callable(import_callable(class_path))


def test_timms_factory_and_model_builders_are_named_and_its_other_functions_refused():
    pytest.importorskip("timm")
    assert callable(import_callable("timm.create_model")) and callable(import_callable("timm.models.resnet18"))
    with pytest.raises(ValueError, match="neither a model or dataset class nor a model factory"):
        import_callable("timm.models.load_checkpoint")  # torch.load of any file
