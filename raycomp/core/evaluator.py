"""Evaluators: a labelled eval dataloader and the torchmetrics it computes beside loss and accuracy.

As in Composer, an evaluator's metrics come from ``model.get_metrics(is_train=False)``, chosen by
``metric_names`` (regexes); raycomp also takes torchmetrics objects directly (``metrics=``), which is
what a config's ``eval.metrics`` builds. Every evaluator also computes ``{label}/loss`` from the model's own
``loss``, and ``{label}/accuracy`` from its ``num_correct`` when it has one (a regression has none).
torchmetrics is imported only where a metric is built by name, so the core stays light to import.
"""

from __future__ import annotations

import copy
import difflib
import importlib
import inspect
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch

from raycomp.base import keys

if TYPE_CHECKING:
    from torchmetrics import Metric


class Evaluator:
    """``label``'s dataloader and its metrics, logged as ``{label}/loss``, ``{label}/accuracy`` (a classifier's),
    ``{label}/<name>``.

    ``metric_names`` picks from ``model.get_metrics(is_train=False)`` by regex, case-insensitive, as in Composer
    (None: all of them; a pattern matching none is an error, not a silently missing metric). ``metrics`` adds
    torchmetrics objects, named by their key in a mapping, else by class name. Each evaluator computes on its
    own deep copies, so two evaluators never share a metric's state.
    """

    def __init__(
        self,
        label: str,
        dataloader: Iterable,
        metric_names: Sequence[str] | None = None,
        metrics: Metric | Sequence[Metric] | Mapping[str, Metric] | None = None,
    ) -> None:
        self.label = label
        self.dataloader = dataloader
        self.metric_names = None if metric_names is None else list(metric_names)
        self.metrics = named_metrics(metrics)
        self._bound: dict[str, Metric] | None = None

    def __repr__(self) -> str:
        return f"Evaluator({self.label!r}, metric_names={self.metric_names!r}, metrics={list(self.metrics)!r})"

    def bound_metrics(self, model: torch.nn.Module, device: torch.device) -> dict[str, Metric]:
        """This evaluator's metrics for ``model``, chosen and copied once, on ``device``."""
        if self._bound is None:
            model_metrics = model.get_metrics(is_train=False) if hasattr(model, "get_metrics") else {}
            chosen = {**select_metrics(named_metrics(model_metrics), self.metric_names), **self.metrics}
            for name in chosen:
                if name in (keys.LOSS, keys.ACCURACY):
                    raise ValueError(f"evaluator {self.label!r}: a metric may not be named {name!r} (always computed)")
            self._bound = {name: copy.deepcopy(metric) for name, metric in chosen.items()}
        for metric in self._bound.values():
            metric.to(device)
        return self._bound


def named_metrics(metrics: Any) -> dict[str, Metric]:
    """A metric, a sequence of them (named by class) or a mapping (a ``MetricCollection`` too) as ``{name: metric}``."""
    if metrics is None:
        return {}
    if isinstance(metrics, Mapping | torch.nn.ModuleDict):
        return dict(metrics.items())
    if not isinstance(metrics, Sequence):
        metrics = [metrics]
    named: dict[str, Metric] = {}
    for metric in metrics:
        name = type(metric).__name__
        if name in named:
            raise ValueError(f"two metrics are named {name!r}: give them as a mapping {{name: metric}}")
        named[name] = metric
    return named


def select_metrics(metrics: Mapping[str, Metric], patterns: Sequence[str] | None) -> dict[str, Metric]:
    """The metrics whose name matches any of ``patterns`` (``re.search``, ignoring case); all for None."""
    if patterns is None:
        return dict(metrics)
    unmatched = [p for p in patterns if not any(re.search(p, name, re.IGNORECASE) for name in metrics)]
    if unmatched:
        raise ValueError(f"metric_names {unmatched} match none of the model's eval metrics {sorted(metrics)}")
    return {name: m for name, m in metrics.items() if any(re.search(p, name, re.IGNORECASE) for p in patterns)}


def metric_values(name: str, value: Any) -> dict[str, float]:
    """A computed metric as floats: a scalar under ``name``, a vector per element, a dict per key."""
    if isinstance(value, Mapping):
        return {key: number for k, v in value.items() for key, number in metric_values(f"{name}/{k}", v).items()}
    if isinstance(value, torch.Tensor) and value.numel() != 1:
        return {f"{name}/{index}": float(item) for index, item in enumerate(value.flatten().tolist())}
    return {name: float(value)}


def build_metric(class_name: str, arguments: Mapping[str, Any], num_classes: int | None = None) -> Metric:
    """A torchmetrics metric by class name (``MulticlassF1Score``; a dotted path for one of your own).

    ``num_classes`` fills the argument of that name when the class takes it and ``arguments`` leave it out.
    Raises ValueError, in a config's terms, for an unknown class or arguments the class refuses.
    """
    import torchmetrics

    cls = _metric_class(class_name)
    if not (isinstance(cls, type) and issubclass(cls, torchmetrics.Metric)):
        raise ValueError(f"{class_name!r} is not a torchmetrics Metric class (e.g. MulticlassAccuracy, F1Score)")
    arguments = dict(arguments)
    takes_classes = "num_classes" in inspect.signature(cls).parameters
    if num_classes is not None and takes_classes and "num_classes" not in arguments:
        arguments["num_classes"] = num_classes
    try:
        return cls(**arguments)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{class_name}({_shown(arguments)}) failed: {error}") from None


def _metric_class(class_name: str) -> Any:
    if "." in class_name:
        module, _, attribute = class_name.rpartition(".")
        try:
            return getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as error:
            raise ValueError(f"cannot import {class_name!r}: {error}") from None
    import torchmetrics
    import torchmetrics.classification

    namespaces = (torchmetrics.classification, torchmetrics)
    for namespace in namespaces:
        if hasattr(namespace, class_name):
            return getattr(namespace, class_name)
    names = [name for namespace in namespaces for name in getattr(namespace, "__all__", ())]
    close = difflib.get_close_matches(class_name, names, n=1)
    hint = f"did you mean {close[0]!r}?" if close else "e.g. MulticlassAccuracy, MulticlassF1Score"
    raise ValueError(f"{class_name!r} is not a torchmetrics class ({hint})")


def _shown(arguments: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in arguments.items())
