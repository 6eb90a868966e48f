"""``torch.compile`` as the Trainer and the algorithms with forward passes of their own use it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

COMPILE_DEFAULT = "default"
RECOMPILE_LIMIT = 32
COMPILE_MODES: tuple[str, ...] = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile_mode(compile: bool | str) -> str | None:
    """The torch.compile mode a ``compile`` option asks for: None for off, ``"default"`` for ``True``."""
    if compile is False or compile is None:
        return None
    return COMPILE_DEFAULT if compile is True else str(compile)


def compile_model(model: torch.nn.Module | Callable[..., Any], mode: str) -> Any:
    """``torch.compile`` with static shapes: each batch shape (a full batch, SelectiveBackprop's
    ``int(keep * N)``) gets its own specialised graph, where dynamic shapes would trade them for one slower one.
    A model or a function (SelectiveBackprop's selection).
    """
    # A run holds a few graphs per training shape (SelectiveBackprop: full and kept batch, the selection pass;
    # SeqLengthWarmup: one per bucket): more than dynamo's default of 8 before it falls back to eager.
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, RECOMPILE_LIMIT)
    return torch.compile(model, mode=mode, dynamic=False)
