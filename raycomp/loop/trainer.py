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

from raycomp.base import keys
from raycomp.core.algorithm import Algorithm
from raycomp.core.callback import Callback
from raycomp.core.compiling import compile_mode, compile_model
from raycomp.core.engine import Engine
from raycomp.core.event import Event
from raycomp.core.logger import Logger, LoggerDestination
from raycomp.core.passes import AlgorithmPass
from raycomp.core.precision import Precision, make_grad_scaler
from raycomp.core.scheduled_lr import compile_composer_scheduler
from raycomp.core.schedulers import ComposerScheduler
from raycomp.core.state import Evaluator, State
from raycomp.core.time import Time, TimeUnit
from raycomp.loop.batching import (
    ProgressBar,
    num_samples,
    num_tokens,
    show_progress,
    split_microbatches,
    stop_workers,
    to_device,
)
from raycomp.loop.batchnorm import RecentBatches
from raycomp.loop.checkpoint import CheckpointSaver, load_checkpoint, restore_required_algorithms
from raycomp.loop.distributed import (
    any_rank,
    rank_and_world_size,
    resolve_device,
    share_buffers,
    sum_counts,
    wrap_in_ddp,
)
from raycomp.loop.evaluation import evaluate_all
from raycomp.loop.model import RaycompModel, as_raycomp_model
from raycomp.loop.rng import seed_all, set_rng_state


