"""The user's own code named in YAML, LightningCLI's way: ``class_path`` (an import path) and ``init_args``.

``model`` and ``data`` may name an importable class or function instead of a built-in name: a model or dataset
class, or a function of the user's own or of a package, never the standard library's (``os.system`` with
``init_args`` would run a command: ``base.import_path`` refuses what builds no model or data, before anything
is called). Here it is imported and its signature checked against ``init_args``, each problem at its key, so a
misspelt module, a missing attribute, a refused callable or an argument the callable lacks is one config line
before anything starts.
What the callable *returns* is checked later, once, by ``raycomp.preflight.checks`` (it must be called).

The directory a command runs from is importable (``user_code_on_path``), in the CLI and, through
``PYTHONPATH``, in every Ray worker it starts: a package beside the experiment YAML just works.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from raycomp.base.import_path import import_callable
from raycomp.config.messages import Problem, suggest

_ARGUMENT_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def user_code_on_path(folder: str | None = None) -> str:
    """Makes ``folder`` (default: the working directory) importable here and in every process started after.

    It goes first on ``sys.path`` and on ``PYTHONPATH``, which a local Ray's raylet passes on to its
    workers (Tune trials, Ray Train workers); under ``ray job submit --working-dir`` Ray does the same
    for the uploaded folder. Returns the absolute folder.
    """
    folder = os.path.abspath(folder or os.getcwd())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    entries = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    if folder not in entries:
        os.environ["PYTHONPATH"] = os.pathsep.join([folder, *entries])
    return folder


def argument_problems(
    target: Callable[..., Any], init_args: Mapping[str, Any], section: str, supplied: str | None = None
) -> list[Problem]:
    """``init_args`` checked against ``target``'s signature: unknown keys at their key, missing ones together.

    ``supplied`` describes the first parameter when raycomp passes it itself (an optimizer's parameters, a torch
    scheduler's optimizer): it is neither required from nor accepted in ``init_args``.
    """
    try:
        parameters = dict(inspect.signature(target).parameters)
    except (TypeError, ValueError):  # some C-level callables have no signature: the call itself will tell
        return []
    name = getattr(target, "__qualname__", repr(target))
    if supplied is not None and parameters:
        first = next(iter(parameters))
        del parameters[first]
        if first in init_args:
            return [(("init_args", first), f"{name}'s {first!r} is {supplied}, which raycomp passes: remove it")]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        accepted = None  # **kwargs takes any key
    else:
        accepted = [n for n, p in parameters.items() if p.kind in _ARGUMENT_KINDS]
    problems: list[Problem] = []
    if accepted is not None:
        for key in init_args:
            if key not in accepted:
                message = f"{name} takes no argument {key!r} {suggest(key, accepted, 'arguments')}"
                problems.append((("init_args", key), message))
    required = [
        n
        for n, p in parameters.items()
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        and n not in init_args
    ]
    if required:
        problems.append(
            (("init_args",), f"{name} needs argument(s) {', '.join(required)} (add them under {section}.init_args)")
        )
    return problems


def class_path_problems(class_path: str | None, init_args: Mapping[str, Any], section: str) -> list[Problem]:
    """Everything wrong with a section's ``class_path`` and ``init_args`` that can be found without calling it."""
    if class_path is None:
        message = "needs class_path (init_args are the arguments of the callable it names)"
        return [(("init_args",), message)] if init_args else []
    try:
        target = import_callable(class_path)
    except ValueError as exc:
        return [(("class_path",), str(exc))]
    return argument_problems(target, init_args, section)
