"""Tune's grid over a sweep's arms as the arms grow (issue 33; docs/benchmarks.md "At scale"): the driver's CPU
to make every variant of ``{"arm": tune.grid_search(arms)}`` (what ``space.search_space`` gave Tune for a random
or ASHA sweep until the twenty-second session), with the arms as ``Arm.as_tune`` makes them against plain dicts of
the same content, alternated in one run. Tune deep-copies the whole spec for each variant it makes, so plain dicts
cost n² copies of an arm. A real sweep's ``tune.run`` rebuilds the arms as plain dicts before this generator runs,
so its cost was the plain column; sweeps now suggest their arms one at a time (``space.ArmsInOrder``).

    python bench/bench_arm_grid.py --arms 300 1000 3000 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import time

from ray import tune
from ray.tune.search.variant_generator import generate_variants

from raycomp.config.arm import Arm


def variants_cpu_s(grid: list[dict]) -> float:
    start = time.process_time()
    made = sum(1 for _ in generate_variants({"config": {"arm": tune.grid_search(grid)}}))
    assert made == len(grid)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", type=int, nargs="+", default=[300, 1000, 3000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("| arms | plain dicts: CPU-s, median (range) | Arm.as_tune: CPU-s, median (range) |")
    print("|---|---|---|")
    for count in args.arms:
        arms = [
            Arm("method", f"method-{index}", {"algorithms.selective_backprop.keep": 0.2 + 0.7 * index / count})
            for index in range(count)
        ]
        times: dict[str, list[float]] = {"plain": [], "as_tune": []}
        for _ in range(args.repeats):
            times["plain"].append(variants_cpu_s([dict(arm.as_tune()) for arm in arms]))
            times["as_tune"].append(variants_cpu_s([arm.as_tune() for arm in arms]))
        shown = {
            kind: f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"
            for kind, values in times.items()
        }
        print(f"| {count:,} | {shown['plain']} | {shown['as_tune']} |", flush=True)


if __name__ == "__main__":
    main()
