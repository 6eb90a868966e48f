"""The Engine: at each Event, run the matching algorithms in pass order, then the callbacks."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

from raycomp.core.algorithm import Algorithm, class_path
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

    ``passes`` are added to the default passes, as in Composer: each runs after them, or at the index given
    as ``(pass, index)``. To drop a default pass, remove it from ``algorithm_passes``.
    """

    def __init__(
        self,
        state: State,
        logger: Logger | None = None,
        passes: Sequence[AlgorithmPass | tuple[AlgorithmPass, int]] | None = None,
    ):
        check_unique_algorithms(state.algorithms)
        self.state = state
        self.logger = logger if logger is not None else Logger()
        self.algorithm_passes: list[AlgorithmPass] = default_passes()
        for algorithm_pass in passes or ():
            if isinstance(algorithm_pass, tuple):
                self.register_pass(*algorithm_pass)
            else:
                self.register_pass(algorithm_pass)
        self.trace_summary: TraceSummary = state.trace_summary  # on the State, where callbacks can read it
        self.last_traces: dict[Event, list[Trace]] = {}

    def register_pass(self, algorithm_pass: AlgorithmPass, index: int = -1) -> None:
        """Insert a pass at ``index``; -1 (Composer's default) appends it, 0 runs it before the default passes."""
        self.algorithm_passes.insert(len(self.algorithm_passes) if index == -1 else index, algorithm_pass)

    def order(self, algorithms: list[Algorithm], event: Event) -> list[Algorithm]:
        for algorithm_pass in self.algorithm_passes:
            algorithms = algorithm_pass(algorithms, event)
        return list(algorithms)

    def run_event(self, event: Event) -> list[Trace]:
        """Run ``event``: algorithms (ordered), then callbacks; returns this event's traces."""
        traces = self.run_algorithms(event, self.state.algorithms) if self.state.algorithms else []
        for callback in self.state.callbacks:
            try:
                callback.run_event(event, self.state, self.logger)
            except Exception as error:
                error.add_note(f"raised by callback {type(callback).__name__} at event {event.value}")
                raise
        return traces

    def run_algorithms(self, event: Event, algorithms: list[Algorithm]) -> list[Trace]:
        """Run ``algorithms`` at ``event`` (all of the State's, or one added on load to replay its INIT)."""
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
    """One instance per class (two classes that share a name are two algorithms)."""
    counts = Counter(type(a) for a in algorithms)
    repeated = sorted(_name(cls, counts) for cls, n in counts.items() if n > 1)
    if repeated:
        raise ValueError(
            f"Each algorithm may be given once, but got several {', '.join(repeated)}: "
            "merge their settings into one instance"
        )


def _name(cls: type, classes: Counter) -> str:
    """The class name, or its import path where another class given shares the name."""
    namesakes = sum(other.__name__ == cls.__name__ for other in classes)
    return class_path(cls) if namesakes > 1 else cls.__name__
