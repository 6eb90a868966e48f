"""``compile`` (issue 24) on the CPU with inductor: the compiled step trains as the eager one does.

Compiling takes tens of seconds on 2 cores, so these are in the slow lane and train a tiny CNN for 8 steps.
Inductor draws dropout masks and SelectiveBackprop's draws with its own generator; ``fallback_random`` makes it use
eager's, so the two runs see the same masks and draws and their losses agree to float rounding.
"""

import pytest
import torch
from helpers import tiny_loader, tiny_model

from raycomp import Callback, Trainer
from raycomp.algorithms import SelectiveBackprop


class Losses(Callback):
    """Each step's loss, and how many graphs dynamo had compiled by then."""

    def __init__(self):
        self.losses = []
        self.graphs = []

    def batch_end(self, state, logger):
        self.losses.append(float(state.loss))
        self.graphs.append(torch._dynamo.utils.counters["stats"]["unique_graphs"])


def fit(compile, with_sb):
    # SB on every other batch (interrupt=2): it switches on and off four times in the 8 steps
    algorithms = [SelectiveBackprop(start=0, end=1, keep=0.5, scale_factor=0.5, interrupt=2)] if with_sb else []
    losses = Losses()
    trainer = Trainer(
        tiny_model(),
        tiny_loader(n=64, batch_size=16),
        "8ba",
        algorithms=algorithms,
        callbacks=[losses],
        seed=0,
        compile=compile,
        progress_bar=False,
    )
    trainer.fit()
    return trainer, losses


@pytest.mark.slow
@pytest.mark.measured
@pytest.mark.parametrize("with_sb", [False, True], ids=["baseline", "selective_backprop"])
def test_compiled_steps_reach_the_eager_losses(with_sb):
    torch._dynamo.reset()
    _, eager = fit(False, with_sb)
    torch._dynamo.utils.counters.clear()
    with torch._inductor.config.patch(fallback_random=True):
        compiled_trainer, compiled = fit(True, with_sb)
    # Compiled against eager, 8 steps, SB every other batch (issue 58): at most 1.2e-7 (baseline) and 5.4e-7 (SB)
    # apart over seeds 0-2 x kernels default and AVX2 (this VM has no AVX-512; with 4 steps of SB always on, issue 29
    # measured 2.8e-7 there too); rel=1e-4 is 185 times the largest.
    assert compiled.losses == pytest.approx(eager.losses, rel=1e-4), (eager.losses, compiled.losses)
    assert isinstance(compiled_trainer.train_model, torch._dynamo.eval_frame.OptimizedModule)
    # Issue 58: each step's graphs are compiled once. SB's selection (scoring forward, ranks, draw, gather) is one
    # graph without breaks, and its step on the kept rows one more: switching SB on and off recompiles nothing.
    assert not torch._dynamo.utils.counters["graph_break"], dict(torch._dynamo.utils.counters["graph_break"])
    assert compiled.graphs[1] == compiled.graphs[-1] == (3 if with_sb else 1), compiled.graphs
    if with_sb:  # the selection prunes to int(keep * N) = 8 of 16
        assert compiled_trainer.state.algorithms[0].last_num_kept == 8
