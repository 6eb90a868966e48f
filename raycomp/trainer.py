"""The Trainer: the fit / epoch / batch / microbatch loop, firing an Event around every step.

Each level of the loop reads as before-event, body, after-event, in the order of the pseudocode on
Composer's algorithms page. The Trainer owns what the Engine must not: moving batches to the device,
the backward pass and optimizer step, evaluation, DDP, and when to checkpoint and stop.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from raycomp.checkpoint import CheckpointSaver, load_checkpoint, restore_required_algorithms
from raycomp.core.algorithm import Algorithm
from raycomp.core.callback import Callback
from raycomp.core.engine import Engine
from raycomp.core.event import Event
from raycomp.core.logger import Logger, LoggerDestination
from raycomp.core.passes import AlgorithmPass
from raycomp.core.precision import Precision, autocast, make_grad_scaler
from raycomp.core.state import Evaluator, State
from raycomp.core.time import Time, TimeUnit
from raycomp.models.base import RaycompModel
from raycomp.rng import seed_all, set_rng_state


class Trainer:
    """Train a ``RaycompModel`` with algorithms and callbacks; ``fit()`` runs to ``max_duration``.

    ``seed`` defaults to a random one, kept in ``state.seed``. ``eval_interval`` and ``save_interval``
    take epochs or batches (``"1ep"``, ``"100ba"``; ``"0ep"`` evaluates only at the end); the final
    state is always evaluated and, with ``save_folder``, saved. Under an initialised
    ``torch.distributed`` process group the model is wrapped in DDP after INIT, so model surgery
    happens before DDP sees the parameters.
    """

    def __init__(
        self,
        model: RaycompModel,
        train_dataloader: Iterable,
        max_duration: str | Time,
        eval_dataloader: Iterable | Evaluator | Sequence[Evaluator] | None = None,
        algorithms: Sequence[Algorithm] = (),
        callbacks: Sequence[Callback] = (),
        optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer] | None = None,
        schedulers: Any = None,
        precision: str | Precision = "fp32",
        grad_accum: int = 1,
        device: str | torch.device = "auto",
        seed: int | None = None,
        eval_interval: str | Time = "1ep",
        save_folder: str | Path | None = None,
        save_interval: str | Time = "1ep",
        save_num_checkpoints_to_keep: int = -1,
        load_path: str | Path | None = None,
        load_recreate_required_algorithms: bool = False,
        progress_bar: bool | None = None,
        loggers: Sequence[LoggerDestination] = (),
        passes: list[AlgorithmPass] | None = None,
        steps_per_epoch: int | None = None,
    ) -> None:
        if optimizers is None and schedulers is not None:
            raise ValueError("schedulers were given without the optimizers they drive")
        seed = int.from_bytes(os.urandom(4), "little") if seed is None else seed
        seed_all(seed)
        distributed = dist.is_available() and dist.is_initialized()
        rank, world_size = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
        self.device = _resolve_device(device)
        precision = Precision.parse(precision)

        callbacks = list(callbacks)
        self.checkpoint_saver = None
        if save_folder is not None:
            self.checkpoint_saver = CheckpointSaver(save_folder, save_interval, save_num_checkpoints_to_keep)
            callbacks.append(self.checkpoint_saver)
        self.state = State(
            model=model,
            max_duration=max_duration,
            train_dataloader=train_dataloader,
            evaluators=_as_evaluators(eval_dataloader),
            grad_accum=grad_accum,
            precision=precision,
            optimizers=optimizers,
            schedulers=schedulers,
            scaler=make_grad_scaler(precision, self.device),
            algorithms=algorithms,
            callbacks=callbacks,
            steps_per_epoch=steps_per_epoch,
            device=self.device,
            rank=rank,
            world_size=world_size,
            seed=seed,
        )
        self.eval_interval = _interval(eval_interval, "eval_interval")
        self.logger = Logger(loggers)
        self.engine = Engine(self.state, self.logger, passes)
        self.progress_bar = (rank == 0 and sys.stderr.isatty()) if progress_bar is None else progress_bar

        self.engine.run_event(Event.INIT)  # model surgery happens here, before the device move and DDP
        self._resume_rng: dict[str, Any] | None = None
        checkpoint = load_checkpoint(load_path) if load_path is not None else None
        if checkpoint is not None:  # re-created algorithms replay their surgery here, also before the move
            restore_required_algorithms(checkpoint, self.state, self.engine, load_recreate_required_algorithms)
        model.to(self.device)
        if not self.state.optimizers:
            self.state.optimizers = [torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)]
        if checkpoint is not None:  # first, so that on BEFORE_LOAD LayerFreezing can re-freeze from its state
            self.state.load_algorithm_states(checkpoint["state"]["algorithms"])
        self.engine.run_event(Event.BEFORE_LOAD)  # as in Composer: model and optimizers built, their state not loaded
        if checkpoint is not None:
            self.state.load_state_dict(checkpoint["state"])
            self._resume_rng = checkpoint["rng"]
        self.engine.run_event(Event.AFTER_LOAD)

        self.train_model: torch.nn.Module = model
        if distributed and world_size > 1:
            self.train_model = DistributedDataParallel(
                model,
                device_ids=[self.device.index] if self.device.type == "cuda" else None,
                find_unused_parameters=any(a.find_unused_parameters for a in self.state.algorithms),
            )
        self._last_eval_batch = -1
        self._epoch_exhausted = False

    # -- the loop ------------------------------------------------------------------------------
    def fit(self) -> None:
        state, engine = self.state, self.engine
        state.model.train()
        engine.run_event(Event.FIT_START)
        with _progress(self.progress_bar, state) as bar:
            while not self._should_stop():
                if state.timestamp.batch_in_epoch == 0:
                    engine.run_event(Event.EPOCH_START)
                for batch in self._epoch_batches():
                    self._train_batch(batch)
                    bar.update(1)
                    if self.progress_bar:
                        bar.set_postfix(loss=f"{state.loss.item():.4f}", refresh=False)
                    if self.eval_interval.unit is TimeUnit.BATCH and _every(state.step, self.eval_interval):
                        self.evaluate()
                    engine.run_event(Event.BATCH_CHECKPOINT)
                    if self._should_stop(within_epoch=True):
                        break
                if state.timestamp.batch_in_epoch >= state.steps_per_epoch or self._epoch_exhausted:
                    if state.timestamp.batch_in_epoch == 0:
                        raise ValueError("train_dataloader yielded no batches")
                    state.timestamp = state.timestamp.to_next_epoch()
                    engine.run_event(Event.EPOCH_END)
                    if self.eval_interval.unit is TimeUnit.EPOCH and _every(state.epoch, self.eval_interval):
                        self.evaluate()
                    engine.run_event(Event.EPOCH_CHECKPOINT)
        if self._last_eval_batch != state.step:
            self.evaluate()
        engine.run_event(Event.FIT_END)

    def _epoch_batches(self) -> Iterator[Any]:
        """The rest of this epoch's batches, each fetched between BEFORE_ and AFTER_DATALOADER.

        On resume the epoch's finished batches are skipped, and the saved RNG state is restored at
        the very point the saved run had reached, so the resumed run draws the same numbers.
        """
        state = self.state
        sampler = getattr(state.train_dataloader, "sampler", None)
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(state.epoch)
        if self._resume_rng is not None and state.timestamp.batch_in_epoch == 0:
            set_rng_state(self._resume_rng)
            self._resume_rng = None
        batches = iter(state.train_dataloader)
        for _ in range(state.timestamp.batch_in_epoch):  # resuming mid-epoch: skip what was trained
            next(batches, None)
        if self._resume_rng is not None:
            set_rng_state(self._resume_rng)
            self._resume_rng = None
        self._epoch_exhausted = False
        while state.timestamp.batch_in_epoch < state.steps_per_epoch:
            self.engine.run_event(Event.BEFORE_DATALOADER)
            batch = next(batches, None)
            if batch is None:  # a loader shorter than steps_per_epoch ends the epoch early
                self._epoch_exhausted = True
                return
            yield batch

    def _train_batch(self, batch: Any) -> None:
        state, engine = self.state, self.engine
        state.batch = _to_device(batch, self.device)
        engine.run_event(Event.AFTER_DATALOADER)  # the whole batch: SelectiveBackprop prunes it here
        state.batch_num_samples = _num_samples(state.batch)
        state.batch_num_tokens = _num_tokens(state.batch)
        engine.run_event(Event.BATCH_START)
        engine.run_event(Event.BEFORE_TRAIN_BATCH)
        start = time.perf_counter()
        for optimizer in state.optimizers:
            optimizer.zero_grad(set_to_none=True)
        whole_batch, total_loss = state.batch, 0.0
        microbatches = _split(whole_batch, state.grad_accum)
        for index, microbatch in enumerate(microbatches):
            state.batch = microbatch
            last = index == len(microbatches) - 1
            no_sync = self.train_model.no_sync() if not last and self.train_model is not state.model else None
            with no_sync or contextlib.nullcontext():
                share = _num_samples(microbatch) / state.batch_num_samples
                loss = self._train_microbatch(share)
                total_loss = loss if len(microbatches) == 1 else total_loss + loss * share
        state.batch, state.loss = whole_batch, total_loss
        if state.scaler is not None:  # as in Composer: AFTER_TRAIN_BATCH (GradientClipping) sees true gradients
            for optimizer in state.optimizers:
                state.scaler.unscale_(optimizer)
        engine.run_event(Event.AFTER_TRAIN_BATCH)
        for optimizer in state.optimizers:
            if state.scaler is not None:
                state.scaler.step(optimizer)
            else:
                optimizer.step()
        if state.scaler is not None:
            state.scaler.update()
        for scheduler in state.schedulers:
            scheduler.step()
        if self.train_model is not state.model:
            self._share_buffers()
        samples, tokens = self._global_counts(state.batch_num_samples, state.batch_num_tokens)
        state.timestamp = state.timestamp.to_next_batch(samples, tokens, time.perf_counter() - start)
        if self.logger.destinations:
            lr = state.optimizers[0].param_groups[0]["lr"]
            self.logger.log_metrics({"train/loss": state.loss.item(), "trainer/lr": lr}, state.step)
        engine.run_event(Event.BATCH_END)

    def _train_microbatch(self, share: float) -> torch.Tensor:
        state, engine = self.state, self.engine
        engine.run_event(Event.BEFORE_FORWARD)
        with autocast(state.precision, self.device):
            state.outputs = self.train_model(state.batch)
        engine.run_event(Event.AFTER_FORWARD)
        engine.run_event(Event.BEFORE_LOSS)
        with autocast(state.precision, self.device):
            state.loss = state.model.loss(state.outputs, state.batch)
        engine.run_event(Event.AFTER_LOSS)
        engine.run_event(Event.BEFORE_BACKWARD)
        loss = state.loss * share if share != 1 else state.loss  # microbatch losses add up to the batch mean
        if state.scaler is not None:
            loss = state.scaler.scale(loss)
        loss.backward(create_graph=any(a.backwards_create_graph for a in state.algorithms))
        engine.run_event(Event.AFTER_BACKWARD)
        return state.loss.detach()

    # -- evaluation ----------------------------------------------------------------------------
    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        """Loss and accuracy on every evaluator, summed over ranks; returns and logs them."""
        state, engine = self.state, self.engine
        if not state.evaluators:
            return {}
        saved = state.batch, state.outputs
        state.model.eval()
        engine.run_event(Event.EVAL_BEFORE_ALL)
        metrics: dict[str, float] = {}
        for evaluator in state.evaluators:
            engine.run_event(Event.EVAL_START)
            totals = torch.zeros(3, dtype=torch.float64, device=self.device)  # loss sum, correct, count
            for batch in evaluator.dataloader:
                state.batch = _to_device(batch, self.device)
                engine.run_event(Event.EVAL_BATCH_START)
                engine.run_event(Event.EVAL_BEFORE_FORWARD)
                with autocast(state.precision, self.device):
                    state.outputs = state.model(state.batch)
                engine.run_event(Event.EVAL_AFTER_FORWARD)
                totals[0] += state.model.loss(state.outputs.float(), state.batch, reduction="sum")
                totals[1] += state.model.num_correct(state.outputs, state.batch)
                totals[2] += _num_samples(state.batch)
                engine.run_event(Event.EVAL_BATCH_END)
            if state.world_size > 1:
                dist.all_reduce(totals)
            loss_sum, correct, count = totals.tolist()
            metrics[f"{evaluator.label}/loss"] = loss_sum / max(count, 1)
            metrics[f"{evaluator.label}/accuracy"] = correct / max(count, 1)
            state.eval_metrics.update(metrics)
            engine.run_event(Event.EVAL_END)
        self.logger.log_metrics(metrics, state.step)
        engine.run_event(Event.EVAL_AFTER_ALL)
        state.model.train()
        state.batch, state.outputs = saved
        self._last_eval_batch = state.step
        return metrics

    # -- collective decisions ------------------------------------------------------------------
    def _should_stop(self, within_epoch: bool = False) -> bool:
        """Stop at max_duration, or when any rank's callback asked to; every rank decides the same."""
        state = self.state
        requested = state.stop_requested
        if state.world_size > 1:
            flag = torch.tensor([float(requested)], device=self.device)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            requested = bool(flag.item())
        state.stop_requested = requested
        if requested:
            return True
        if within_epoch and state.max_duration.unit is TimeUnit.EPOCH:
            return False
        return state.timestamp.reached(state.max_duration)

    def _share_buffers(self) -> None:
        """Give every rank rank 0's buffers (BatchNorm statistics) after each step.

        DDP copies them only at the start of its next forward, so without this each rank's own statistics
        drive what runs outside DDP (SelectiveBackprop's selection pass, evaluation), and a run restarted
        from rank 0's checkpoint would diverge from one that was never stopped. One collective per dtype.
        """
        by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}
        for buffer in self.state.model.buffers():
            by_dtype.setdefault(buffer.dtype, []).append(buffer)
        for buffers in by_dtype.values():
            flat = torch.cat([buffer.detach().reshape(-1) for buffer in buffers])
            dist.broadcast(flat, 0)
            offset = 0
            for buffer in buffers:
                buffer.detach().copy_(flat[offset : offset + buffer.numel()].view_as(buffer))
                offset += buffer.numel()

    def _global_counts(self, samples: int, tokens: int) -> tuple[int, int]:
        if self.state.world_size == 1:
            return samples, tokens
        counts = torch.tensor([samples, tokens], dtype=torch.int64, device=self.device)
        dist.all_reduce(counts)
        return int(counts[0]), int(counts[1])


