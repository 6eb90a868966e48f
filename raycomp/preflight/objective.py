"""The sweep's objective against what the run's evaluation computes, which only the built model tells.

Evaluation logs ``eval/loss``, ``eval/accuracy`` for a model with class labels (``RaycompModel.num_correct``), the
model's own torchmetrics (``get_metrics``) and the config's ``eval.metrics``. A ``sweep.metric`` among them is
valid, whoever declared it; one that is not (``eval/accuracy`` of a regression, the default included) is refused
before Ray starts, naming those that are. The direction is checked too where the metric declares it (torchmetrics'
``higher_is_better``; a loss is lower-better): ``eval/mae`` maximised would rank the worst trial best.

A run without a sweep section ranks its checkpoints by ``eval/accuracy``, or by ``eval/loss`` (min) when its model
has no accuracy (``ExperimentConfig.objective``, from what the preflight recorded: ``config/evaluated.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raycomp.base import keys
from raycomp.config.messages import Problem
from raycomp.preflight.probe import Workload, model_label

if TYPE_CHECKING:
    from raycomp.config.schema import ExperimentConfig
    from raycomp.config.sweep import SweepConfig


def evaluated_metrics(workload: Workload) -> dict[str, bool | None]:
    """The names evaluation logs under ``eval/``, each with whether higher is better (None: not declared)."""
    computed: dict[str, bool | None] = {keys.LOSS: False}
    if workload.has_accuracy:
        computed[keys.ACCURACY] = True
    for name, metric in workload.eval_metrics.items():
        higher = getattr(metric, "higher_is_better", None)
        computed[name] = higher if isinstance(higher, bool) else None
    return computed


def objective_problems(sweep: SweepConfig, trial: ExperimentConfig, workload: Workload) -> list[Problem]:
    """``sweep.metric`` and ``sweep.mode`` against what ``trial``'s evaluation computes on ``workload``."""
    metric = sweep.metric
    label, _, name = metric.partition("/")
    if label != keys.EVAL_LABEL:
        return []  # another reported number (time/train_wall_s): not the evaluator's to check
    computed = evaluated_metrics(workload)
    base = name if name in computed else name.split("/")[0]  # a vector metric's elements: eval/<name>/<i>
    if base not in computed:
        shown = ", ".join(f"{label}/{known}" for known in computed)
        if name == keys.ACCURACY:
            label_free = "its num_correct gives None on the eval batch: no class labels"
            why = f"{model_label(trial)} has no accuracy ({label_free})"
            fix = f"set sweep.metric to one of {shown}, with sweep.mode: min for a loss or an error"
        else:
            why = f"the evaluator computes {shown}"
            fix = "name more metrics under eval.metrics, or return them from the model's get_metrics()"
        default = " (the default)" if "metric" not in sweep.model_fields_set else ""
        return [(("sweep", "metric"), f"{metric!r}{default} is not computed: {why} ({fix})")]
    higher = computed[base]
    if higher is None or (sweep.mode == "max") == higher:
        return []
    default_mode = "mode" not in sweep.model_fields_set
    better, wanted = ("higher", "max") if higher else ("lower", "min")
    message = (
        f"is {sweep.mode!r}{' (the default)' if default_mode else ''} but {metric} is better {better}: the sweep would "
        f"rank its worst trials best (set sweep.mode: {wanted})"
    )
    return [(("sweep", "mode"), message)]
