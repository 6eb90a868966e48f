"""Benchmarks of the training core, side by side in one process (results in docs/benchmarks.md).

1. Engine overhead: the Trainer with no algorithms against a hand-written PyTorch loop doing the
   same work (same model, data, optimizer; no eval, no logging, no checkpoints). Target <= 1.03x.
2. SelectiveBackprop step cost: epoch time with SB always on (start=0, end=1, keep=0.5,
   scale_factor=0.5, interrupt=0) against no SB, in wall and in CPU time. Target <= 0.5x (issue 24).
3. The default SB recipe (start=0.5, end=0.9, keep=0.5, scale_factor=0.5, interrupt=2) against the
   baseline on the same budget: wall time and final eval accuracy. Target: less time, accuracy within
   1 point.

Runs alternate their order every repeat so that drift in machine speed hits both sides; ratios are
taken per repeat and the median is reported. On the CPU, give ``--threads`` (a sweep trial trains on one):
torch's default takes every core, so the figures then depend on what else the machine runs; the SB rows also
give the ratio of the process's CPU time, which waiting for a busy core does not inflate.

    python bench/bench_core.py                 # the full run quoted in docs/benchmarks.md
    python bench/bench_core.py --quick         # a seconds-long smoke run
    python bench/bench_core.py --device cuda --model resnet56 --precision amp_bf16   # on a GPU
    python bench/bench_core.py --device cuda --model resnet56 --precision amp_bf16 --compile reduce-overhead

``--device auto`` (the default) is CUDA where there is a GPU and the CPU otherwise; both sides of every
comparison run on that device, with the same precision (``autocast``, and a ``GradScaler`` for fp16).
On CUDA every timed run ends with ``torch.cuda.synchronize()``, so queued kernels are counted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from raycomp import Callback, Trainer
from raycomp.algorithms import SelectiveBackprop
from raycomp.core.compiling import COMPILE_MODES, compile_model
from raycomp.core.precision import Precision, autocast, make_grad_scaler
from raycomp.data import SyntheticCIFAR, build_dataloader
from raycomp.launch.hardware import cpu_model
from raycomp.models import build_model


def machine(device: torch.device) -> str:
    text = f"{cpu_model()}, {os.cpu_count()} cores, torch {torch.__version__}, {torch.get_num_threads()} threads"
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        text += f"; GPU {props.name} ({props.total_memory / 2**30:.0f} GiB, CUDA {torch.version.cuda})"
    return text


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


def hand_loop(
    model,
    loader,
    optimizer,
    scheduler,
    epochs: int,
    device=None,
    precision: Precision = Precision.FP32,
    select: Callable | None = None,
) -> None:
    """What a user would write without raycomp: the same forward, loss, backward, step and schedule.

    On ``device`` (default: the CPU) and, like the Trainer, under ``autocast`` for AMP, with a
    ``GradScaler`` for fp16.
    """
    device = torch.device("cpu") if device is None else device
    scaler = make_grad_scaler(precision, device)
    model.train()
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        for inputs, targets in loader:
            batch = (inputs.to(device, non_blocking=True), targets.to(device, non_blocking=True))
            if select is not None:
                with autocast(precision, device):
                    batch = select(model, batch)
            optimizer.zero_grad(set_to_none=True)
            with autocast(precision, device):
                outputs = model(batch)
                loss = model.loss(outputs, batch)
            if scaler is None:
                loss.backward()
                optimizer.step()
            else:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            scheduler.step()


def hand_selection(model, batch, keep: float = 0.5, scale_factor: float = 0.5):
    """A minimal SelectiveBackprop step, as one would write it by hand: a no-grad scoring forward over the
    downsampled batch (BatchNorm on batch statistics, as in train mode), ``int(keep * N)`` examples drawn by
    loss rank, and the training step on them with BatchNorm statistics left alone. On the CPU it scores
    channels-last, as SelectiveBackprop does there, so that the comparison measures bookkeeping alone; it draws
    without host synchronisation, as SelectiveBackprop does (issue 58)."""
    inputs, targets = batch
    with torch.no_grad():
        small = torch.nn.functional.interpolate(inputs, scale_factor=scale_factor, mode="bilinear")
        if small.device.type == "cpu":
            small = small.contiguous(memory_format=torch.channels_last)
        losses = model.loss(model((small, targets)).float(), batch, reduction="none")
    n = inputs.shape[0]
    weights = ((torch.arange(n, device=inputs.device, dtype=torch.float32) + 0.5) / n) ** (1 / keep - 1)
    race = weights / torch.empty_like(weights).exponential_()  # torch.multinomial's draw, without its host check
    chosen = losses.argsort()[race.topk(int(keep * n)).indices].sort().values
    return inputs[chosen], targets[chosen]


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def per_batch_overhead(device: torch.device, repeats: int = 7, batches: int = 256) -> tuple[float, float]:
    """Microseconds per batch, hand loop vs Trainer, on a 16->4 linear model where the loop is all there is."""
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

    from raycomp.models.base import ClassifierModel

    data = TensorDataset(torch.randn(batches * 16, 16), torch.randint(0, 4, (batches * 16,)))

    def parts():
        torch.manual_seed(0)
        model = ClassifierModel(torch.nn.Linear(16, 4)).to(device)
        sampler = DistributedSampler(data, num_replicas=1, rank=0, seed=0)
        return model, torch.optim.SGD(model.parameters(), lr=0.1), DataLoader(data, batch_size=16, sampler=sampler)

    def hand():
        model, optimizer, loader = parts()
        hand_loop(model, loader, optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0), 1, device)
        synchronize(device)

    def trainer():
        model, optimizer, loader = parts()
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
        Trainer(
            model,
            loader,
            "1ep",
            optimizers=optimizer,
            schedulers=schedule,
            step_schedulers_every_batch=True,  # as the hand loop does
            device=device,
            progress_bar=False,
            seed=0,
        ).fit()
        synchronize(device)

    rows = side_by_side(repeats, hand, trainer)
    return tuple(statistics.median(r[i] for r in rows) / batches * 1e6 for i in (0, 1))


def timed(run: Callable[[], object]) -> tuple[float, float, object]:
    """Wall seconds, this process's CPU seconds (all its threads), and what ``run`` returned."""
    start, cpu = time.perf_counter(), time.process_time()
    result = run()
    return time.perf_counter() - start, time.process_time() - cpu, result


