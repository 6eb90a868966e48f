"""SelectiveBackprop's BatchNorm gap over seeds: the cases of tests/algorithms/test_selective_backprop_batchnorm.py.

For each case and seed, the points of eval accuracy that recomputing the BatchNorm statistics over every full
training batch adds, without SB and with SB always on at scale factors 1 and 0.5, and SB's excess over the no-SB
gap. ``--no-recompute`` turns the Trainer's recomputation before evaluation off (``recompute_batchnorm=0``: the
running averages, as before issue 35). Run it under other CPU kernels to see how far floats move between CPUs:

    python bench/bench_sb_batchnorm.py --seeds 5
    ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41 python bench/bench_sb_batchnorm.py --seeds 5
    python bench/bench_sb_batchnorm.py --seeds 5 --no-recompute
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

sys.path[:0] = [str(Path(__file__).parents[1] / "tests"), str(Path(__file__).parents[1] / "tests" / "algorithms")]

from test_selective_backprop_batchnorm import CASES, recomputation_gap  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of: {', '.join(CASES)}")
    parser.add_argument("--no-recompute", action="store_true", help="SB as before issue 35: running statistics only")
    args = parser.parse_args()
    recompute = 0 if args.no_recompute else 2
    torch.set_num_threads(1)
    kernels = os.environ.get("ATEN_CPU_CAPABILITY", "(this CPU's)"), os.environ.get("ONEDNN_MAX_CPU_ISA", "-")
    print(f"# torch {torch.__version__}, kernels {kernels}, recompute {not args.no_recompute}")
    print("| case | seed | no SB gap | SB 1.0 gap | SB 0.5 gap | excess 1.0 | excess 0.5 |")
    print("|---|---|---|---|---|---|---|")
    excesses: list[float] = []
    largest = 0.0
    for name in args.cases.split(","):
        for seed in range(args.seeds):
            base = recomputation_gap(CASES[name], None, seed, recompute)
            full, half = (recomputation_gap(CASES[name], scale, seed, recompute) for scale in (1.0, 0.5))
            excesses += [full - base, half - base]
            largest = max(largest, abs(base), abs(full), abs(half))
            row = [name, seed, base, full, half, full - base, half - base]
            print("| " + " | ".join(f"{v:.1f}" if isinstance(v, float) else str(v) for v in row) + " |", flush=True)
    print(f"# SB's excess gap: min {min(excesses):.1f}, max {max(excesses):.1f} points; largest |gap| {largest:.1f}")


if __name__ == "__main__":
    main()
