"""Numerical precision: fp32, or automatic mixed precision in bf16 or fp16 (torch.autocast)."""

from __future__ import annotations

import contextlib
from enum import Enum

import torch


class Precision(Enum):
    FP32 = "fp32"
    AMP_BF16 = "amp_bf16"
    AMP_FP16 = "amp_fp16"

    @classmethod
    def parse(cls, value: str | Precision) -> Precision:
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(repr(p.value) for p in cls)
            raise ValueError(f"Unknown precision {value!r}: expected one of {choices}") from None


def autocast(precision: Precision, device: torch.device) -> contextlib.AbstractContextManager:
    """The context a forward pass runs in; fp32 needs none."""
    if precision is Precision.FP32:
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision is Precision.AMP_BF16 else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


def make_grad_scaler(precision: Precision, device: torch.device) -> torch.amp.GradScaler | None:
    """fp16 gradients underflow without loss scaling; bf16 has fp32's range and needs none."""
    return torch.amp.GradScaler(device.type) if precision is Precision.AMP_FP16 else None