def make_run(
    args,
    train,
    test,
    algorithms,
    epochs: int,
    seed: int,
    trainer: bool = True,
    select=None,
    pinned: bool | None = None,
    callbacks: Sequence[Callback] = (),
):
    """A closure that builds a fresh model and trains it; returns eval accuracy (or None).

    ``trainer=False`` runs the hand loop instead, with ``select`` (e.g. ``hand_selection``) pruning each batch.
    ``pinned`` (default: on CUDA, as raycomp's recipe builds them there) loads batches into pinned memory and
    steps SGD's fused update; False is the pageable loader and torch's default (foreach) update.
    """
    pinned = args.device.type == "cuda" if pinned is None else pinned

    def run():
        torch.manual_seed(seed)
        model = build_model(args.model).to(args.device)
        kernel = {"fused": True} if pinned else {}
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4, **kernel)
        # compiled with static shapes: every batch full, as raycomp's recipe builds it with compile
        loader = build_dataloader(train, args.batch_size, seed=seed, drop_last=bool(args.compile), pin_memory=pinned)
        steps = epochs * len(loader)
        scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=steps)
        if not trainer:
            selection = select
            if args.compile:  # as the Trainer does: the model, and the selection as one function of its own
                model = compile_model(model, args.compile)
                selection = select and compile_model(select, args.compile)
            hand_loop(model, loader, optimizer, scheduler, epochs, args.device, args.precision, selection)
            synchronize(args.device)
            return None
        fitter = Trainer(
            model,
            loader,
            f"{epochs}ep",
            optimizers=optimizer,
            schedulers=scheduler,
            step_schedulers_every_batch=True,  # OneCycleLR counts batches (total_steps)
            algorithms=algorithms(),
            eval_dataloader=test,
            eval_interval="0ep",
            precision=args.precision,
            device=args.device,
            progress_bar=False,
            seed=seed,
            compile=args.compile or False,
            callbacks=list(callbacks),
        )
        fitter.fit()
        synchronize(args.device)
        return fitter.state.eval_metrics.get("eval/accuracy")

    return run


