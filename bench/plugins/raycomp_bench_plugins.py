"""A planted method for bench/proxy_misled.sh: one that helps only on short runs, so a proxy ranks it wrong.

``short_run_only`` trains the first ``FAST_STEPS`` steps of a run on half of each batch (fewer examples, less time)
and every later step pays a fixed extra ``SLOW_CPU_S`` of CPU work (a planted cost, as ``SlowDown`` in the tests).
On find_cnn's proxy (a quarter of 2 epochs of 16 batches: 8 steps) it is all gain; over the whole run its 24 later
steps cost far more than the 8 first saved. A real method like it is one whose gain fades with the run's length
(Kaddour et al. 2023): the find searches on the proxy, then Confirm at full length must catch it and fall back to
the proxy's next best. Registered through ``RAYCOMP_PLUGINS=raycomp_bench_plugins`` with this folder on
``PYTHONPATH``; its step counts are fixed constants, not arguments, so the proxy does not rescale them.
"""

from __future__ import annotations

import time

from raycomp.algorithms.registry import register
from raycomp.core import Algorithm, Event, Logger, State

FAST_STEPS = 8  # find_cnn's proxy (0.25dur of 2ep x 16 batches) is all fast steps
SLOW_CPU_S = 0.25  # a few of find_cnn's baseline steps on one core


class ShortRunOnly(Algorithm):
    """Half of each batch for the first ``FAST_STEPS`` steps, then ``SLOW_CPU_S`` of busy CPU per step."""

    def match(self, event: Event, state: State) -> bool:
        return event in (Event.AFTER_DATALOADER, Event.BATCH_START)

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        if state.step < FAST_STEPS:
            if event is Event.AFTER_DATALOADER:
                input, target = state.batch_pair
                half = max(1, input.shape[0] // 2)
                state.batch = type(state.batch)((input[:half], target[:half]))
            return
        if event is Event.BATCH_START:
            until = time.process_time() + SLOW_CPU_S  # CPU time: find_cnn's verdicts time the steps' CPU
            while time.process_time() < until:
                pass


register("short_run_only", ShortRunOnly)