# -- helpers --------------------------------------------------------------------------------------
def _resolve_device(device: str | torch.device) -> torch.device:
    if device != "auto":
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", torch.cuda.current_device())))
    return torch.device("cpu")


def _as_evaluators(eval_dataloader: Any) -> list[Evaluator]:
    if eval_dataloader is None:
        return []
    if isinstance(eval_dataloader, Evaluator):
        return [eval_dataloader]
    if isinstance(eval_dataloader, list | tuple) and all(isinstance(e, Evaluator) for e in eval_dataloader):
        return list(eval_dataloader)
    return [Evaluator("eval", eval_dataloader)]


def _interval(value: str | Time, name: str) -> Time:
    interval = Time.from_input(value)
    if interval.unit not in (TimeUnit.EPOCH, TimeUnit.BATCH):
        raise ValueError(f"{name} must be in epochs or batches ('1ep', '100ba'), got {interval}")
    return interval


def _every(count: int, interval: Time) -> bool:
    return bool(interval.value) and count % interval.value == 0


def _to_device(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, list | tuple):
        return type(batch)(_to_device(item, device) for item in batch)
    if isinstance(batch, dict):
        return {key: _to_device(value, device) for key, value in batch.items()}
    return batch


def _first_tensor(batch: Any) -> torch.Tensor:
    if isinstance(batch, torch.Tensor):
        return batch
    items = batch.values() if isinstance(batch, dict) else batch
    return next(t for t in items if isinstance(t, torch.Tensor))


