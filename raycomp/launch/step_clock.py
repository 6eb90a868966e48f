"""The training steps' own time: what a sweep's and a find's verdicts compare (``timing: steps``)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

import torch
import torch.distributed as dist


class StepClock:
    """The training steps' time, each step from BEFORE_DATALOADER to BATCH_END: loading, every algorithm's
    work at the batch's events, forward, backward and the optimizer, but no evaluation, checkpoint or
    result hand-off (those happen between steps and vary with the disk and the driver).

    On a GPU each step is timed by a pair of CUDA events on the device's stream, read later, so no step waits for
    the device to be timed: a step's time runs from when the GPU reached its start (at once if it was idle, after
    the step before if it was behind) to when it finished the step's last kernel. Its kernels are in its time, and
    the host and the GPU keep overlapping as they do without the clock (issue 58). Reading ``total_s`` waits for
    the steps still queued; the result callback reads it between steps, at evaluations and checkpoints.

    A step that takes more than ``SPIKE`` times the median of the last ``WINDOW`` steps counts at that
    cap: a transient stall (another process taking the core, a page-in, a garbage collection) is a spike
    of one step, while what a method changes (a cheaper backward, an extra forward) recurs every step and
    stays well under the cap. So the total is the steady-state step time times the number of steps,
    measured step by step. ``cpu_s`` is the CPU time of the steps' work over the same steps: on an idle
    core the two agree; a total well above it says the trial waited for the CPU (on a GPU, that the host
    waited for the device or the device for the host).

    Whose CPU time: with one torch thread (``scaling.cpus_per_worker: 1``) every step's work runs on the
    calling thread, so ``cpu_s`` is that thread's own (``time.thread_time``) and leaves out what the trial
    process's other threads do meanwhile: Ray's core worker (gRPC, metrics export, heartbeats), the MLflow
    client's batching and probes: their share follows the driver's and the store's load, not the method
    (small in the default sweep: the two clocks' noise floors differed by under a point, docs/benchmarks.md). With
    more torch threads the work runs on all of them, and under DDP gloo's threads do the gradients'
    all-reduce: then ``cpu_s`` is the process's (``time.process_time``).
    """

    WINDOW = 50
    SPIKE = 3.0
    LOOK_EVERY = 64  # GPU steps queued between looks (without waiting) for the finished ones: bounds the events held

    def __init__(self) -> None:
        self._counted_s = 0.0
        self.cpu_s = 0.0
        self.capped = 0  # steps counted at the cap
        self._cpu_clock: Callable[[], float] | None = None
        self._recent: list[float] = []
        self._began: tuple[float, float, tuple[torch.cuda.Event, torch.cuda.Stream] | None] | None = None
        self._queued: deque[tuple[torch.cuda.Event, torch.cuda.Event]] = deque()  # GPU steps not yet counted

    @property
    def total_s(self) -> float:
        """The counted steps' seconds; on a GPU, waits for the steps still queued there first."""
        self._count_finished(wait=True)
        return self._counted_s

    @total_s.setter
    def total_s(self, seconds: float) -> None:  # restored from a checkpoint
        self._counted_s = seconds

    @property
    def cpu_clock(self) -> Callable[[], float]:
        """The step work's CPU clock, chosen at the first step (after the worker set torch's threads)."""
        if self._cpu_clock is None:
            alone = torch.get_num_threads() == 1 and not (dist.is_available() and dist.is_initialized())
            self._cpu_clock = time.thread_time if alone else time.process_time
        return self._cpu_clock

    def start(self, device: torch.device | None = None) -> None:
        """A step begins; on a CUDA ``device``, timed by the device's current stream."""
        on_gpu = None
        if device is not None and device.type == "cuda":
            on_gpu = (torch.cuda.Event(enable_timing=True), torch.cuda.current_stream(device))
            on_gpu[0].record(on_gpu[1])
        self._began = (time.perf_counter(), self.cpu_clock(), on_gpu)

    def stop(self) -> None:
        if self._began is None:
            return
        wall, cpu, on_gpu = self._began
        self._began = None
        self.cpu_s += self.cpu_clock() - cpu
        if on_gpu is None:
            self._counted_s += self.add(time.perf_counter() - wall)
            return
        start, stream = on_gpu
        end = torch.cuda.Event(enable_timing=True)
        end.record(stream)
        self._queued.append((start, end))
        if len(self._queued) >= self.LOOK_EVERY:
            self._count_finished(wait=False)

    def add(self, seconds: float) -> float:
        """The step's time as counted (capped against the recent median), and remembers it."""
        counted = seconds
        if len(self._recent) >= 5:
            cap = self.SPIKE * sorted(self._recent)[len(self._recent) // 2]
            if seconds > cap:
                counted, self.capped = cap, self.capped + 1
        self._recent = [*self._recent[-(self.WINDOW - 1) :], seconds]
        return counted

    def _count_finished(self, wait: bool) -> None:
        """Counts the queued GPU steps the device has finished, in order (all of them, waiting, with ``wait``)."""
        if wait and self._queued:
            self._queued[-1][1].synchronize()
        while self._queued and self._queued[0][1].query():
            start, end = self._queued.popleft()
            self._counted_s += self.add(start.elapsed_time(end) / 1000)