class Trainer:
    """Train a ``RaycompModel`` with algorithms and callbacks; ``fit()`` runs to ``max_duration``. A plain
    ``nn.Module`` that maps inputs to logits is trained as a classifier by cross-entropy (``ClassifierModel``, as a
    config's ``model.class_path`` is); anything else is refused with a ``TypeError``.

    ``seed`` defaults to a random one, kept in ``state.seed``. ``eval_interval`` and ``save_interval``
    take epochs or batches (``"1ep"``, ``"100ba"``; ``"0ep"`` evaluates only at the end); the final
    state is always evaluated and, with ``save_folder``, saved. Under an initialised
    ``torch.distributed`` process group the model is wrapped in DDP after INIT, so model surgery
    happens before DDP sees the parameters.

    ``schedulers`` takes torch LR schedulers and ``raycomp.core.schedulers`` schedules (functions of the
    State, compiled into a ``ScheduledLR`` per optimizer). As in Composer, all are stepped once per epoch
    when a torch scheduler is among them and once per batch otherwise; ``step_schedulers_every_batch``
    decides instead. ``passes`` are added after the Engine's default passes. ``device="gpu"`` is CUDA;
    ``precision="amp"`` is the best AMP for the device (bf16, or fp16 where the GPU lacks bf16).

    ``compile`` (``True`` or a ``torch.compile`` mode such as ``"reduce-overhead"``) compiles the training
    forward with static shapes (``compile_model``); evaluation stays eager. Give it a loader with
    ``drop_last`` so every batch has one shape.

    Before each evaluation, BatchNorm running statistics are recomputed with the current weights from the last
    ``recompute_batchnorm`` full training batches (``raycomp.loop.batchnorm``; 0: evaluate with the running
    averages, as Composer does).
    """

    def __init__(
        self,
        model: RaycompModel | torch.nn.Module,
        train_dataloader: Iterable,
        max_duration: str | Time,
        eval_dataloader: Iterable | Evaluator | Sequence[Evaluator] | None = None,
        algorithms: Sequence[Algorithm] = (),
        callbacks: Sequence[Callback] = (),
        optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer] | None = None,
        schedulers: _Schedulers | Sequence[_Schedulers] | None = None,
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
        passes: Sequence[AlgorithmPass | tuple[AlgorithmPass, int]] | None = None,
        steps_per_epoch: int | None = None,
        step_schedulers_every_batch: bool | None = None,
        compile: bool | str = False,
        recompute_batchnorm: int = 2,
    ) -> None:
        trained_model = as_raycomp_model(model, "Trainer(model=...) is")  # refused before anything is set up
        schedulers = _as_schedulers(schedulers)
        torch_schedulers = [s for s in schedulers if isinstance(s, torch.optim.lr_scheduler.LRScheduler)]
        if optimizers is None and torch_schedulers:
            raise ValueError("torch schedulers were given without the optimizers they drive")
        if step_schedulers_every_batch is None:  # Composer's rule: a torch scheduler counts in epochs
            step_schedulers_every_batch = not torch_schedulers
        self.step_schedulers_every_batch = step_schedulers_every_batch
        seed = int.from_bytes(os.urandom(4), "little") if seed is None else seed
        seed_all(seed)
        rank, world_size = rank_and_world_size()
        self.device = resolve_device(device)
        self.checkpoint_saver = None
        if save_folder is not None:
            self.checkpoint_saver = CheckpointSaver(save_folder, save_interval, save_num_checkpoints_to_keep)
            callbacks = [*callbacks, self.checkpoint_saver]
        self.state = State(
            model=trained_model,
            max_duration=max_duration,
            train_dataloader=train_dataloader,
            evaluators=_as_evaluators(eval_dataloader),
            grad_accum=grad_accum,
            precision=precision,
            optimizers=optimizers,
            scaler=make_grad_scaler(Precision.parse(precision, self.device), self.device),
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
        checkpoint = load_checkpoint(load_path) if load_path is not None else None
        self._resume_rng = self._restore(checkpoint, load_recreate_required_algorithms, schedulers)
        # after INIT and any re-created surgery, so that DDP registers the final parameters
        find_unused = any(a.find_unused_parameters for a in self.state.algorithms)
        self.train_model = wrap_in_ddp(self.state.model, self.device, world_size, find_unused)
        self._ddp = self.train_model is not self.state.model
        self.state.compile_mode = compile_mode(compile)
        if self.state.compile_mode is not None:
            self.train_model = compile_model(self.train_model, self.state.compile_mode)
        self._last_eval_batch = -1
        self._recent_batches = RecentBatches(self.state.model, recompute_batchnorm)

    def _restore(
        self, checkpoint: dict[str, Any] | None, recreate_required: bool, schedulers: list[_Schedulers]
    ) -> dict[str, Any] | None:
        """Move the model to the device and load ``checkpoint`` into the run, in the one order that works.

        1. Re-create the ``required_on_load`` algorithms the checkpoint needs and the run lacks (or refuse),
           replaying their INIT surgery before the device move, as INIT itself ran, so the weights fit.
        2. Move the model to the device; only then build the default optimizer, over the final parameters,
           and compile the schedules against the optimizers.
        3. Load each algorithm's own state before BEFORE_LOAD, so that there LayerFreezing can re-freeze
           before the optimizers load (step 5 loads it again, which must change nothing).
        4. BEFORE_LOAD: as in Composer, the model and optimizers are built, their saved state not loaded.
        5. Weights, optimizers, schedulers, scaler, timestamp, then algorithm and callback states.
        6. AFTER_LOAD.

        BEFORE_LOAD and AFTER_LOAD fire without a checkpoint too. The saved RNG state is returned, not
        set: ``_epoch_batches`` sets it at the point of the epoch the saved run had reached.
        """
        state, engine = self.state, self.engine
        if checkpoint is not None:
            restore_required_algorithms(checkpoint, state, engine, recreate_required)
        state.model.to(self.device)
        if not state.optimizers:
            # For Trainer(...) used directly (tests, notebooks): a config's run always brings its own optimizer
            # (raycomp.config.recipe). lr 0.1 with momentum 0.9 is the usual SGD for the small CNNs and ResNets raycomp
            # trains, a default that learns rather than a tuned one.
            state.optimizers = [torch.optim.SGD(state.model.parameters(), lr=0.1, momentum=0.9)]
        state.schedulers = _compile_schedulers(schedulers, state)
        if checkpoint is not None:
            state.load_algorithm_states(checkpoint["state"]["algorithms"])
        engine.run_event(Event.BEFORE_LOAD)
        if checkpoint is not None:
            state.load_state_dict(checkpoint["state"])
        engine.run_event(Event.AFTER_LOAD)
        return checkpoint["rng"] if checkpoint is not None else None

    # -- the loop ------------------------------------------------------------------------------
    def fit(self) -> None:
        """Train to ``max_duration``; the DataLoader workers end with it, whether it finished or raised."""
        try:
            self._fit()
        finally:
            state = self.state
            stop_workers([state.train_dataloader, *(evaluator.dataloader for evaluator in state.evaluators)])

    def _fit(self) -> None:
        state, engine = self.state, self.engine
        state.model.train()
        engine.run_event(Event.FIT_START)
        with show_progress(self.progress_bar, state) as bar:
            while not self._should_stop():
                if state.timestamp.batch_in_epoch == 0:
                    engine.run_event(Event.EPOCH_START)
                if self._train_epoch(bar):
                    if state.timestamp.batch_in_epoch == 0:
                        raise ValueError("train_dataloader yielded no batches")
                    state.timestamp = state.timestamp.to_next_epoch()
                    if not self.step_schedulers_every_batch:
                        self._step_schedulers()
                    engine.run_event(Event.EPOCH_END)
                    if self.eval_interval.unit is TimeUnit.EPOCH and _every(state.epoch, self.eval_interval):
                        self.evaluate()
                    engine.run_event(Event.EPOCH_CHECKPOINT)
        if self._last_eval_batch != state.step:
            self.evaluate()
        with state.precision_context:  # a fit without evaluators still ends with statistics of its weights
            self._recent_batches.recompute(state.model)
        engine.run_event(Event.FIT_END)

    def _train_epoch(self, bar: ProgressBar) -> bool:
        """Train the rest of this epoch; True if it reached its end, False if a stop came within it.

        The end is ``steps_per_epoch`` batches, or fewer when the loader runs out first.
        """
        state = self.state
        for batch in self._epoch_batches():
            self._train_batch(batch)
            bar.update(1)
            if self.progress_bar:  # .item() waits for the device, so only for a bar that shows it
                bar.set_postfix(loss=f"{state.loss.item():.4f}", refresh=False)
            if self.eval_interval.unit is TimeUnit.BATCH and _every(state.step, self.eval_interval):
                self.evaluate()
            self.engine.run_event(Event.BATCH_CHECKPOINT)
            if self._should_stop(within_epoch=True):
                return state.timestamp.batch_in_epoch >= state.steps_per_epoch
        return True

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
        while state.timestamp.batch_in_epoch < state.steps_per_epoch:
            self.engine.run_event(Event.BEFORE_DATALOADER)
            batch = next(batches, None)
            if batch is None:  # a loader shorter than steps_per_epoch ends the epoch early
                return
            yield batch

    def _train_batch(self, batch: Any) -> None:
        state, engine = self.state, self.engine
        state.batch = to_device(batch, self.device)
        self._recent_batches.record(state.batch)  # as the loader gave it: SelectiveBackprop prunes it next
        engine.run_event(Event.AFTER_DATALOADER)  # the whole batch: SelectiveBackprop prunes it here
        state.batch_num_samples = num_samples(state.batch)
        state.batch_num_tokens = num_tokens(state.batch)
        engine.run_event(Event.BATCH_START)
        engine.run_event(Event.BEFORE_TRAIN_BATCH)
        start = time.perf_counter()
        for optimizer in state.optimizers:
            optimizer.zero_grad(set_to_none=True)
        whole_batch, total_loss = state.batch, 0.0
        microbatches = split_microbatches(whole_batch, state.grad_accum)
        for index, microbatch in enumerate(microbatches):
            state.batch = microbatch
            last = index == len(microbatches) - 1
            no_sync = self.train_model.no_sync() if not last and self._ddp else None
            with no_sync or contextlib.nullcontext():
                share = num_samples(microbatch) / state.batch_num_samples
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
        if self._ddp:
            share_buffers(state.model)
        samples, tokens = sum_counts(state.batch_num_samples, state.batch_num_tokens, self.device, state.world_size)
        state.timestamp = state.timestamp.to_next_batch(samples, tokens, time.perf_counter() - start)
        if self.step_schedulers_every_batch:  # after the timestamp moves: a ScheduledLR reads it for the next batch
            self._step_schedulers()
        if self.logger.destinations:
            lr = state.optimizers[0].param_groups[0]["lr"]
            # the loss as a tensor: a destination that reads it later (MLflow's, at each report) spares every GPU step
            # a wait for its kernels; the Logger reads it for the others
            self.logger.log_metrics({"train/loss": state.loss.detach(), keys.LR_METRIC: lr}, state.step)
        engine.run_event(Event.BATCH_END)

    def _step_schedulers(self) -> None:
        for scheduler in self.state.schedulers:
            scheduler.step()

    def _train_microbatch(self, share: float) -> torch.Tensor:
        state, engine = self.state, self.engine
        engine.run_event(Event.BEFORE_FORWARD)
        with state.precision_context:
            state.outputs = self.train_model(state.batch)
        engine.run_event(Event.AFTER_FORWARD)
        engine.run_event(Event.BEFORE_LOSS)
        with state.precision_context:
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
    def evaluate(self) -> dict[str, float]:
        """Every evaluator's loss, accuracy and torchmetrics, reduced over ranks (``raycomp.loop.evaluation``);
        put in ``state.eval_metrics``, logged and returned."""
        if not self.state.evaluators:
            return {}
        metrics = evaluate_all(self.state, self.engine, self.logger, self.device, self._recent_batches)
        self._last_eval_batch = self.state.step
        return metrics

    # -- stopping ------------------------------------------------------------------------------
    def _should_stop(self, within_epoch: bool = False) -> bool:
        """Stop at max_duration, or when any rank's callback asked to; every rank decides the same."""
        state = self.state
        state.stop_requested = any_rank(state.stop_requested, self.device, state.world_size)
        if state.stop_requested:
            return True
        if within_epoch and state.max_duration.unit is TimeUnit.EPOCH:
            return False
        return state.timestamp.reached(state.max_duration)


# -- helpers --------------------------------------------------------------------------------------
_Schedulers = torch.optim.lr_scheduler.LRScheduler | ComposerScheduler


def _as_schedulers(schedulers: _Schedulers | Sequence[_Schedulers] | None) -> list[_Schedulers]:
    if schedulers is None:
        return []
    return list(schedulers) if isinstance(schedulers, list | tuple) else [schedulers]


def _compile_schedulers(schedulers: list[_Schedulers], state: State) -> list[torch.optim.lr_scheduler.LRScheduler]:
    """Torch schedulers as given; each raycomp schedule as one ``ScheduledLR`` per optimizer."""
    compiled = []
    for scheduler in schedulers:
        if isinstance(scheduler, torch.optim.lr_scheduler.LRScheduler):
            compiled.append(scheduler)
        else:
            compiled += [compile_composer_scheduler(scheduler, state, optimizer) for optimizer in state.optimizers]
    return compiled


def _as_evaluators(eval_dataloader: Any) -> list[Evaluator]:
    """Evaluators as given; a plain dataloader becomes the ``eval`` evaluator with the model's eval metrics."""
    if eval_dataloader is None:
        return []
    if isinstance(eval_dataloader, Evaluator):
        return [eval_dataloader]
    if isinstance(eval_dataloader, list | tuple) and all(isinstance(e, Evaluator) for e in eval_dataloader):
        return list(eval_dataloader)
    return [Evaluator(keys.EVAL_LABEL, eval_dataloader)]


def _interval(value: str | Time, name: str) -> Time:
    interval = Time.from_input(value)
    if interval.unit not in (TimeUnit.EPOCH, TimeUnit.BATCH):
        raise ValueError(f"{name} must be in epochs or batches ('1ep', '100ba'), got {interval}")
    return interval


def _every(count: int, interval: Time) -> bool:
    return bool(interval.value) and count % interval.value == 0