def side_by_side(
    repeats: int, first: Callable, second: Callable
) -> list[tuple[float, float, object, object, float, float]]:
    """Per repeat: wall seconds of each side, their results, and their CPU seconds."""
    rows = []
    for repeat in range(repeats):
        if repeat % 2 == 0:
            (t1, c1, r1), (t2, c2, r2) = timed(first), timed(second)
        else:
            (t2, c2, r2), (t1, c1, r1) = timed(second), timed(first)
        rows.append((t1, t2, r1, r2, c1, c2))
    return rows


def median_ratio(rows) -> float:
    return statistics.median(t2 / t1 for t1, t2, *_ in rows)


def ratio_text(rows, cpu: bool = False) -> str:
    """The median of the per-repeat ratios (of wall time, or of CPU time) and their spread (min–max)."""
    ratios = [r[5] / r[4] if cpu else r[1] / r[0] for r in rows]
    return f"{statistics.median(ratios):.3f}x ({min(ratios):.3f}–{max(ratios):.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    parser.add_argument("--model", default="cnn", help="cnn, resnet20 or resnet56")
    parser.add_argument("--device", default="auto", help="auto (CUDA if available), cpu, cuda or cuda:N")
    parser.add_argument("--precision", default="fp32", choices=[p.value for p in Precision])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--overhead-epochs", type=int, default=2)
    parser.add_argument("--only-overhead", action="store_true", help="run benchmark 1 only")
    parser.add_argument("--skip-overhead", action="store_true", help="skip benchmark 1 (start at the SB rows)")
    parser.add_argument("--skip-recipe", action="store_true", help="run benchmarks 1 and 2, not the recipe")
    parser.add_argument("--epochs", type=int, default=10, help="budget of the recipe comparison")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    parser.add_argument("--compile", choices=COMPILE_MODES, help="torch.compile mode for both sides (default: eager)")
    parser.add_argument("--input-path", action="store_true", help="also pinned+fused vs pageable+foreach (for CUDA)")
    parser.add_argument("--profile", action="store_true", help="also 2 Trainer epochs under torch.profiler")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    args.device, args.precision = resolve_device(args.device), Precision.parse(args.precision)
    n_train, n_test = (5000, 1000) if not args.quick else (256, 128)
    if args.quick:
        args.repeats, args.seeds, args.epochs, args.batch_size, args.overhead_epochs = 1, 1, 2, 64, 1
    train, test = SyntheticCIFAR(n_train, "train", seed=0), SyntheticCIFAR(n_test, "test", seed=0)
    test_loader = build_dataloader(test, 500, shuffle=False, pin_memory=args.device.type == "cuda")
    none = list
    results: dict[str, object] = {
        "machine": machine(args.device),
        "device": str(args.device),
        "model": args.model,
        "precision": args.precision.value,
        "train_samples": n_train,
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "compile": args.compile,
    }
    print(
        f"# machine: {results['machine']}\n# {args.model} on {args.device}, {args.precision.value}, "
        f"{args.compile or 'eager'}; "
        f"{n_train} synthetic samples, batch {args.batch_size}\n"
    )

    make_run(args, train, None, none, 1, 0)()  # warm-up: first-call costs (allocator, kernels) hit neither side
    print("| benchmark | baseline (median s) | measured (median s) | ratio (median of per-repeat ratios) | target |")
    print("|---|---|---|---|---|")
    if not args.skip_overhead:
        overhead(args, train, results)
    if args.only_overhead:
        write_json(args.json, results)
        return
    sb_rows(args, train, test_loader, results)
    write_json(args.json, results)  # kept if what follows runs past a caller's time limit
    if args.input_path:
        input_path(args, train, results)
        write_json(args.json, results)
    if args.profile:
        profile_epochs(args, train, results)
        write_json(args.json, results)


