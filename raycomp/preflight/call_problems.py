"""Where a failed call of the user's ``class_path`` with its ``init_args`` belongs: the argument it refused, the
arguments as a whole, or the path.

The signature tells first (``inspect.Signature.bind_partial``: a key no parameter takes). A callable that passes
``**kwargs`` on (torchvision's ``resnet18``, ``timm.create_model``) binds any key, and the class it passes them to
refuses one later; then the call is repeated without each key in turn, and the key whose absence lets the call
past its ``TypeError`` is the one refused. The model's repeats run on PyTorch's ``meta`` device: no memory, no
initialisation. Nothing reads the error's wording.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from raycomp.base.errors import one_line
from raycomp.config.messages import KeyPath, Problem


def call_problem(
    section: str, target: Callable[..., Any], class_path: str, init_args: Mapping[str, Any], error: Exception
) -> Problem:
    """The problem of ``class_path(**init_args)`` raising ``error``, at the key it points to."""
    key = refused_argument(target, init_args, error, on_meta=section == "model")
    where: KeyPath = (section, "init_args", key) if key else (section, "init_args" if init_args else "class_path")
    return where, f"calling {class_path} failed: {one_line(error)}"


def refused_argument(
    target: Callable[..., Any], init_args: Mapping[str, Any], error: Exception, *, on_meta: bool = False
) -> str | None:
    """The one ``init_args`` key that made the call raise its ``TypeError``, if one can be singled out."""
    if not isinstance(error, TypeError) or not init_args:
        return None
    unbound = [key for key in init_args if not _binds(target, key, init_args[key])]
    if unbound:
        return unbound[0] if len(unbound) == 1 else None
    passing = [key for key in init_args if _passes_without(target, init_args, key, on_meta)]
    return passing[0] if len(passing) == 1 else None


def _binds(target: Callable[..., Any], key: str, value: Any) -> bool:
    try:
        inspect.signature(target).bind_partial(**{key: value})
    except (TypeError, ValueError):  # ValueError: no signature to read (some builtins): the call tells
        return not _has_signature(target)
    return True


def _has_signature(target: Callable[..., Any]) -> bool:
    try:
        inspect.signature(target)
    except (TypeError, ValueError):
        return False
    return True


def _passes_without(target: Callable[..., Any], init_args: Mapping[str, Any], key: str, on_meta: bool) -> bool:
    """Whether the call without ``key`` gets past argument binding: it returns, or fails otherwise than by a
    ``TypeError`` (such as a missing argument, which is not this key's fault)."""
    rest = {name: value for name, value in init_args.items() if name != key}
    device: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    if on_meta:
        import torch

        device = torch.device("meta")
    try:
        with device:
            target(**rest)
    except TypeError:
        return False
    except Exception:
        return True
    return True
