"""The checks of a config that call the user's code, once, on the driver, before Ray or any run starts.

``class_path`` and ``init_args`` are imported and matched against the signature on every validation
(``user_code.py``); what the callable *returns* can only be known by calling it, which is done here, once
per command: the model is built on PyTorch's ``meta`` device (no memory, no initialisation cost; on the CPU
if it cannot be built there), the data callable is called as a run would. Each problem is at its key, so it
prints as ``file:line: model.class_path: ...`` like every other config error.
"""

from __future__ import annotations

import copy
import re
import warnings
from typing import TYPE_CHECKING, Any

from raycomp.base.errors import one_line
from raycomp.config.messages import KeyPath, Problem

if TYPE_CHECKING:
    from raycomp.config.schema import ExperimentConfig

_UNEXPECTED = re.compile(r"unexpected keyword argument '(\w+)'")


def user_code_problems(config: ExperimentConfig) -> list[Problem]:
    """What calling ``model.class_path`` and ``data.class_path`` shows wrong (nothing for built-in names)."""
    problems: list[Problem] = []
    if config.model.class_path is not None:
        problems += _model_problems(config)
    if config.data.class_path is not None:
        problems += _data_problems(config)
    return problems


def _model_problems(config: ExperimentConfig) -> list[Problem]:
    model = config.model
    try:
        _build_model(config)
    except Exception as error:
        return [_call_problem("model", str(model.class_path), bool(model.init_args), error)]
    problems: list[Problem] = []
    for name, algorithm in zip(config.algorithms, config.build_algorithms(), strict=True):
        if type(algorithm).required_on_load() or type(algorithm).__name__ == "ChannelsLast":
            refusal = _surgery_refusal(config, algorithm)
            if refusal:
                problems.append((("algorithms", name), refusal))
    return problems


def _build_model(config: ExperimentConfig, meta: bool = True) -> Any:
    """The user's model, on the ``meta`` device when it builds there (no memory), else on the CPU."""
    import torch

    from raycomp.models import build_user_model

    model = config.model
    if meta:
        try:
            with torch.device("meta"):
                return build_user_model(str(model.class_path), model.init_args)
        except TypeError:  # a wrong argument or return type: the same on any device
            raise
        except Exception:  # some modules cannot be built without real tensors
            pass
    return build_user_model(str(model.class_path), model.init_args)


def _surgery_refusal(config: ExperimentConfig, algorithm: Any) -> str | None:
    """Why ``algorithm``'s model surgery cannot apply to the user's model (None: it finds its targets).

    The surgery runs at INIT on a fresh copy of the model, as in training; changing nothing (its warning)
    or failing is the refusal, so it is said before any run rather than warned in every trial's log. It is
    tried on the ``meta`` model first, and on a real one if it fails there (surgery reading values).
    """
    from raycomp.core import Engine, Event, Logger, State

    label = f"{type(algorithm).__name__} cannot apply to {config.model.class_path}"
    for meta in (True, False):
        model = _build_model(config, meta=meta)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                state = State(model, "1ep", algorithms=[copy.deepcopy(algorithm)])
                Engine(state, Logger()).run_event(Event.INIT)
            except Exception as error:
                if meta:
                    continue
                return f"{label}: {one_line(error)}"
        changed = [str(w.message).split(": ", 1)[-1] for w in caught if "changed no" in str(w.message)]
        if changed:
            return f"{label}: {changed[0]}"
        if type(algorithm).__name__ == "ChannelsLast" and not any(p.dim() == 4 for p in model.parameters()):
            return f"{label}: the model has no 4-D weights (convolutions) to store channels-last"
        return None
    return None


def _data_problems(config: ExperimentConfig) -> list[Problem]:
    from raycomp.data.user_data import call_user_data

    data = config.data
    try:
        call_user_data(str(data.class_path), data.init_args)
    except Exception as error:
        return [_call_problem("data", str(data.class_path), bool(data.init_args), error)]
    return []


def _call_problem(section: str, class_path: str, has_arguments: bool, error: Exception) -> Problem:
    """The problem at the key the error points to: an unknown argument's, else the call's arguments or path."""
    text = one_line(error, with_type=False)
    if isinstance(error, TypeError) and text.startswith(class_path + " returned"):
        return (section, "class_path"), text
    unexpected = _UNEXPECTED.search(text) if isinstance(error, TypeError) else None
    where: KeyPath = (section, "init_args", unexpected.group(1)) if unexpected else (section, "init_args")
    if not unexpected and not has_arguments:
        where = (section, "class_path")
    return where, f"calling {class_path} failed: {one_line(error)}"
