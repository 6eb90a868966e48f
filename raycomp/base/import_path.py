"""Importing the callable a ``class_path`` names (LightningCLI's convention): ``pkg.mod.Name``, or
``pkg.mod:Name.attr`` for nested attributes. One owner for the config's checks (``config.user_code``) and
for the workloads that build the user's model or data from it, in every process.

An experiment file runs the code it names, so what it may name is narrowed to what builds a model, data, an
optimizer or a learning-rate schedule: a class, or a function of the user's own or of a package. Python's standard
library is refused whole (``os.system``, ``subprocess.run``, ``builtins.__import__``, ``operator.methodcaller`` all
called with ``init_args`` from YAML or ``--set``), and so are the functions of the libraries raycomp runs on, except
their model factories (``torch.hub.load`` and ``torch.load`` run or unpickle what they fetch), their optimizer and
scheduler classes (``torch.optim.Adam``, ``torch.optim.lr_scheduler.StepLR``) and raycomp's schedules. This is a
narrowing, not a sandbox: the user's own modules may do anything, so run only configs you trust.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib
import sys
from collections.abc import Callable
from typing import Any

from raycomp.base.errors import one_line

_SHOWN_CHARACTERS = 80  # as config.messages cuts values
# Libraries whose own functions are never a user's model or data: of their callables, only model or dataset
# classes and the model factories below may be named.
_LIBRARIES = ("torch", "torchvision", "timm", "transformers", "raycomp")
# The other libraries raycomp runs on and with (its dependencies and theirs): none of their callables builds a model
# or data (``mlflow.utils.process._exec_cmd`` ran `touch` from `--set`: L10 of the 2026-12-01 probe).
_RUNTIME = ("mlflow", "ray", "numpy", "scipy", "pandas", "pyarrow", "yaml", "pydantic", "sqlalchemy", "alembic",
            "boto3", "botocore", "s3fs", "fsspec", "requests", "urllib3", "psutil", "setuptools", "pip", "flask",
            "uvicorn", "gunicorn", "docker", "git", "jinja2", "click", "cloudpickle", "filelock")  # fmt: skip
_FACTORIES = ("timm.create_model", "torchvision.models.get_model", "raycomp.models.hugging_face.from_config")
# A class deriving from one of these (by defining module and name: nothing is imported to check) is a model,
# a dataset, an optimizer or a learning-rate scheduler wherever it is defined.
_MODEL_BASES = {
    ("torch.nn.modules.module", "Module"),
    ("torch.utils.data.dataset", "Dataset"),
    ("torch.optim.optimizer", "Optimizer"),
    ("torch.optim.lr_scheduler", "LRScheduler"),
}
_SCHEDULE_MODULE = "raycomp.core.schedulers"  # raycomp's own schedules, functions of the State: classes only
_TRUST = "an experiment file runs the code it names: run only configs you trust"


def import_callable(class_path: str) -> Callable[..., Any]:
    """The callable ``class_path`` names (``pkg.mod.Name``, or ``pkg.mod:Name`` for nested attributes).

    A ``ValueError`` with one line saying what failed: the module, the attribute, or what it is instead.
    """
    module_name, attributes = _split(class_path)
    if _in_standard_library(module_name):  # refused before its import can do anything
        raise ValueError(_standard_library_refusal(class_path, module_name))
    module = _import_module(module_name, class_path)
    target: Any = module
    where = module_name
    for attribute in attributes:
        if not hasattr(target, attribute):
            names = [name for name in dir(target) if not name.startswith("_")]
            close = difflib.get_close_matches(attribute, names, n=1, cutoff=0.6)
            guess = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"{where!r} has no attribute {attribute!r}{guess}")
        target, where = getattr(target, attribute), f"{where}.{attribute}"
    if not callable(target):
        raise ValueError(f"{class_path!r} is a {type(target).__name__}, not a class or function")
    refusal = callable_refusal(class_path, target)
    if refusal:
        raise ValueError(refusal)
    return target


def callable_refusal(class_path: str, target: Callable[..., Any]) -> str | None:
    """Why ``target`` may not be named by a ``class_path``, or None: it must be a model, dataset, optimizer or
    scheduler class (or one of raycomp's schedules), a function or class outside the standard library and the
    libraries raycomp runs on, or one of their model factories. Decided by where it is *defined*, so a re-export
    (``my_pkg.run = subprocess.run``) is refused as the original is."""
    while isinstance(target, functools.partial):  # what the partial calls, with arguments fixed in code
        target = target.func
    if _is_named_class(target):
        return None
    origin = _defining_module(target)
    if origin is None:
        return f"{class_path!r} does not say where it is defined (no __module__): name a class or a module's function"
    if _in_standard_library(origin):
        return _standard_library_refusal(class_path, f"{origin}.{_name(target)}")
    library = origin.split(".")[0]
    if library in _RUNTIME:
        where = f"{origin}.{_name(target)}"
        return f"{class_path!r} ({where}) is {library}'s, which raycomp runs on, not a model's or its data's ({_TRUST})"
    private = [part for part in _name(target).split(".") if part.startswith("_") and not part.endswith("__")]
    if private:
        return f"{class_path!r} names a private callable ({private[0]}): name a public class or function ({_TRUST})"
    if library in _LIBRARIES and not _is_model_factory(target):
        return (
            f"{class_path!r} ({origin}.{_name(target)}) is neither a model or dataset class nor a model factory "
            f"such as timm.create_model or torchvision.models.resnet18 (nor an optimizer or scheduler class), the "
            f"only callables of {library} that class_path may name ({_TRUST})"
        )
    return None


def _standard_library_refusal(class_path: str, where: str) -> str:
    return (
        f"{class_path!r} is Python's standard library ({where}), not a model or data callable: class_path names "
        f"a model or dataset class, or a function of your own or of a package ({_TRUST})"
    )


def _in_standard_library(module_name: str) -> bool:
    """``sys.stdlib_module_names`` holds top-level names, builtins and the C modules (``posix``) included."""
    return module_name.split(".")[0] in sys.stdlib_module_names


def _is_named_class(target: Any) -> bool:
    """A model, dataset, optimizer or scheduler class, or one of raycomp's schedules."""
    if not isinstance(target, type):
        return False
    if target.__module__ == _SCHEDULE_MODULE:
        return True
    return any((c.__module__, c.__qualname__) in _MODEL_BASES for c in target.__mro__)


def _defining_module(target: Any) -> str | None:
    """The module ``target`` is defined in: a bound method's function's, a callable object's class's."""
    module = getattr(getattr(target, "__func__", target), "__module__", None)
    return module if isinstance(module, str) and module else None


def _name(target: Any) -> str:
    function = getattr(target, "__func__", target)
    return str(getattr(function, "__qualname__", None) or getattr(type(function), "__qualname__", "?"))


def _is_model_factory(target: Any) -> bool:
    """One of ``_FACTORIES``, or a model builder registered by timm or torchvision (``resnet18``)."""
    for path in _FACTORIES:
        module_name, _, attribute = path.rpartition(".")
        if getattr(sys.modules.get(module_name), attribute, None) is target:
            return True
    name = getattr(target, "__name__", None)
    if not isinstance(name, str):
        return False
    timm_models = sys.modules.get("timm.models")
    if timm_models is not None and timm_models.is_model(name) and timm_models.model_entrypoint(name) is target:
        return True
    torchvision_models = sys.modules.get("torchvision.models")
    if torchvision_models is not None:
        with contextlib.suppress(ValueError):  # not a name torchvision registered
            return torchvision_models.get_model_builder(name) is target
    return False


def _split(class_path: str) -> tuple[str, list[str]]:
    module_name, colon, rest = class_path.partition(":")
    if colon:
        attributes = rest.split(".")
    else:
        module_name, _, last = class_path.rpartition(".")
        attributes = [last]
    if not module_name or not all(part.isidentifier() for part in [*module_name.split("."), *attributes]):
        raise ValueError(
            f"must be an import path such as 'torchvision.models.resnet18' or 'my_project.nets:ResNet', "
            f"got {_shown(class_path)}"
        )
    return module_name, attributes


def _import_module(module_name: str, class_path: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or module_name
        if module_name == missing or module_name.startswith(missing + "."):
            raise ValueError(
                f"cannot import {module_name!r}: no module named {missing!r} (is its package in the directory "
                f"you run from, on PYTHONPATH, or installed?)"
            ) from None
        raise ValueError(f"importing {module_name!r} failed: {one_line(exc)}") from None
    except Exception as exc:  # the user's module raised while importing
        raise ValueError(f"importing {module_name!r} for {class_path!r} failed: {one_line(exc)}") from None


def _shown(text: str) -> str:
    shown = repr(text)
    if len(shown) <= _SHOWN_CHARACTERS:
        return shown
    return f"{shown[: _SHOWN_CHARACTERS - 3]}... ({len(shown):,} characters)"
