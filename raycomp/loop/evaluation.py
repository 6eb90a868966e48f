"""One evaluation: every evaluator's batches through the model between the EVAL_* events, and its metrics.

Loss and accuracy are summed over ranks here, from the model's ``loss`` and ``num_correct``; a model whose
``num_correct`` gives None (no class labels: a regression) has no ``<label>/accuracy`` at all. An evaluator's
torchmetrics are updated per batch through ``model.update_metric`` and reduced across DDP ranks by
torchmetrics itself: ``compute()`` gathers every rank's state when a process group is initialised, so
every rank (evaluation is collective) gets the same values.
"""

from __future__ import annotations

import torch

from raycomp.base import keys
from raycomp.core.engine import Engine
from raycomp.core.evaluator import Evaluator, metric_values
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State
from raycomp.loop.batching import num_samples, to_device
from raycomp.loop.batchnorm import RecentBatches
from raycomp.loop.distributed import sum_over_ranks


@torch.no_grad()
def evaluate_all(
    state: State, engine: Engine, logger: Logger, device: torch.device, recent_batches: RecentBatches | None = None
) -> dict[str, float]:
    """Every evaluator's metrics, put in ``state.eval_metrics``, logged at the current step and returned.

    With ``recent_batches``, BatchNorm statistics are recomputed from them after EVAL_START, so with the weights
    each evaluator runs (EMA swaps its averages in there). The model is put back in train mode and the training
    batch and outputs are restored afterwards.
    """
    saved = state.batch, state.outputs
    state.model.eval()
    engine.run_event(Event.EVAL_BEFORE_ALL)
    metrics: dict[str, float] = {}
    for evaluator in state.evaluators:
        engine.run_event(Event.EVAL_START)
        if recent_batches is not None:
            with state.precision_context:
                recent_batches.recompute(state.model, forget=False)
        metrics.update(_evaluate_one(state, engine, evaluator, device))
        state.eval_metrics.update(metrics)
        engine.run_event(Event.EVAL_END)
    logger.log_metrics(metrics, state.step)
    if recent_batches is not None:
        recent_batches.forget()
    engine.run_event(Event.EVAL_AFTER_ALL)
    state.model.train()
    state.batch, state.outputs = saved
    return metrics


def _evaluate_one(state: State, engine: Engine, evaluator: Evaluator, device: torch.device) -> dict[str, float]:
    extra = evaluator.bound_metrics(state.model, device)
    for metric in extra.values():
        metric.reset()
    totals = torch.zeros(4, dtype=torch.float64, device=device)  # loss sum, correct, count, samples counted correct
    for batch in evaluator.dataloader:
        state.batch = to_device(batch, device)
        engine.run_event(Event.EVAL_BATCH_START)
        engine.run_event(Event.EVAL_BEFORE_FORWARD)
        with state.precision_context:
            state.outputs = state.model(state.batch)
        engine.run_event(Event.EVAL_AFTER_FORWARD)
        outputs = state.outputs.float()
        totals[0] += state.model.loss(outputs, state.batch, reduction="sum")
        correct = state.model.num_correct(state.outputs, state.batch)
        samples = num_samples(state.batch)
        totals[2] += samples
        if correct is not None:
            totals[1] += correct
            totals[3] += samples
        for metric in extra.values():
            state.model.update_metric(state.batch, outputs, metric)
        engine.run_event(Event.EVAL_BATCH_END)
    loss_sum, correct, count, counted = sum_over_ranks(totals, state.world_size).tolist()
    label = evaluator.label
    if count == 0:  # summed over ranks: every rank raises together, none waits in a collective
        raise ValueError(
            f"evaluator {label!r}: its dataloader yielded no batches (an empty eval set has no loss or accuracy)"
        )
    if counted not in (0, count):  # an accuracy of some batches only would read as the whole set's
        raise ValueError(
            f"evaluator {label!r}: the model's num_correct counted {counted:.0f} of {count:.0f} samples and gave None "
            "for the others; it must count every batch, or none (a model without accuracy)"
        )
    metrics = {f"{label}/{keys.LOSS}": loss_sum / count}
    if counted:
        metrics[f"{label}/{keys.ACCURACY}"] = correct / count
    for name, metric in extra.items():
        metrics.update(metric_values(f"{label}/{name}", metric.compute()))  # collective under DDP
    return metrics
