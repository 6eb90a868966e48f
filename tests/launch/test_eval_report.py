"""The training steps' clock (raycomp.launch.eval_report.StepClock): what verdicts compare, measured per step."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from raycomp.launch.eval_report import StepClock


def test_a_transient_stall_counts_at_three_times_the_recent_median():
    clock = StepClock()
    counted = [clock.add(0.1) for _ in range(20)] + [clock.add(5.0)] + [clock.add(0.1) for _ in range(5)]
    assert sum(counted) == pytest.approx(25 * 0.1 + 0.3)
    assert clock.capped == 1


def test_a_recurring_pattern_is_kept_whole():
    """SelectiveBackprop alternates cheap and full steps: a pattern, not spikes, so nothing is capped."""
    clock = StepClock()
    steps = [0.06, 0.1] * 40
    assert sum(clock.add(s) for s in steps) == pytest.approx(sum(steps))
    assert clock.capped == 0


def test_a_step_is_timed_from_before_the_dataloader_to_the_batch_end():
    clock = StepClock()
    clock.stop()  # no step started: nothing counted
    began = time.perf_counter()
    clock.start()
    time.sleep(0.02)
    clock.stop()
    seen = time.perf_counter() - began
    # No less than the step's sleep, no more than this test saw around start() and stop(): a fixed bound in seconds
    # (0.5) tested the machine's load rather than the clock (issue 29).
    assert 0.02 <= clock.total_s <= seen and 0 <= clock.cpu_s < clock.total_s


@pytest.mark.measured
def test_with_one_torch_thread_the_cpu_time_is_the_stepping_threads_own():
    """Another thread of the trial process (Ray's core worker, the MLflow client) burning CPU during a step
    is not the step's work: with one torch thread the clock is the calling thread's."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        clock = StepClock()
        done = threading.Event()

        def burn() -> None:
            while not done.is_set():
                sum(range(1000))

        neighbour = threading.Thread(target=burn)
        clock.start()
        neighbour.start()
        time.sleep(0.3)
        done.set()
        neighbour.join()
        clock.stop()
        assert clock.cpu_clock is time.thread_time
        # The sleeping thread's own CPU: 0.0004-0.0006 s at load 4-5 (issue 29), against the neighbour's 0.3 s that
        # the process's clock would count; 0.05 is 80 times it, and load does not add CPU time to a sleeping thread.
        assert clock.cpu_s < 0.05 < clock.total_s
        torch.set_num_threads(2)
        assert StepClock().cpu_clock is time.process_time  # intra-op threads do the work: the whole process
    finally:
        torch.set_num_threads(threads)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_a_gpu_a_steps_time_includes_its_kernels_with_no_logger():
    """Issue 58: with no logger (tracking off) nothing read the loss before the clock stopped, and the step's
    kernels, queued by then but not run, fell outside its time. A step here is 1.6 TFLOP of fp32 matrix products
    (tens of ms on a GPU) for a few ms of the host's work, so the clock must hold most of the fit's wall time; without
    the wait it would hold little more than the host's share (estimated, not yet run on a card)."""
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    from raycomp import Trainer
    from raycomp.launch.eval_report import EvalReportCallback
    from raycomp.models import ClassifierModel

    torch.manual_seed(0)
    width = 4096
    data = TensorDataset(torch.randn(1024 * 4, width), torch.randint(0, width, (1024 * 4,)))

    def fit(batches: int) -> tuple[float, float]:
        report = EvalReportCallback([], "1ep")
        layers = [module for _ in range(16) for module in (nn.Linear(width, width), nn.ReLU())]
        trainer = Trainer(
            ClassifierModel(nn.Sequential(*layers)),
            DataLoader(data, batch_size=1024),
            f"{batches}ba",
            callbacks=[report],
            device="cuda",
            seed=0,
        )
        torch.cuda.synchronize()
        began = time.perf_counter()
        trainer.fit()
        torch.cuda.synchronize()
        return report.step_clock.total_s, time.perf_counter() - began

    fit(2)  # cuBLAS's handles and workspaces
    steps_s, wall_s = fit(12)
    assert 0.6 * wall_s < steps_s <= wall_s, (steps_s, wall_s)