class SteadyWindow(Callback):
    """The fit's epochs after its first (compiled, CUDA graphs recorded, caches warm), synchronised at both ends:
    their wall time, and with ``profiled`` a torch.profiler over them (no graph is captured while it records)."""

    def __init__(self, device: torch.device, epochs: int, profiled: bool) -> None:
        self.device, self.epochs, self.profiled = device, epochs, profiled
        self.profiler: Any = None
        self.wall_s, self._start = 0.0, 0.0

    def epoch_end(self, state, logger) -> None:
        if state.timestamp.epoch == 1:
            synchronize(self.device)
            if self.profiled:
                from torch.profiler import ProfilerActivity, profile

                cuda = [ProfilerActivity.CUDA] if self.device.type == "cuda" else []
                self.profiler = profile(activities=[ProfilerActivity.CPU, *cuda])
                self.profiler.start()
            self._start = time.perf_counter()
        elif state.timestamp.epoch == self.epochs:
            synchronize(self.device)
            self.wall_s = time.perf_counter() - self._start
            if self.profiler is not None:
                self.profiler.stop()


def profile_epochs(args, train, results: dict[str, object]) -> None:
    """Where the Trainer's step (no SB) spends its time (issue 58: the compiled step at 1.6-2.7x the eager one, not
    3x). Two runs of 3 epochs, each timed over its last two: one plain, one under torch.profiler. The GPU kernels'
    time in the profiled window over the plain window's wall time says how much of the step the GPU fills (a step
    bound by the host leaves it idle); the host's and the device's costliest ops go to the log."""
    from torch.autograd import DeviceType

    cuda = args.device.type == "cuda"
    plain, profiled = SteadyWindow(args.device, 3, False), SteadyWindow(args.device, 3, True)
    make_run(args, train, None, list, 3, 0, callbacks=[plain])()
    make_run(args, train, None, list, 3, 0, callbacks=[profiled])()
    events = profiled.profiler.events()
    kernels_s = sum(e.time_range.elapsed_us() for e in events if e.device_type == DeviceType.CUDA) / 1e6
    averages = profiled.profiler.key_averages()
    print(averages.table(sort_by="self_cpu_time_total", row_limit=15))
    if cuda:
        print(averages.table(sort_by="self_device_time_total", row_limit=15))
    results["profile"] = {"wall_s": plain.wall_s, "profiled_wall_s": profiled.wall_s}
    results["profile"]["kernels_s"] = kernels_s if cuda else None
    share = f"{kernels_s / plain.wall_s:.2f}" if cuda else "n/a (no GPU)"
    print(
        f"| Trainer, epochs 2-3: wall s (profiled: {profiled.wall_s:.2f}) | {plain.wall_s:.2f} | GPU kernels "
        f"{kernels_s:.2f} s | {share} of the wall | - |"
    )


def input_path(args, train, results: dict[str, object]) -> None:
    """The Trainer's epoch with the recipe's GPU input path (pinned batches, fused SGD) against the pageable loader
    and torch's default update (issue 58): a copy from pageable memory waits for the GPU's queued work each step."""
    none = list
    make_run(args, train, None, none, 1, 0, pinned=False)()  # warm-up: the foreach update's kernels too
    rows = side_by_side(
        args.repeats,
        make_run(args, train, None, none, 1, 0, pinned=False),
        make_run(args, train, None, none, 1, 0, pinned=True),
    )
    results["input_path"] = {"pageable_s": [r[0] for r in rows], "pinned_s": [r[1] for r in rows]}
    print(
        f"| epoch, pinned batches and fused SGD vs pageable batches and foreach SGD "
        f"| {statistics.median(r[0] for r in rows):.2f} | {statistics.median(r[1] for r in rows):.2f} "
        f"| {ratio_text(rows)} | < 1x |"
    )


def overhead(args, train, results: dict[str, object]) -> None:
    """Benchmark 1: the Trainer against the hand loop, and the per-batch cost on a tiny model."""
    none = list
    rows = side_by_side(
        args.repeats,
        make_run(args, train, None, none, args.overhead_epochs, 0, trainer=False),
        make_run(args, train, None, none, args.overhead_epochs, 0, trainer=True),
    )
    results["engine_overhead"] = {"hand_s": [r[0] for r in rows], "trainer_s": [r[1] for r in rows]}
    print(
        f"| Trainer, no algorithms vs hand-written loop ({args.overhead_epochs} epochs) "
        f"| {statistics.median(r[0] for r in rows):.2f} "
        f"| {statistics.median(r[1] for r in rows):.2f} | {ratio_text(rows)} | <= 1.03x |"
    )

    hand_us, trainer_us = per_batch_overhead(args.device)
    results["per_batch_us"] = {"hand": hand_us, "trainer": trainer_us}
    print(
        f"| per-batch cost on a 16->4 linear model (µs) | {hand_us:.0f} | {trainer_us:.0f} | "
        f"{trainer_us - hand_us:+.0f} µs | - |"
    )


