"""Does a checkpoint fit a config's run? Checked on the driver, before any run, process or Ray starts.

The Trainer loads strictly, so a checkpoint of another model fails anyway, but only once the run has
started (its MLflow run open, its data loaded), and as torch's many-line ``load_state_dict`` error.
Here the config's model is built with its model surgery (the ``required_on_load`` algorithms, plus
those ``--recreate-required`` would re-create) and its parameter names and shapes are compared with
the checkpoint's: one line listing the first mismatches.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from raycomp.algorithms.registry import algorithm_class, build_algorithm
from raycomp.base.errors import CheckpointError
from raycomp.config import ExperimentConfig
from raycomp.config.recipe import build_model_for
from raycomp.core import Engine, Event, Logger, State
from raycomp.loop import checkpoint

_SHOWN = 3  # mismatches listed before "and N more"


def check_fits(config: ExperimentConfig, path: Path, recreate_required: bool = False) -> None:
    """Raises a ``CheckpointError`` naming ``path`` unless it loads into ``config``'s run.

    It must read as a checkpoint, hold every ``required_on_load`` algorithm the run lacks only if
    ``recreate_required``, and match the model's parameter and buffer names and shapes.
    """
    payload = checkpoint.load_checkpoint(path)
    present = [algorithm_class(name) for name in config.algorithms]
    missing = checkpoint.missing_required(payload, present)
    if missing and not recreate_required:
        raise CheckpointError(f"{path}: {checkpoint.refusal(missing, '--recreate-required')}")
    mismatches = model_mismatches(expected_model_state(config, payload), payload["state"]["model"])
    if mismatches:
        shown = "; ".join(mismatches[:_SHOWN])
        more = f"; and {len(mismatches) - _SHOWN} more" if len(mismatches) > _SHOWN else ""
        model = config.model
        named = (
            f"{model.class_path} {model.init_args}"
            if model.class_path
            else f"{model.name} (num_classes {model.num_classes})"
        )
        raise CheckpointError(f"{path} does not fit model {named}: {shown}{more}")


def expected_model_state(config: ExperimentConfig, payload: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """The state dict the run's model will have when the checkpoint loads: built, then its surgery at INIT.

    Only surgery changes names and shapes, so only ``required_on_load`` algorithms run their INIT here
    (others, such as RandAugment, need the data loader); the checkpoint's own re-created ones follow.
    """
    model = build_model_for(config)
    surgery = [
        build_algorithm(name, arguments)
        for name, arguments in config.algorithms.items()
        if algorithm_class(name).required_on_load()
    ]
    state = State(model, "1ep", algorithms=surgery)
    engine = Engine(state, Logger())
    engine.run_event(Event.INIT)
    checkpoint.restore_required_algorithms(payload, state, engine, recreate=True)
    return state.model.state_dict()


def model_mismatches(expected: Mapping[str, torch.Tensor], saved: Mapping[str, torch.Tensor]) -> list[str]:
    """Each name the two lack or whose shape differs, as ``name: checkpoint [..], model [..]``, in model order."""
    problems = []
    for name, tensor in expected.items():
        if name not in saved:
            problems.append(f"{name}: not in the checkpoint")
        elif tuple(saved[name].shape) != tuple(tensor.shape):
            problems.append(f"{name}: checkpoint {list(saved[name].shape)}, model {list(tensor.shape)}")
    problems += [f"{name}: in the checkpoint, not in the model" for name in saved if name not in expected]
    return problems
