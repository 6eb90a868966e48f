"""How Tune turns a sweep's arms into trials as the arms grow (issue 33; docs/benchmarks.md "At scale"): the
driver's CPU to create every trial of one experiment, through Tune's own search algorithms, with no Ray started.

- ``grid``: ``{"arm": tune.grid_search(arms)}`` as ``tune.run`` gives it to Tune's ``BasicVariantGenerator`` (after
  ``inject_placeholders``, which rebuilds every dict of the param space as a plain dict): what a random or ASHA
  sweep did until the twenty-second session. The generator deep-copies the whole spec, the list of arms with it,
  for every variant: n² copies.
- ``searcher``: the arms suggested in order by ``space.ArmsInOrder`` through Tune's ``SearchGenerator``, as sweeps
  do now: one copy of a suggestion a trial.

Both kinds alternated in one run, medians with their range:

    python bench/bench_arm_grid.py --arms 300 1000 3000 --repeats 3
"""

from __future__ import annotations

import argparse
import copy
import statistics
import tempfile
import time

from ray import tune
from ray.tune.experiment import Experiment
from ray.tune.impl.placeholder import create_resolvers_map, inject_placeholders
from ray.tune.search import BasicVariantGenerator, SearchGenerator

from raycomp.config.arm import Arm
from raycomp.launch.sweep.space import ArmsInOrder


def trainable(config: dict) -> None:
    """Never run: Tune needs a registered trainable to create trials."""


def trials_cpu_s(kind: str, arms: list[Arm], storage: str) -> float:
    listed = [dict(arm.as_tune()) for arm in arms]
    start = time.process_time()
    if kind == "grid":
        space = inject_placeholders(copy.deepcopy({"arm": tune.grid_search(listed)}), create_resolvers_map())
        search, samples = BasicVariantGenerator(), 1
    else:
        space, search, samples = {}, SearchGenerator(ArmsInOrder(listed)), len(listed)
    search.add_configurations(Experiment("arms", trainable, config=space, num_samples=samples, storage_path=storage))
    made = 0
    while search.next_trial() is not None:
        made += 1
    assert made == len(arms), (kind, made)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", type=int, nargs="+", default=[300, 1000, 3000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    storage = tempfile.mkdtemp(prefix="raycomp-arms-")
    print("| arms | grid, as tune.run gives it: CPU-s, median (range) | ArmsInOrder: CPU-s, median (range) |")
    print("|---|---|---|")
    for count in args.arms:
        arms = [
            Arm("method", f"method-{index}", {"algorithms.selective_backprop.keep": 0.2 + 0.7 * index / count})
            for index in range(count)
        ]
        times: dict[str, list[float]] = {"grid": [], "searcher": []}
        for _ in range(args.repeats):
            for kind in times:
                times[kind].append(trials_cpu_s(kind, arms, storage))
        shown = {
            kind: f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"
            for kind, values in times.items()
        }
        print(f"| {count:,} | {shown['grid']} | {shown['searcher']} |", flush=True)


if __name__ == "__main__":
    main()