def sb_rows(args, train, test_loader, results: dict[str, object]) -> None:
    """Benchmarks 2 and 3: an epoch with SB always on, and the default SB recipe, each against no SB."""
    none = list

    def sb_always():
        return [SelectiveBackprop(start=0.0, end=1.0, keep=0.5, scale_factor=0.5, interrupt=0)]

    make_run(args, train, None, sb_always, 1, 0)()  # warm-up: SB's own shapes (downsampled, half batch)
    rows = side_by_side(
        args.repeats,
        make_run(args, train, None, none, 1, 0),
        make_run(args, train, None, sb_always, 1, 0),
    )
    results["sb_step_cost"] = {
        "baseline_s": [r[0] for r in rows],
        "sb_s": [r[1] for r in rows],
        "baseline_cpu_s": [r[4] for r in rows],
        "sb_cpu_s": [r[5] for r in rows],
    }
    print(
        f"| epoch with SB always on vs no SB | {statistics.median(r[0] for r in rows):.2f} "
        f"| {statistics.median(r[1] for r in rows):.2f} | {ratio_text(rows)} | <= 0.5x |"
    )
    print(  # on a shared machine the process's CPU time is its work; wall time is also the wait for a core
        f"| same runs, CPU time | {statistics.median(r[4] for r in rows):.2f} "
        f"| {statistics.median(r[5] for r in rows):.2f} | {ratio_text(rows, cpu=True)} | <= 0.5x |"
    )
    make_run(args, train, None, none, 1, 0, trainer=False, select=hand_selection)()  # warm-up (compiles, if asked)
    rows = side_by_side(
        args.repeats,
        make_run(args, train, None, none, 1, 0, trainer=False, select=hand_selection),
        make_run(args, train, None, sb_always, 1, 0),
    )
    results["sb_vs_hand_sb"] = {"hand_sb_s": [r[0] for r in rows], "trainer_sb_s": [r[1] for r in rows]}
    print(
        f"| epoch with SB always on: Trainer vs a hand-written SB loop | {statistics.median(r[0] for r in rows):.2f} "
        f"| {statistics.median(r[1] for r in rows):.2f} | {ratio_text(rows)} | <= 1.03x |"
    )
    print(
        f"| same runs, CPU time | {statistics.median(r[4] for r in rows):.2f} "
        f"| {statistics.median(r[5] for r in rows):.2f} | {ratio_text(rows, cpu=True)} | <= 1.03x |"
    )
    if args.skip_recipe:
        return

    def sb_default():
        return [SelectiveBackprop()]

    recipe = []
    for seed in range(args.seeds):
        recipe += side_by_side(
            1,
            make_run(args, train, test_loader, none, args.epochs, seed),
            make_run(args, train, test_loader, sb_default, args.epochs, seed),
        )
    results["sb_recipe"] = {
        "epochs": args.epochs,
        "baseline_s": [r[0] for r in recipe],
        "sb_s": [r[1] for r in recipe],
        "baseline_accuracy": [r[2] for r in recipe],
        "sb_accuracy": [r[3] for r in recipe],
    }
    base_acc = statistics.median(r[2] for r in recipe)
    sb_acc = statistics.median(r[3] for r in recipe)
    print(
        f"| default SB recipe vs baseline, {args.epochs} epochs, {args.seeds} seeds: wall time "
        f"| {statistics.median(r[0] for r in recipe):.2f} | {statistics.median(r[1] for r in recipe):.2f} "
        f"| {ratio_text(recipe)} | < 1x |"
    )
    print(
        f"| same runs: final eval accuracy (median) | {base_acc:.4f} | {sb_acc:.4f} "
        f"| {sb_acc - base_acc:+.4f} | >= -0.01 |"
    )
    accs = ", ".join(f"{r[2]:.4f}/{r[3]:.4f}" for r in recipe)
    print(f"\nper-seed accuracy baseline/SB: {accs}")


def write_json(path: str | None, results: dict[str, object]) -> None:
    if path:
        with open(path, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
