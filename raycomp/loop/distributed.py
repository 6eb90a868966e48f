"""What the Trainer does across ranks: its place in the process group, its device, and the collectives.

Every function here is a no-op or the identity for a single process, so the loop reads the same with
and without a process group; none runs at import time.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def rank_and_world_size() -> tuple[int, int]:
    """This process's rank and the number of ranks; (0, 1) without an initialised process group."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def resolve_device(device: str | torch.device) -> torch.device:
    """The device to train on, from ``"auto"``, ``"cpu"``, ``"gpu"`` (Composer's name for CUDA) or a torch device.

    ``"auto"`` and ``"gpu"`` take this rank's GPU (``LOCAL_RANK``, as torchrun and Ray Train set it); ``"auto"``
    falls back to the CPU, and asking for a GPU without CUDA is a ``ValueError`` naming the argument.
    """
    if device in ("auto", "gpu"):
        if torch.cuda.is_available():
            return torch.device("cuda", int(os.environ.get("LOCAL_RANK", torch.cuda.current_device())))
        if device == "gpu":
            raise ValueError("device='gpu' but CUDA is not available here: use device='cpu' or 'auto'")
        return torch.device("cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError:
        raise ValueError(
            f"device={device!r}: expected 'auto', 'cpu', 'gpu' or a torch device such as 'cuda:0'"
        ) from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={str(device)!r} but CUDA is not available here: use device='cpu' or 'auto'")
    return resolved


def wrap_in_ddp(
    model: torch.nn.Module, device: torch.device, world_size: int, find_unused_parameters: bool
) -> torch.nn.Module:
    """The module the training forward runs: the model itself, or DDP around it with more than one rank."""
    if world_size == 1:
        return model
    return DistributedDataParallel(
        model,
        device_ids=[device.index] if device.type == "cuda" else None,
        find_unused_parameters=find_unused_parameters,
    )


def any_rank(flag: bool, device: torch.device, world_size: int) -> bool:
    """True on every rank if it is True on any: a rank that stopped alone would hang the others."""
    if world_size == 1:
        return flag
    tensor = torch.tensor([float(flag)], device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return bool(tensor.item())


def sum_over_ranks(tensor: torch.Tensor, world_size: int) -> torch.Tensor:
    """``tensor`` summed over ranks, in place (evaluation totals, batch counts)."""
    if world_size > 1:
        dist.all_reduce(tensor)
    return tensor


def sum_counts(samples: int, tokens: int, device: torch.device, world_size: int) -> tuple[int, int]:
    """Samples and tokens summed over ranks, so every rank's timestamp counts the global batch."""
    if world_size == 1:
        return samples, tokens
    counts = sum_over_ranks(torch.tensor([samples, tokens], dtype=torch.int64, device=device), world_size)
    return int(counts[0]), int(counts[1])


def share_buffers(model: torch.nn.Module) -> None:
    """Give every rank rank 0's buffers (BatchNorm statistics) after each step.

    DDP copies them only at the start of its next forward, so without this each rank's own statistics
    drive what runs outside DDP (SelectiveBackprop's selection pass, evaluation), and a run restarted
    from rank 0's checkpoint would diverge from one that was never stopped. One collective per dtype.
    """
    by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}
    for buffer in model.buffers():
        by_dtype.setdefault(buffer.dtype, []).append(buffer)
    for buffers in by_dtype.values():
        flat = torch.cat([buffer.detach().reshape(-1) for buffer in buffers])
        dist.broadcast(flat, 0)
        offset = 0
        for buffer in buffers:
            buffer.detach().copy_(flat[offset : offset + buffer.numel()].view_as(buffer))
            offset += buffer.numel()
