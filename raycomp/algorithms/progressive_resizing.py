"""ProgressiveResizing (fastai; Composer): train early on shrunken images, then grow them to full size.

Early in training the network learns coarse features that survive downsampling, and a batch at scale
``s`` costs about ``s**2`` of a full one. The scale stays at ``initial_scale`` until ``delay_fraction`` of
training, grows linearly to 1 at ``1 - finetune_fraction``, and the rest is trained at full size, so the
model ends adapted to the resolution it is evaluated at. Widths are pinned to multiples of
``size_increment`` (hardware-friendly shapes) and the height follows with the same factor.

Runs on AFTER_DATALOADER, as Composer's. The passes put SelectiveBackprop before it there: SB ranks the
full-size batch (downsampled only for its own selection forward) and prunes it, then this resizes what SB
kept. Evaluation is untouched and runs at full size, so the model needs a size-agnostic head (global
pooling). ``resize_batch`` is the pure function; ``mode='resize'`` is nearest-neighbour interpolation, as
Composer's code (its docstring says bilinear), and ``'crop'`` a random crop shared by the whole batch.

BatchNorm running statistics follow the last ~10 batches, so after the full-size finetune phase they describe
full-size images; evaluated against statistics recomputed on full batches, no bias beyond seed noise was found
(docs/methods/progressive_resizing.md), so unlike SelectiveBackprop nothing is recomputed. The scale moves with
every batch (``State.get_elapsed_duration``), not once per epoch as in Composer.

Fixed against Composer: ``delay_fraction + finetune_fraction == 1`` jumps to full size at ``delay_fraction``
instead of dividing by zero; sizes never round to 0; a crop may start at the last valid offset.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, get_args

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import nn

from raycomp.algorithms._workload import batch_pair, resized_refusal
from raycomp.algorithms.arguments import checked_arguments
from raycomp.core.algorithm import Algorithm, Inapplicable
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State

Mode = Literal["resize", "crop"]
_MODES: tuple[str, ...] = get_args(Mode)


def resize_batch(
    input: torch.Tensor,
    target: torch.Tensor,
    scale_factor: float,
    mode: str = "resize",
    resize_targets: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Shrink the spatial dims (after N and C) of ``input``, and of ``target`` with ``resize_targets``.

    Each spatial size ``n`` becomes ``max(1, floor(n * scale_factor))``; ``scale_factor >= 1`` returns the
    batch unchanged. Targets are resized only when asked (dense targets: ``(N, H, W)`` class indices or
    ``(N, C, H, W)``); with ``'crop'`` they are cut at the same relative place as the inputs.
    """
    if mode not in _MODES:
        raise ValueError(f"mode must be 'resize' or 'crop', got {mode!r}")
    if input.dim() < 3:
        raise ValueError(f"Resizing needs inputs of shape (N, C, ...spatial), got {tuple(input.shape)}")
    if resize_targets and target.dim() < 3:
        raise ValueError(f"resize_targets needs dense targets of shape (N, ..., H, W), got {tuple(target.shape)}")
    if scale_factor <= 0:
        raise ValueError(f"scale_factor must be > 0, got {scale_factor}")
    if scale_factor >= 1:
        return input, target
    index_targets = resize_targets and not target.is_floating_point()
    dense = target.unsqueeze(1).float() if index_targets else target
    if mode == "resize":
        new_input = _resize(input, scale_factor)
        new_target = _resize(dense, scale_factor) if resize_targets else target
    else:
        sizes = [_scaled(n, scale_factor) for n in input.shape[2:]]
        starts = [int(torch.randint(0, n - c + 1, ())) for n, c in zip(input.shape[2:], sizes, strict=True)]
        new_input = _crop(input, starts, sizes)
        if resize_targets:
            target_sizes = [_scaled(n, scale_factor) for n in dense.shape[2:]]
            ratios = [m / n for m, n in zip(dense.shape[2:], input.shape[2:], strict=True)]
            target_starts = [int(s * r) for s, r in zip(starts, ratios, strict=True)]
            new_target = _crop(dense, target_starts, target_sizes)
        else:
            new_target = target
    if index_targets:
        new_target = new_target.squeeze(1).to(target.dtype)
    return new_input, new_target


def _scaled(size: int, scale_factor: float) -> int:
    # the epsilon keeps 12 / 32 * 32 at 12, not 11.999 -> 11
    return max(1, math.floor(size * scale_factor + 1e-6))


def _resize(tensor: torch.Tensor, scale_factor: float) -> torch.Tensor:
    return F.interpolate(tensor, size=[_scaled(n, scale_factor) for n in tensor.shape[2:]], mode="nearest")