def _num_samples(batch: Any) -> int:
    return _first_tensor(batch).shape[0]


def _num_tokens(batch: Any) -> int:
    """Token ids are integer inputs; image batches count no tokens."""
    inputs = _first_tensor(batch)
    return inputs.numel() if not inputs.is_floating_point() and inputs.dim() > 1 else 0


def _split(batch: Any, parts: int) -> list[Any]:
    """Microbatches along the first dimension (fewer than ``parts`` if the batch is smaller)."""
    if parts == 1:
        return [batch]
    if isinstance(batch, torch.Tensor):
        return list(batch.chunk(parts))
    if isinstance(batch, dict):
        chunks = {key: _split(value, parts) for key, value in batch.items()}
        return [dict(zip(chunks, values, strict=True)) for values in zip(*chunks.values(), strict=True)]
    columns = [_split(item, parts) for item in batch]
    return [type(batch)(values) for values in zip(*columns, strict=True)]


@contextlib.contextmanager
def _progress(enabled: bool, state: State) -> Iterator[Any]:
    if not enabled:
        yield _NoBar()
        return
    from tqdm.auto import tqdm

    total = None
    with contextlib.suppress(TypeError, ValueError):
        total = state.max_epochs * state.steps_per_epoch
    if state.max_duration.unit is TimeUnit.BATCH:
        total = int(state.max_duration.value)
    with tqdm(total=total, initial=state.timestamp.batch, unit="ba", dynamic_ncols=True) as bar:
        yield bar


class _NoBar:
    def update(self, n: int) -> None: ...
    def set_postfix(self, **kwargs: Any) -> None: ...
