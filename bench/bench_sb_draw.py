"""SelectiveBackprop's draw: ``torch.multinomial`` against the exponential race raycomp writes out (issue 58).

Both draw the same examples from the same generator (tests/algorithms/test_loss_selection.py); multinomial first
checks its weights on the host (``.item()``), so on a GPU each draw waits for the device. Here each side draws
``--draws`` times in a row, after the same losses, with one synchronisation at the end: the time per draw, side by
side in alternating order every repeat (medians, and the ratio's min–max). On the CPU the two differ only by
multinomial's checks; on a GPU the race's draws queue up behind each other while multinomial's wait one by one.

    python bench/bench_sb_draw.py                     # the CPU, batches of 128 and 512
    python bench/bench_sb_draw.py --device cuda --json /tmp/sb_draw.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from raycomp.algorithms.loss_selection import sample_by_loss_rank


def multinomial_draw(losses: torch.Tensor, num_keep: int, keep: float) -> torch.Tensor:
    n = losses.shape[0]
    weights = ((torch.arange(n, device=losses.device, dtype=torch.float32) + 0.5) / n) ** (1 / keep - 1)
    return losses.argsort()[torch.multinomial(weights, num_keep, replacement=False)].sort().values


def per_draw_us(draw: Callable, losses: torch.Tensor, num_keep: int, keep: float, draws: int) -> float:
    synchronize(losses.device)
    start = time.perf_counter()
    for _ in range(draws):
        draw(losses, num_keep, keep)
    synchronize(losses.device)
    return (time.perf_counter() - start) / draws * 1e6


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batches", default="128,512", help="batch sizes N, comma-separated")
    parser.add_argument("--keep", type=float, default=0.5)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    results: dict = {"device": str(device), "keep": args.keep, "draws": args.draws, "sizes": {}}
    print(f"| N | multinomial, µs a draw | race, µs a draw | race / multinomial (min–max of {args.repeats}) |")
    print("|---|---|---|---|")
    for size in (int(n) for n in args.batches.split(",")):
        losses = torch.randn(size, device=device)
        num_keep = max(1, int(args.keep * size))
        for draw in (multinomial_draw, sample_by_loss_rank):  # warm-up: kernels loaded, caches allocated
            per_draw_us(draw, losses, num_keep, args.keep, 10)
        old, new = [], []
        for repeat in range(args.repeats):
            order = [(multinomial_draw, old), (sample_by_loss_rank, new)]
            for draw, times in order if repeat % 2 == 0 else order[::-1]:
                times.append(per_draw_us(draw, losses, num_keep, args.keep, args.draws))
        ratios = [b / a for a, b in zip(old, new, strict=True)]
        results["sizes"][size] = {"multinomial_us": old, "race_us": new}
        print(
            f"| {size} | {statistics.median(old):.1f} | {statistics.median(new):.1f} | "
            f"{statistics.median(ratios):.3f}x ({min(ratios):.3f}–{max(ratios):.3f}) |"
        )
    if args.json:
        args.json.write_text(json.dumps(results))


if __name__ == "__main__":
    main()
