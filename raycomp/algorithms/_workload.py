"""What the algorithms' ``check_workload`` share: the batch's input, a forward that reports rather than raises,
downsampled batches tried on the model, and model surgery tried on a copy of it.

Every check runs the real model on a real batch of two (``Algorithm.check_workload``): a fixed-input-size model
(a ViT built for 32x32 images) is found by running it on the smaller copy, not by guessing from its class.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from raycomp.algorithms.warnings import NoEffectWarning
from raycomp.base.errors import one_line
from raycomp.core.algorithm import Algorithm, Inapplicable
from raycomp.core.engine import Engine
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State

_IMAGE_DIMS = (3, 4, 5)  # (N, C, L), (N, C, H, W), (N, C, D, H, W): what interpolation resizes


def batch_pair(batch: Any) -> tuple[Any, Any] | None:
    """The ``(input, target)`` of a pair batch, as ``State.batch_pair`` reads it; None for other batches."""
    if isinstance(batch, list | tuple) and len(batch) == 2:
        return batch[0], batch[1]
    return None


def shape_of(value: Any) -> str:
    """``a 2-D float32 tensor of shape (2, 2)`` (or the type's name): what a refusal says the input is."""
    if isinstance(value, torch.Tensor):
        return f"a {value.dim()}-D {str(value.dtype).removeprefix('torch.')} tensor of shape {tuple(value.shape)}"
    return f"a {type(value).__name__}"


def forward_failure(model: nn.Module, batch: Any) -> str | None:
    """The error ``model(batch)`` raises, as one line; None when it runs."""
    try:
        model(batch)
    except Exception as error:
        return one_line(error)
    return None


def resized_refusal(
    model: nn.Module, batch: Any, resize: Callable[[torch.Tensor], torch.Tensor], fix: str
) -> str | None:
    """Why the model cannot train on ``resize``d copies of the batch's images (None: it can).

    The input must be an image batch (a 3-, 4- or 5-D float tensor), and the model must run on the resized copy:
    a model built for one input size (a ViT's patch grid, a flattening linear layer) raises there.
    """
    pair = batch_pair(batch)
    if pair is None:
        return f"the batch is {shape_of(batch)}, not an (input, target) pair of images: {fix}"
    input, target = pair
    if not isinstance(input, torch.Tensor) or input.dim() not in _IMAGE_DIMS or not input.is_floating_point():
        return f"the input is {shape_of(input)}; downsampling needs images (3-, 4- or 5-D float tensors): {fix}"
    smaller = resize(input)
    failure = forward_failure(model, type(batch)((smaller, target)))
    if failure:
        return f"the model cannot take the {tuple(smaller.shape)} inputs downsampling makes ({failure}): {fix}"
    return None


def surgery_refusal(algorithm: Algorithm, model: nn.Module, batch: Any) -> Inapplicable | None:
    """Why ``algorithm``'s INIT surgery cannot apply: it fails, changes nothing (``NoEffectWarning``), or leaves a
    model that fails on the batch. Tried on a copy of the model, with a copy of the algorithm, as a run applies it."""
    changed = copy.deepcopy(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            state = State(changed, "1ep", algorithms=[copy.deepcopy(algorithm)])
            Engine(state, Logger()).run_event(Event.INIT)
        except Exception as error:
            return Inapplicable(one_line(error))
    no_effect = [w.message for w in caught if isinstance(w.message, NoEffectWarning)]
    if no_effect:
        return Inapplicable(no_effect[0].reason)
    failure = forward_failure(changed, batch)
    return Inapplicable(f"the model it changes fails on a batch of the data: {failure}") if failure else None
