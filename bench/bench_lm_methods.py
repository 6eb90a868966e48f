"""Each transformer method alone against the baseline on experiments/lm.yaml's workload (docs/methods/ cards).

The workload is lm.yaml's: raycomp's GPT (d_model 64, 2 layers, 4 heads) on 128-byte sequences of the Python
standard library's source, AdamW (lr 3e-3, weight decay 0.01), cosine schedule with 5 % warmup, batch 32, 300
steps, on the CPU with one torch thread, as one lm.yaml trial (``cpus_per_worker: 1``) trains. Every run is
built by ``build_trainer`` from that config with one method (or none), evaluated once at the end on the
validation files (full 128-byte sequences).

Each seed trains the baseline and every method (same data order, same initial weights), in reverse order on
odd seeds so drift in machine speed hits both ends of the list. Reported per method: median training seconds
(each batch from BEFORE_DATALOADER to BATCH_END: data, algorithm work and the step; no evaluation), the median
of per-seed ratios to that seed's baseline, the median final validation loss (nats per byte) with its min-max
over seeds, its difference to the baseline's median, and the perplexity ``exp(loss)``.

    python bench/bench_lm_methods.py                       # the run quoted in docs/methods/
    python bench/bench_lm_methods.py --seeds 2,3           # more seeds, e.g. in a second process
    python bench/bench_lm_methods.py --quick               # a seconds-long smoke run
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import math
import statistics
import time
from typing import Any

import torch
from bench_core import machine

from raycomp.config import ExperimentConfig, load_experiment
from raycomp.config.recipe import build_trainer
from raycomp.core import Callback

# name -> (algorithm, arguments); None: the config's own arguments for that algorithm; a dict is laid over them.
METHODS: dict[str, tuple[str, dict[str, Any] | None]] = {
    "selective_backprop": ("selective_backprop", None),
    "alibi": ("alibi", {"max_sequence_length": 512, "train_sequence_length_scaling": 0.5}),
    "alibi_full_length": ("alibi", {"max_sequence_length": 512, "train_sequence_length_scaling": 1.0}),
    "gated_linear_units": ("gated_linear_units", {"activation": "gelu"}),
    "fused_layernorm": ("fused_layernorm", {"backend": "auto"}),
    "seq_length_warmup": ("seq_length_warmup", None),
    "seq_length_warmup_every_step": ("seq_length_warmup", {"buckets": 0}),  # Composer's staircase (issue 24)
}


class BatchTimer(Callback):
    """Training wall time: each batch from BEFORE_DATALOADER to BATCH_END, so evaluation is not counted.

    On a GPU each batch is timed by a pair of CUDA events, read at FIT_END: nothing in these runs' steps waits for
    the device (batches in pinned memory, no logger), so the host's clock would time the kernels' queuing, and the
    last steps' work would run inside the evaluation. Between its events a batch holds the GPU's time from the end
    of the batch before (or the host's, when the GPU waits for it) to the end of its own kernels.
    """

    def __init__(self) -> None:
        self.seconds, self._start = 0.0, 0.0
        self._events: list[list[torch.cuda.Event]] = []

    def before_dataloader(self, state, logger) -> None:
        if state.device.type == "cuda":
            self._events.append([torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)])
            self._events[-1][0].record()
        else:
            self._start = time.perf_counter()

    def batch_end(self, state, logger) -> None:
        if state.device.type == "cuda":
            self._events[-1][1].record()
        else:
            self.seconds += time.perf_counter() - self._start

    def fit_end(self, state, logger) -> None:
        if self._events:
            torch.cuda.synchronize(state.device)
            self.seconds += sum(start.elapsed_time(end) for start, end in self._events) / 1000  # ms
            self._events.clear()


def train(base: dict[str, Any], name: str, seed: int, device: str = "cpu") -> tuple[float, float]:
    """One run with method ``name`` alone (or none); (training seconds, final validation loss)."""
    data = copy.deepcopy(base)
    data["seed"] = seed
    if name == "baseline":
        data["algorithms"] = {}
    else:
        algorithm, arguments = METHODS[name]
        data["algorithms"] = {algorithm: {**base["algorithms"].get(algorithm, {}), **(arguments or {})}}
    gc.collect()
    config, timer = ExperimentConfig.from_dict(data, source=f"<{name}>"), BatchTimer()
    trainer = build_trainer(config, callbacks=[timer], device=device)
    trainer.fit()
    if device != "cpu":
        torch.cuda.synchronize()
    return timer.seconds, trainer.state.eval_metrics["eval/loss"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0,1", help="comma-separated seeds, one repeat each")
    parser.add_argument("--only", help="comma-separated method names (default: all; 'baseline': none)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    parser.add_argument("--config", default="experiments/lm.yaml")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--device", default="cpu", help="cpu (one thread, as one lm.yaml trial) or cuda")
    parser.add_argument("--set", action="append", default=[], help="a config override, e.g. max_duration=200ba")
    args = parser.parse_args()
    names = [name for name in args.only.split(",") if name != "baseline"] if args.only else list(METHODS)
    if unknown := set(names) - set(METHODS):
        parser.error(f"unknown method(s) {', '.join(sorted(unknown))}; valid: {', '.join(METHODS)}")
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.device == "cpu":
        torch.set_num_threads(1)  # one lm.yaml trial: scaling.cpus_per_worker 1
    sets = ["max_duration=6ba", "data.max_bytes=100000"] if args.quick else []
    sets += args.set
    config = load_experiment(args.config, [*sets, "sweep=null"])
    sets.append(f"eval.interval={config.max_duration.value}ba")
    config = load_experiment(args.config, [*sets, "sweep=null"])
    base = config.to_dict()
    names = ["baseline", *names]
    device = torch.device(args.device)
    print(f"# machine: {machine(device)}\n# {args.config}: {config.max_duration}, seeds {seeds}, {device}\n")

    warmup = copy.deepcopy(base)
    warmup["max_duration"], warmup["eval"]["interval"] = "5ba", "5ba"
    train(warmup, "baseline", 0, args.device)  # first-call costs (allocator, data cache) hit no measured run
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for index, seed in enumerate(seeds):
        for name in names if index % 2 == 0 else names[::-1]:
            runs[name].append(train(base, name, seed, args.device))
            print(f"  seed {seed} {name}: {runs[name][-1][0]:.1f} s, eval loss {runs[name][-1][1]:.4f}", flush=True)

    base_s = [s for s, _ in runs["baseline"]]
    base_loss = statistics.median(loss for _, loss in runs["baseline"])
    print(
        "\n| method | s (median) | time vs baseline | eval loss, median (min–max) | Δ loss | perplexity |"
        "\n|---|---|---|---|---|---|"
    )
    for name in names:
        seconds, losses = [s for s, _ in runs[name]], [loss for _, loss in runs[name]]
        ratio = statistics.median(s / b for s, b in zip(seconds, base_s, strict=True))
        loss = statistics.median(losses)
        print(
            f"| {name} | {statistics.median(seconds):.1f} | {ratio:.3f}x | {loss:.4f} ({min(losses):.4f}–"
            f"{max(losses):.4f}) | {loss - base_loss:+.4f} | {math.exp(loss):.3f} |"
        )
    if args.json:
        with open(args.json, "w") as out:
            summary = {"machine": machine(device), "seeds": seeds, "runs": runs, "config": base}
            json.dump(summary, out, indent=2)


if __name__ == "__main__":
    main()
