"""SelectiveBackprop's traced time as a share of its trials' training time (results in docs/benchmarks.md).

What the sweep report's trace table counts (raycomp/report/analysis.py): the Engine's trace summary of
every SelectiveBackprop run (the selection pass at AFTER_DATALOADER, and anything at other events) over the
trial's training wall time since FIT_START. Each trial here is experiments/sb.yaml's (the default sweep's
recipe: the cnn on 3,000 synthetic samples, 4 epochs, eval every epoch) built by ``build_trainer`` in this
process on one torch thread, as a sweep trial trains (``cpus_per_worker: 1``), with one SB configuration.

Each configuration runs twice per repeat, side by side in alternating order: the selection pass scoring
channels-last (SB's layout on the CPU) and in the loader's layout (``ScoringLayout.channels_last`` set
to False after INIT, the scoring before this change).

    python bench/bench_sb_bookkeeping.py    # 3 configurations x 3 repeats x 2 layouts: 18 trials, ~5 min at load 6
    python bench/bench_sb_bookkeeping.py --repeats 1 --configs default
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from raycomp.config.recipe import build_trainer
from raycomp.config.source import load_experiment
from raycomp.core import Callback, Event, Logger, State

# the recipe's own SB arguments, and two corners of experiments/sb.yaml's space: at full resolution, and every batch
CONFIGS = {
    "default": {},
    "scale_factor=1": {"scale_factor": 1.0},
    "keep=0.36+interrupt=0": {"keep": 0.36, "interrupt": 0, "start": 0.31},
}


class ScoreInLoaderLayout(Callback):
    """After SB's INIT (callbacks run after algorithms), turn its channels-last scoring off."""

    def init(self, state: State, logger: Logger) -> None:
        for algorithm in state.algorithms:
            if type(algorithm).__name__ == "SelectiveBackprop":
                algorithm._layout.channels_last = False


def trial(experiment: str, arguments: dict[str, float], channels_last: bool) -> dict[str, float]:
    overrides = [f"algorithms.selective_backprop.{key}={value}" for key, value in arguments.items()]
    config = load_experiment(experiment, overrides)
    trainer = build_trainer(config, callbacks=[] if channels_last else [ScoreInLoaderLayout()])
    wall, cpu = time.perf_counter(), time.process_time()
    trainer.fit()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    summary = trainer.state.trace_summary
    traced = summary.total_s("SelectiveBackprop")
    selection = summary.get("SelectiveBackprop", Event.AFTER_DATALOADER)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "traced_s": traced,
        "share": traced / wall,
        "selections": selection.count if selection else 0,
        "ms_per_selection": 1e3 * selection.mean_s if selection else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", default="experiments/sb.yaml")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--configs", default=",".join(CONFIGS), help=f"comma-separated, of: {', '.join(CONFIGS)}")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (a sweep trial uses one)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"# load at start {os.getloadavg()[0]:.1f}, torch {torch.__version__}, {args.threads} thread(s)")
    print(
        "| configuration | scoring layout | selections | ms per selection | SB traced s | fit wall s | share | CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    rows: dict[tuple[str, bool], list[dict[str, float]]] = {}
    for name in args.configs.split(","):
        for repeat in range(args.repeats):
            order = (True, False) if repeat % 2 == 0 else (False, True)
            for channels_last in order:
                result = trial(args.experiment, CONFIGS[name], channels_last)
                rows.setdefault((name, channels_last), []).append(result)
                layout = "channels-last" if channels_last else "loader's"
                print(
                    f"| {name} | {layout} | {result['selections']} | {result['ms_per_selection']:.1f} "
                    f"| {result['traced_s']:.2f} | {result['wall_s']:.2f} | {result['share']:.1%} "
                    f"| {result['cpu_s']:.2f} |",
                    flush=True,
                )
    print(f"\n# load at end {os.getloadavg()[0]:.1f}; medians (min-max) over repeats:")
    for (name, channels_last), results in rows.items():
        layout = "channels-last" if channels_last else "loader's"
        shares = [r["share"] for r in results]
        per = [r["ms_per_selection"] for r in results]
        print(
            f"{name:22s} {layout:14s} share {statistics.median(shares):.1%} ({min(shares):.1%}-{max(shares):.1%}), "
            f"{statistics.median(per):.1f} ms per selection ({min(per):.1f}-{max(per):.1f}), "
            f"fit wall {statistics.median(r['wall_s'] for r in results):.2f} s"
        )


if __name__ == "__main__":
    main()
