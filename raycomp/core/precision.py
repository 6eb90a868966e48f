"""Numerical precision: fp32, or automatic mixed precision in bf16 or fp16 (torch.autocast).

``"amp"`` (Composer's name) picks the best AMP the device has: bf16 on the CPU and on GPUs that support it
(fp32's range, no loss scaling), else fp16 with a GradScaler.
"""

from __future__ import annotations

import contextlib
from enum import Enum

import torch

AMP = "amp"


class Precision(Enum):
    FP32 = "fp32"
    AMP_BF16 = "amp_bf16"
    AMP_FP16 = "amp_fp16"

    @classmethod
    def parse(cls, value: str | Precision, device: torch.device | str = "cpu") -> Precision:
        """``value`` as a Precision; ``"amp"`` becomes the best one for ``device``."""
        if value == AMP:
            return best_amp(torch.device(device))
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(repr(p) for p in ["fp32", AMP, "amp_bf16", "amp_fp16"])
            raise ValueError(f"Unknown precision {value!r}: expected one of {choices}") from None


def best_amp(device: torch.device) -> Precision:
    """bf16 where the device computes in it (CPUs; CUDA GPUs from Ampere on), else fp16."""
    if device.type != "cuda" or torch.version.hip:
        return Precision.AMP_BF16
    native_bf16 = torch.cuda.get_device_properties(device).major >= 8  # emulated bf16 is slower than fp16
    return Precision.AMP_BF16 if native_bf16 else Precision.AMP_FP16


def autocast(precision: Precision, device: torch.device) -> contextlib.AbstractContextManager:
    """The context a forward pass runs in; fp32 needs none."""
    if precision is Precision.FP32:
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision is Precision.AMP_BF16 else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


def make_grad_scaler(precision: Precision, device: torch.device) -> torch.amp.GradScaler | None:
    """fp16 gradients underflow without loss scaling; bf16 has fp32's range and needs none."""
    return torch.amp.GradScaler(device.type) if precision is Precision.AMP_FP16 else None
