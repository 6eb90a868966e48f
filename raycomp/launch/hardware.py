"""The hardware a trial measures its times on, recorded with every report for the speed-up report."""

from __future__ import annotations

import functools
import os
import platform

import torch


def machine(device: torch.device) -> str:
    """CPU model, cores, torch threads, and the GPU if any."""
    text = f"{cpu_model()}, {os.cpu_count()} cores, torch threads: {torch.get_num_threads()}"
    if device.type == "cuda":
        text += f"; GPU {torch.cuda.get_device_name(device)}"
    return text


@functools.cache
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            return next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"
