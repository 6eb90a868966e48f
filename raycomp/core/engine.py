"""The Engine: at each Event, run the matching algorithms in pass order, then the callbacks."""

from __future__ import annotations

import time
from collections import Counter

from raycomp.core.algorithm import Algorithm
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.passes import AlgorithmPass, default_passes
from raycomp.core.state import State
from raycomp.core.trace import Trace, TraceSummary


class Engine:
    """Two-way callbacks (Howard et al. 2020): algorithms change the State, callbacks watch it.

    Every algorithm considered at an event becomes a ``Trace``; those that ran are added to
    ``trace_summary`` (count, time and exit codes per algorithm and event) and the traces of the latest
    run of each event stay in ``last_traces``. Two instances of one algorithm class are an error: the
    passes order by class, and two SelectiveBackprops would each prune the batch.
    """

    def __init__(self, state: State, logger: Logger | None = None, passes: list[AlgorithmPass] | None = None):
        check_unique_algorithms(state.algorithms)
        self.state = state
        self.logger = logger if logger is not None else Logger()
        self.algorithm_passes: list[AlgorithmPass] = default_passes() if passes is None else list(passes)
        self.trace_summary: TraceSummary = state.trace_summary  # on the State, where callbacks can read it
        self.last_traces: dict[Event, list[Trace]] = {}

    def register_pass(self, algorithm_pass: AlgorithmPass, index: int | None = None) -> None:
        """Add a pass at the end, or at ``index`` (0 runs it before the default passes)."""
        if index is None:
            self.algorithm_passes.append(algorithm_pass)
        else:
            self.algorithm_passes.insert(index, algorithm_pass)

    def order(self, algorithms: list[Algorithm], event: Event) -> list[Algorithm]:
        for algorithm_pass in self.algorithm_passes:
            algorithms = algorithm_pass(algorithms, event)
        return list(algorithms)

    def run_event(self, event: Event) -> list[Trace]:
        """Run ``event``: algorithms (ordered), then callbacks; returns this event's traces."""
        traces = self._run_algorithms(event, self.state.algorithms) if self.state.algorithms else []
        for callback in self.state.callbacks:
            try:
                callback.run_event(event, self.state, self.logger)
            except Exception as error:
                error.add_note(f"raised by callback {type(callback).__name__} at event {event.value}")
                raise
        return traces

    def run_algorithms(self, event: Event, algorithms: list[Algorithm]) -> list[Trace]:
        """Run only ``algorithms`` at ``event`` (used to replay INIT for an algorithm added on load)."""
        return self._run_algorithms(event, algorithms)

    def _run_algorithms(self, event: Event, algorithms: list[Algorithm]) -> list[Trace]:
        matched = [a for a in algorithms if a.match(event, self.state)]
        traces = [Trace(type(a).__name__, event) for a in algorithms if a not in matched]
        for order, algorithm in enumerate(self.order(matched, event) if matched else []):
            start = time.perf_counter()
            try:
                exit_code = algorithm.apply(event, self.state, self.logger)
            except Exception as error:
                error.add_note(f"raised by algorithm {type(algorithm).__name__} at event {event.value}")
                raise
            trace = Trace(type(algorithm).__name__, event, exit_code, order, True, time.perf_counter() - start)
            self.trace_summary.add(trace)
            traces.append(trace)
        self.last_traces[event] = traces
        return traces


def check_unique_algorithms(algorithms: list[Algorithm]) -> None:
    counts = Counter(type(a).__name__ for a in algorithms)
    repeated = sorted(name for name, n in counts.items() if n > 1)
    if repeated:
        raise ValueError(
            f"Each algorithm may be given once, but got several {', '.join(repeated)}: "
            "merge their settings into one instance"
        )