def _crop(tensor: torch.Tensor, starts: list[int], sizes: list[int]) -> torch.Tensor:
    for dim, (start, size) in enumerate(zip(starts, sizes, strict=True), start=2):
        tensor = tensor.narrow(dim, start, size)
    return tensor


def delay_and_finetune_fit(arguments: Any) -> None:
    """ProgressiveResizing's delay and full-size finetuning fit in one run."""
    if arguments.delay_fraction + arguments.finetune_fraction > 1:
        raise ValueError(
            "ProgressiveResizing needs delay_fraction + finetune_fraction <= 1, "
            f"got delay_fraction={arguments.delay_fraction}, finetune_fraction={arguments.finetune_fraction}"
        )


class ProgressiveResizing(Algorithm):
    """Resizes each training batch on AFTER_DATALOADER by a scale that grows from ``initial_scale`` to 1.

    ``mode`` is ``'resize'`` (interpolate) or ``'crop'`` (random crop). The scale is ``initial_scale`` until
    ``delay_fraction`` of training, then rises linearly to reach 1 with ``finetune_fraction`` of training
    left. ``size_increment`` pins the width to its multiples; ``resize_targets`` resizes dense targets too
    (segmentation). Logs ``progressive_resizing/{height,width,scale_factor}``.

    Not with ``compile``: the image size changes with almost every step, each a recompilation.
    """

    workload_arguments: ClassVar[frozenset[str] | None] = frozenset(
        {"mode", "initial_scale", "size_increment", "resize_targets"}
    )

    # the values a recipe search (raycomp find) tries beside the defaults
    tuned_arguments: ClassVar[Mapping[str, tuple[Any, ...]]] = {
        "initial_scale": (0.5, 0.75),
        "delay_fraction": (0.3, 0.5),
    }

    @checked_arguments(rules=(delay_and_finetune_fit,))
    def __init__(
        self,
        mode: Mode = "resize",
        initial_scale: Annotated[float, Field(gt=0, le=1)] = 0.5,
        finetune_fraction: Annotated[float, Field(ge=0, le=1)] = 0.2,
        delay_fraction: Annotated[float, Field(ge=0, le=1)] = 0.5,
        size_increment: Annotated[int, Field(ge=1)] = 4,
        resize_targets: bool = False,
    ) -> None:
        self.mode = mode
        self.initial_scale = initial_scale
        self.finetune_fraction = finetune_fraction
        self.delay_fraction = delay_fraction
        self.size_increment = size_increment
        self.resize_targets = resize_targets

    def scale_at(self, elapsed: float) -> float:
        """The nominal scale after ``elapsed`` (a fraction) of training, before pinning to ``size_increment``."""
        ramp = 1.0 - self.finetune_fraction - self.delay_fraction
        if elapsed < self.delay_fraction:
            progress = 0.0
        elif ramp <= 0:
            progress = 1.0
        else:
            progress = min((elapsed - self.delay_fraction) / ramp, 1.0)
        return self.initial_scale + (1.0 - self.initial_scale) * progress

    @classmethod
    def compiles_with(cls, arguments: Mapping[str, Any]) -> bool:
        return False

    def match(self, event: Event, state: State) -> bool:
        return event is Event.AFTER_DATALOADER

    def resized(self, input: torch.Tensor, target: torch.Tensor, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
        """The batch at ``scale``, its width pinned to a multiple of ``size_increment``."""
        width = input.shape[-1]
        pinned_width = max(self.size_increment, round(width * scale / self.size_increment) * self.size_increment)
        return resize_batch(input, target, pinned_width / width, self.mode, self.resize_targets)

    def check_workload(self, model: nn.Module, batch: Any) -> Inapplicable | None:
        """Training starts at ``initial_scale``: the inputs must be images, and the model must take them at that
        size (a model built for one input size, such as a ViT's patch grid, cannot)."""
        pair = batch_pair(batch)
        target = pair[1] if pair else None
        fix = "remove progressive_resizing (it needs images and a model that takes any image size)"
        refusal = resized_refusal(model, batch, lambda x: self.resized(x, target, self.initial_scale)[0], fix)
        return Inapplicable(refusal) if refusal else None

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        input, target = state.batch_pair
        scale = self.scale_at(state.get_elapsed_duration().value)
        new_input, new_target = self.resized(input, target, scale)
        state.batch = type(state.batch)((new_input, new_target))
        logger.log_metrics(
            {
                "progressive_resizing/height": new_input.shape[-2],
                "progressive_resizing/width": new_input.shape[-1],
                "progressive_resizing/scale_factor": scale,
            },
            state.step,
        )
