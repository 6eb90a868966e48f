"""Performance profiles (Dolan & Moré 2002) over workloads, as AlgoPerf scores training algorithms.

Each method has a time on each workload: its time to the target (``time_to_target``), infinite when it never
gets there or did not run there. Its ratio on a workload is that time over the best method's; its profile
rho(tau) is the fraction of workloads on which the ratio is at most tau: rho(1) is the share of workloads it
is the fastest on, rho(tau) for large tau the share it reaches the target on at all. AlgoPerf's score is the
area under the profile from 1 to ``tau_max``, divided by ``tau_max - 1`` (1: fastest everywhere).
Pure Python: the numbers come from the finds' and sweeps' files (``raycomp.report.profile_inputs``).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence

NEVER = math.inf
Curve = Sequence[tuple[float, float]]  # (time, metric) at each evaluation


def time_to_target(
    curves: Mapping[int, Curve], targets: Mapping[int, float], mode: str, tolerance: float = 0.0
) -> float:
    """The median over seeds of the time each seed's curve first reaches its seed's target (within ``tolerance``,
    on the worse side: the verdicts' equal metric); a seed that never does counts as infinite, so the median is
    finite only when more than half the seeds get there. Seeds without a target are left out; none left: never."""
    times = [
        _first_reaching(curve, targets[seed], mode, tolerance) for seed, curve in curves.items() if seed in targets
    ]
    return statistics.median(times) if times else NEVER


def _first_reaching(curve: Curve, target: float, mode: str, tolerance: float) -> float:
    for time, value in curve:
        if (value >= target - tolerance) if mode == "max" else (value <= target + tolerance):
            return time
    return NEVER


@dataclasses.dataclass(frozen=True)
class PerformanceProfile:
    """Every method's time on every workload (``NEVER`` where it did not reach the target or did not run)."""

    times: Mapping[str, Mapping[str, float]]  # method -> workload -> time
    methods: tuple[str, ...]
    workloads: tuple[str, ...]

    def best(self, workload: str) -> float:
        return min(self.times[method][workload] for method in self.methods)

    def ratio(self, method: str, workload: str) -> float:
        """The method's time over the best method's on ``workload``; infinite when it, or every method, never got
        to the target there."""
        time, best = self.times[method][workload], self.best(workload)
        if math.isinf(time) or math.isinf(best):
            return NEVER
        return time / best if best > 0 else 1.0 if time == 0 else NEVER

    def fraction_within(self, method: str, tau: float) -> float:
        """rho(tau): the share of workloads on which the method's time is within ``tau`` times the best."""
        within = sum(1 for workload in self.workloads if self.ratio(method, workload) <= tau)
        return within / len(self.workloads)

    def area(self, method: str, tau_max: float) -> float:
        """AlgoPerf's score: the area under rho from 1 to ``tau_max``, over ``tau_max - 1``; exact for the steps."""
        if tau_max <= 1:
            raise ValueError(f"tau_max must be above 1, got {tau_max}")
        ratios = [self.ratio(method, workload) for workload in self.workloads]
        return sum((tau_max - max(ratio, 1.0)) for ratio in ratios if ratio <= tau_max) / (
            len(self.workloads) * (tau_max - 1)
        )

    def steps(self, method: str, tau_max: float) -> tuple[list[float], list[float]]:
        """The profile as a step function from 1 to ``tau_max``: its taus and rho after each (for a plot)."""
        taus = sorted({1.0, tau_max, *(r for w in self.workloads if (r := self.ratio(method, w)) <= tau_max)})
        return taus, [self.fraction_within(method, tau) for tau in taus]


def performance_profile(times: Mapping[str, Mapping[str, float]]) -> PerformanceProfile:
    """``times[method][workload]``; a workload a method has no time on counts as ``NEVER`` for it."""
    workloads = tuple(sorted({workload for by_workload in times.values() for workload in by_workload}))
    if not workloads:
        raise ValueError("a performance profile needs at least one workload with a time")
    methods = tuple(sorted(times))
    filled = {method: {w: times[method].get(w, NEVER) for w in workloads} for method in methods}
    return PerformanceProfile(filled, methods, workloads)
