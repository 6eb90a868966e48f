"""The run's workload, built once on the driver before Ray starts: its model on the CPU and a batch of two from each
split of its data (read by ``config.probe_data``), run forward as training and evaluation run them.

A wrong class count, a dict or tuple output, an empty eval set, a data module whose ``setup`` raises or an image
that does not decode would otherwise fail every trial on its first batch (each retried); here each is one
``WorkloadProblem`` at its config key. The built-in data costs next to nothing: the synthetic set is made with two
samples, and CIFAR-10 and the text sets, whose shapes are fixed, are stood in for by batches of those shapes.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any

import torch

from raycomp.base import keys
from raycomp.base.errors import one_line
from raycomp.config.messages import KeyPath, Problem
from raycomp.core.evaluator import named_metrics
from raycomp.models import ClassifierModel, RaycompModel
from raycomp.models.base import class_labels
from raycomp.models.outputs import classifier_output_problem, described
from raycomp.preflight.call_problems import call_problem
from raycomp.preflight.probe_data import WorkloadProblem, workload_batches

if TYPE_CHECKING:
    from torchmetrics import Metric

    from raycomp.config.schema import ExperimentConfig


@dataclasses.dataclass
class Workload:
    """The model a run trains (built on the CPU), a batch of two from its training and eval data, and how many
    classes the data says it has (None when it does not say): what methods are checked against. ``has_accuracy``
    and ``eval_metrics`` (the model's own torchmetrics and ``eval.metrics``, by name) are what its evaluation logs
    beside ``eval/loss``; ``output_classes`` is a classifier's output width (None for other models)."""

    model: RaycompModel
    train_batch: Any
    eval_batch: Any
    num_classes: int | None = None
    has_accuracy: bool = True
    eval_metrics: dict[str, Metric] = dataclasses.field(default_factory=dict)
    output_classes: int | None = None


def build_workload(config: ExperimentConfig) -> Workload:
    """``config``'s model and a batch of two of each split, checked by one forward each (train mode for the training
    batch, eval mode for the eval one, under ``no_grad``); a ``WorkloadProblem`` saying what is wrong (the model's
    and the data's problems together, when both cannot be built)."""
    failed: list[Problem] = []  # the model's and the data's problems, both: neither hides the other
    try:
        train_batch, eval_batch, classes = workload_batches(config)
    except WorkloadProblem as failure:
        failed += failure.problems
    try:
        model = _model(config)
    except WorkloadProblem as failure:
        failed += failure.problems
    if failed:
        raise WorkloadProblem(*failed)
    workload = Workload(model, train_batch, eval_batch, classes)
    if not any(parameter.requires_grad for parameter in workload.model.parameters()):
        message = f"{model_label(config)} has no parameters to train (an optimizer needs at least one)"
        raise WorkloadProblem((_blamed(config), message))
    with torch.no_grad():
        for split, batch in (("train", train_batch), ("eval", eval_batch)):
            workload.model.train(split == "train")
            outputs = _check_forward(config, workload, split, batch)
        _check_evaluation(config, workload, outputs)
    workload.model.train()
    return workload


def model_label(config: ExperimentConfig) -> str:
    return config.model.class_path or f"the {config.model.name!r} model"


def _model(config: ExperimentConfig) -> RaycompModel:
    section = config.model
    if section.class_path is None:
        from raycomp.config.recipe import build_model_for

        torch.manual_seed(config.seed)
        try:
            return build_model_for(config)
        except Exception as error:  # gpt2_hf without transformers installed, say
            message = f"building {model_label(config)} failed: {one_line(error)}"
            raise WorkloadProblem((("model", "name"), message)) from None
    from raycomp.base.import_path import import_callable
    from raycomp.models import as_raycomp_model

    target = import_callable(section.class_path)
    torch.manual_seed(config.seed)
    try:
        built = target(**section.init_args)
    except Exception as error:
        raise WorkloadProblem(call_problem("model", target, section.class_path, section.init_args, error)) from None
    try:
        return as_raycomp_model(built, f"{section.class_path} returned")
    except TypeError as error:
        raise WorkloadProblem((("model", "class_path"), str(error))) from None


def _check_evaluation(config: ExperimentConfig, workload: Workload, outputs: Any) -> None:
    """What evaluation computes on the eval batch's ``outputs``, as ``raycomp.loop.evaluation`` does: the model's
    ``num_correct`` (None: no accuracy), its own metrics and ``eval.metrics``, each fed the batch once."""
    model, label, blamed = workload.model, model_label(config), _blamed(config)
    batch = workload.eval_batch
    on = f"a batch of {config.data.class_path or f'the {config.data.name!r} data'}'s eval set"
    try:
        workload.has_accuracy = model.num_correct(outputs, batch) is not None
    except Exception as error:
        raise WorkloadProblem((blamed, f"{label}'s num_correct fails on {on}: {one_line(error)}")) from None
    try:
        own = named_metrics(model.get_metrics(is_train=False))
    except Exception as error:
        raise WorkloadProblem((blamed, f"{label}'s get_metrics() fails: {one_line(error)}")) from None
    labels = class_labels(outputs, batch)
    workload.output_classes = int(outputs.shape[-1]) if labels is not None else None
    workload.eval_metrics = {**own, **config.build_eval_metrics()}
    for name, metric in workload.eval_metrics.items():
        where = ("eval", "metrics", name) if name in config.eval.metrics else blamed
        if name in (keys.LOSS, keys.ACCURACY):
            raise WorkloadProblem((where, f"{label}'s get_metrics names a metric {name!r}, which eval/{name} is"))
        try:
            model.update_metric(batch, outputs.float(), copy.deepcopy(metric))
        except Exception as error:
            raise WorkloadProblem((where, f"the eval metric {name!r} fails on {on}: {one_line(error)}")) from None


def _check_forward(config: ExperimentConfig, workload: Workload, split: str, batch: Any) -> Any:
    """One forward of ``batch`` and its loss, as training (or evaluation) runs them; a plain module's output must be
    logits with a class for every label. A ``RaycompModel`` brings its own loss: whatever it accepts is right.
    Returns the outputs."""
    model, label, blamed = workload.model, model_label(config), _blamed(config)
    data_label = config.data.class_path or f"the {config.data.name!r} data"
    on = f"a batch of {data_label}'s {split} set"
    try:
        outputs = model(batch)
    except Exception as error:
        raise WorkloadProblem((blamed, f"{label} fails on {on}: {one_line(error)}")) from None
    if isinstance(model, ClassifierModel):
        targets = batch[1] if isinstance(batch, list | tuple) and len(batch) == 2 else None
        problem = classifier_output_problem(outputs, targets, workload.num_classes)
        if problem:
            raise WorkloadProblem((_classes_key(config), f"{label} on {on}: {problem}"))
    try:
        loss = model.loss(outputs, batch)
    except Exception as error:
        raise WorkloadProblem((blamed, f"{label}'s loss fails on {on}: {one_line(error)}")) from None
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.is_floating_point():
        message = f"{label}'s loss(outputs, batch) gave {described(loss)}; it must be a float scalar"
        raise WorkloadProblem((blamed, message))
    return outputs


def _blamed(config: ExperimentConfig) -> KeyPath:
    """Where a model that cannot run on the data is reported: the user's model, else the user's data, else the name."""
    if config.data.class_path and not config.model.class_path:
        return ("data", "class_path")
    return ("model", "class_path") if config.model.class_path else ("model", "name")


def _classes_key(config: ExperimentConfig) -> KeyPath:
    """Where a model's class count is set: ``model.num_classes``, ``model.init_args.num_classes``, or its path."""
    model = config.model
    if model.class_path is None:
        return ("model", "num_classes")
    return ("model", "init_args", "num_classes") if "num_classes" in model.init_args else ("model", "class_path")
