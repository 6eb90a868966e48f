"""Importing the callable a ``class_path`` names (LightningCLI's convention): ``pkg.mod.Name``, or
``pkg.mod:Name.attr`` for nested attributes. One owner for the config's checks (``config.user_code``) and
for the workloads that build the user's model or data from it, in every process.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from typing import Any

from raycomp.base.errors import one_line

_SHOWN_CHARACTERS = 80  # as config.messages cuts values


def import_callable(class_path: str) -> Callable[..., Any]:
    """The callable ``class_path`` names (``pkg.mod.Name``, or ``pkg.mod:Name`` for nested attributes).

    A ``ValueError`` with one line saying what failed: the module, the attribute, or what it is instead.
    """
    module_name, attributes = _split(class_path)
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
    return target


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
