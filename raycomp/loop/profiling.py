"""A ``torch.profiler`` trace of a few training batches, to see which kernels an algorithm adds.

``profile: {wait: 1, warmup: 1, active: 3}`` in an experiment adds ``TorchProfiler``: it skips ``wait``
batches, warms up for ``warmup`` (recorded, then dropped: the first steps carry one-off costs) and records
``active`` batches, then writes one Chrome trace (``chrome://tracing``, Perfetto, TensorBoard's profiler
plugin) into ``folder``. From ``FIT_START`` to ``FIT_END`` ``state.profiler`` is the running
``torch.profiler.profile`` (None without ``profile:``, as Composer's ``State.profiler``), so an algorithm or
callback can mark its own spans with ``torch.profiler.record_function``; ``trace_files`` lists what it
wrote, which the MLflow callback attaches to the run at ``FIT_END``.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import torch

from raycomp.base.atomic_files import atomic_write_bytes
from raycomp.base.scratch import scratch_folder
from raycomp.core import Callback, Logger, State


class TorchProfiler(Callback):
    """Profiles batches ``wait + 1 .. wait + warmup + active`` of training; one trace file per rank."""

    def __init__(self, folder: str | Path, *, wait: int = 1, warmup: int = 1, active: int = 3) -> None:
        self.folder = Path(folder)
        self.schedule = torch.profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=1)
        self.trace_files: list[Path] = []
        self._profile: torch.profiler.profile | None = None
        self._rank = 0

    def fit_start(self, state: State, logger: Logger) -> None:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if state.device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self._rank = state.rank
        self._profile = torch.profiler.profile(
            activities=activities, schedule=self.schedule, on_trace_ready=self._write, record_shapes=True
        )
        self._profile.start()
        state.profiler = self._profile

    def batch_end(self, state: State, logger: Logger) -> None:
        if self._profile is not None:
            self._profile.step()

    def fit_end(self, state: State, logger: Logger) -> None:
        """Stops recording (a run shorter than the schedule writes what it recorded) and clears ``state.profiler``."""
        if self._profile is not None:
            self._profile.stop()
            self._profile = None
        state.profiler = None

    def _write(self, profile: torch.profiler.profile) -> None:
        """The trace, written under a staging name and renamed whole (a crash leaves no half trace)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"trace-rank{self._rank}-{uuid.uuid4().hex[:8]}.pt.trace.json"
        with scratch_folder("raycomp-trace-") as scratch:  # torch writes the trace to a path of its own
            profile.export_chrome_trace(str(scratch / path.name))
            atomic_write_bytes(path, (scratch / path.name).read_bytes())
        self.trace_files.append(path)
