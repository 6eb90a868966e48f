"""A Ray Tune sweep of an experiment: a baseline arm plus the method's search space, one trial per sample.

Tune launches Train: each trial is a function that turns its sample into an experiment config and
either trains it in its own process (``scaling.num_workers: 0``, Tune's checkpoints) or runs a
``TorchTrainer`` for it (``num_workers >= 1``, Train's checkpoints, named after the trial so a
restored sweep resumes it). The trial's driver then holds only a ``trial_slot``, not a CPU its
workers need. This module is the one place a sweep section becomes Tune search-space objects: a grid
over arms for random search, or the method's space behind a baseline-first wrapper for Optuna.
"""

from __future__ import annotations

import copy
import itertools
import math
import os
from collections.abc import Mapping
from typing import Any

import ray
from ray import tune
from ray.tune.schedulers import AsyncHyperBandScheduler, FIFOScheduler, TrialScheduler
from ray.tune.search import Searcher

from raycomp.config import ExperimentConfig, SearchDomain, SweepConfig
from raycomp.launch.runner import TRIAL_SLOT, torch_trainer
from raycomp.launch.worker import run_from_checkpoint
from raycomp.results import WALL, TrialRecord

BASELINE, METHOD = "baseline", "method"
ITERATION = "training_iteration"  # one iteration = one report = one evaluation


# ---- search space ----------------------------------------------------------------------------------------


def tune_domain(domain: SearchDomain) -> Any:
    """A Tune sampler for one non-grid domain (grids are expanded into arms by ``sweep_arms``)."""
    samplers = {
        "choice": lambda values: tune.choice(list(values)),
        "uniform": lambda values: tune.uniform(*values),
        "loguniform": lambda values: tune.loguniform(*values),
        "randint": lambda values: tune.randint(*values),
    }
    return samplers[domain.kind](domain.values)


def sweep_arms(sweep: SweepConfig) -> list[dict[str, Any]]:
    """The arms Tune grids over: the baseline once, then every grid combination ``num_samples`` times.

    Random domains stay Tune samplers inside each method arm; Tune resolves them per trial. Expanding
    the grid here keeps the baseline out of the ``num_samples`` repetition.
    """
    grids = {path: domain.values for path, domain in sweep.space.items() if domain.kind == "grid"}
    samplers = {path: tune_domain(domain) for path, domain in sweep.space.items() if domain.kind != "grid"}
    arms = [baseline_arm(sweep)] if sweep.baseline else []
    for combination in itertools.product(*grids.values()):
        for _ in range(sweep.num_samples):
            overrides = {**dict(zip(grids, combination, strict=True)), **copy.deepcopy(samplers)}
            arms.append({"variant": METHOD, "overrides": overrides})
    return arms


def trial_experiment(base: ExperimentConfig, arm: Mapping[str, Any]) -> ExperimentConfig:
    """The experiment one trial trains: the baseline drops the swept algorithms (all, if none is swept)."""
    if arm["variant"] == BASELINE:
        swept = base.sweep.swept_algorithms() if base.sweep else []
        return base.without_algorithms(swept or list(base.algorithms))
    return base.with_overrides(arm["overrides"])


def baseline_arm(sweep: SweepConfig) -> dict[str, Any]:
    # The baseline ignores overrides; its None values only give Tune's table the same columns for every arm.
    return {"variant": BASELINE, "overrides": dict.fromkeys(sweep.space)}


class BaselineFirst(Searcher):
    """A search algorithm (e.g. Optuna) over the method arm that suggests the baseline arm first, once.

    The wrapped searcher never sees the baseline trial, so the baseline neither takes one of its
    samples nor teaches it anything about the method's arguments.
    """

    def __init__(self, searcher: Searcher, baseline: dict[str, Any]):
        super().__init__(metric=searcher.metric, mode=searcher.mode)
        self.searcher, self.baseline = searcher, baseline
        self.baseline_trial: str | None = None

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec: Any) -> bool:
        self._metric, self._mode = metric, mode
        return self.searcher.set_search_properties(metric, mode, config, **spec)

    def suggest(self, trial_id: str) -> dict | None:
        if self.baseline_trial is None:
            self.baseline_trial = trial_id
            return {"arm": copy.deepcopy(self.baseline)}
        return self.searcher.suggest(trial_id)

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        if trial_id != self.baseline_trial:
            self.searcher.on_trial_result(trial_id, result)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        if trial_id != self.baseline_trial:
            self.searcher.on_trial_complete(trial_id, result=result, error=error)

    # Tune saves a wrapper's state (this) and the wrapped searcher's (its own files) separately.
    def get_state(self) -> dict[str, Any]:
        return {"baseline_trial": self.baseline_trial, "baseline": self.baseline}

    def set_state(self, state: dict[str, Any]) -> None:
        self.baseline_trial, self.baseline = state["baseline_trial"], state["baseline"]


def search_space(config: ExperimentConfig) -> tuple[dict[str, Any], Any, int]:
    """Tune's ``param_space``, search algorithm and ``num_samples`` for the sweep.

    Random search grids over the arms (``sweep_arms``); a search algorithm gets the method arm's
    space and suggests the baseline first (``BaselineFirst``), so the baseline counts as one sample.
    """
    sweep = config.sweep or SweepConfig()
    if sweep.search_alg != "optuna":
        from ray.tune.search import BasicVariantGenerator

        searcher = BasicVariantGenerator(random_state=config.seed)  # the same samples on every run of the file
        return {"arm": tune.grid_search(sweep_arms(sweep))}, searcher, 1
    from ray.tune.search.optuna import OptunaSearch

    space = {"arm": {"variant": METHOD, "overrides": {p: tune_domain(d) for p, d in sweep.space.items()}}}
    searcher: Searcher = OptunaSearch(seed=config.seed)
    if not sweep.baseline:
        return space, searcher, sweep.num_samples
    return space, BaselineFirst(searcher, baseline_arm(sweep)), sweep.num_samples + 1


# ---- the trial -------------------------------------------------------------------------------------------


class TuneReporter:
    """Reports a local-mode trial through ``tune.report``; Tune persists the checkpoint in the trial folder."""

    def report(self, metrics: dict[str, Any], checkpoint_dir: os.PathLike | None) -> None:
        checkpoint = tune.Checkpoint.from_directory(str(checkpoint_dir)) if checkpoint_dir else None
        tune.report(metrics, checkpoint=checkpoint)


def run_trial(trial_config: dict[str, Any], base: dict[str, Any], tracking: dict[str, str] | None = None) -> None:
    """One Tune trial: train the arm's experiment, resuming from its latest checkpoint when restored.

    With ``tracking`` (the sweep's parent run) the trial opens its child run, which its rank 0 logs to,
    and ends it FINISHED or FAILED; a trial the scheduler stops is ended KILLED by ``CloseTrialRuns``.
    """
    arm = trial_config["arm"]
    config = trial_experiment(ExperimentConfig.from_dict(base, source="<sweep base>"), arm)
    extra = {"variant": arm["variant"]}
    child = None
    if tracking is not None:
        from raycomp.tracking import RunRef, start_trial_run

        child = start_trial_run(RunRef(**tracking), tune.get_context().get_trial_id(), arm["variant"], config)
        extra["mlflow_run_id"] = child.run_id
    try:
        _train_trial(config, extra, child.to_dict() if child else None)
    except BaseException as error:  # Tune ends a trial it stops by raising SystemExit(0) in tune.report
        if child is not None:
            from raycomp.tracking import close_trial_run

            close_trial_run(child, failed=not isinstance(error, SystemExit) or bool(error.code))
        raise
    if child is not None:
        from raycomp.tracking import end_run

        end_run(child, "FINISHED")


def _train_trial(config: ExperimentConfig, extra: dict[str, Any], tracking: dict[str, str] | None) -> None:
    if config.scaling.num_workers == 0:
        device = "cuda" if config.scaling.use_gpu else "cpu"
        extra = {**extra, "workers": 0}
        checkpoint = tune.get_checkpoint()
        run_from_checkpoint(config, TuneReporter(), checkpoint, device=device, extra_metrics=extra, tracking=tracking)
        return
    from ray.tune.integration.ray_train import TuneReportCallback

    context = tune.get_context()
    storage = os.path.join(config.resolved_storage_path(), config.name, "train")
    trainer = torch_trainer(
        config,
        context.get_trial_id(),
        storage,
        run_callbacks=[TuneReportCallback()],
        extra_metrics=extra,
        loop_options={"tracking": tracking},
    )
    trainer.fit()


class CloseTrialRuns(tune.Callback):
    """Ends the MLflow run of each trial that ended without ending it: FAILED on error, KILLED when stopped.

    A trial whose process died, or a multi-worker trial the scheduler stopped, never ends its own run.
    """

    def __init__(self, parent: dict[str, str]):
        self.parent = parent

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._close(trial, failed=False)

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._close(trial, failed=True)

    def _close(self, trial: Any, failed: bool) -> None:
        from raycomp.tracking import RunRef, close_trial_run, find_trial_run

        try:
            child = find_trial_run(RunRef(**self.parent), trial.trial_id)
        except Exception:  # the store is down: the trial reported its own failures already
            return
        if child is not None:
            close_trial_run(child, failed=failed, only_if_running=True)


def trial_resources(config: ExperimentConfig) -> dict[str, float]:
    """What a trial's own process holds: the worker's CPU/GPU in local mode, else only a trial slot."""
    scaling = config.scaling
    if scaling.num_workers == 0:
        return {"CPU": scaling.cpus_per_worker, "GPU": scaling.worker_gpus}
    return {"CPU": 0, TRIAL_SLOT: 1}


def concurrent_trials(config: ExperimentConfig, resources: Mapping[str, float]) -> int:
    """``sweep.max_concurrent_trials``, or as many trials as the cluster's CPUs (and GPUs) fit at once."""
    if config.sweep and config.sweep.max_concurrent_trials:
        return config.sweep.max_concurrent_trials
    scaling = config.scaling
    workers = max(1, scaling.num_workers)
    fit = math.floor(resources.get("CPU", 1) / (workers * scaling.cpus_per_worker))
    if scaling.use_gpu:
        fit = min(fit, math.floor(resources.get("GPU", 0) / (workers * scaling.worker_gpus)))
    return max(1, fit)


# ---- the Tuner -------------------------------------------------------------------------------------------


class _KeepBaseline(AsyncHyperBandScheduler):
    """ASHA that never stops the baseline early: every speed-up is measured against its full run."""

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        decision = super().on_trial_result(tune_controller, trial, result)
        if trial.config.get("arm", {}).get("variant") == BASELINE and not result.get("finished"):
            return TrialScheduler.CONTINUE
        return decision


def build_scheduler(sweep: SweepConfig) -> TrialScheduler:
    if sweep.scheduler is None or sweep.scheduler.name == "fifo":
        return FIFOScheduler()
    options = sweep.scheduler
    return _KeepBaseline(
        time_attr=ITERATION,
        grace_period=options.grace_period,
        reduction_factor=options.reduction_factor,
        max_t=options.max_t or 10_000,
    )


def progress_reporter(sweep: SweepConfig) -> tune.CLIReporter:
    """Tune's live table: arm, swept values, the sweep's metric, train loss, epoch and training seconds."""
    parameters = {"arm/variant": "arm"}
    parameters.update({f"arm/overrides/{path}": path.split(".")[-1] for path in sweep.space})
    return tune.CLIReporter(
        metric_columns={
            sweep.metric: sweep.metric.split("/")[-1],
            "train/loss": "loss",
            "epoch": "ep",
            WALL: "train s",
        },
        parameter_columns=parameters,
        max_report_frequency=10,
    )


def make_trainable(config: ExperimentConfig, tracking: dict[str, str] | None = None) -> Any:
    trainable = tune.with_parameters(run_trial, base=config.to_dict(), tracking=tracking)
    return tune.with_resources(trainable, trial_resources(config))


def build_tuner(
    config: ExperimentConfig, callbacks: list[Any] | None = None, tracking: dict[str, str] | None = None
) -> tune.Tuner:
    """The Tuner for ``config``'s sweep (no ``sweep`` section: the baseline and the config as written).

    ``tracking`` is the sweep's MLflow parent run (a ``RunRef`` dict): each trial logs a child run under it.
    """
    sweep = config.sweep or SweepConfig()
    cluster = ray.cluster_resources()
    if config.scaling.num_workers > 0 and cluster.get(TRIAL_SLOT, 0) < 1:
        raise RuntimeError(
            f"The Ray cluster declares no '{TRIAL_SLOT}' resource, which each multi-worker trial's driver holds; "
            f"start the head with --resources='{{\"{TRIAL_SLOT}\": 8}}' (cluster.yaml does)"
        )
    param_space, searcher, num_samples = search_space(config)
    if tracking is not None:
        callbacks = [*(callbacks or []), CloseTrialRuns(tracking)]
    return tune.Tuner(
        make_trainable(config, tracking),
        param_space=param_space,
        tune_config=tune.TuneConfig(
            metric=sweep.metric,
            mode=sweep.mode,
            scheduler=build_scheduler(sweep),
            search_alg=searcher,
            num_samples=num_samples,
            max_concurrent_trials=concurrent_trials(config, cluster),
            reuse_actors=config.scaling.num_workers == 0,
            trial_dirname_creator=lambda trial: trial.trial_id,
        ),
        run_config=tune.RunConfig(
            name=config.name,
            storage_path=config.resolved_storage_path(),
            callbacks=callbacks,
            progress_reporter=progress_reporter(sweep),
            verbose=1,  # the table only; each result in full is in the trial folders
            failure_config=tune.FailureConfig(max_failures=0),  # retries happen inside the TorchTrainer
        ),
    )


def restore_tuner(config: ExperimentConfig, tracking: dict[str, str] | None = None) -> tune.Tuner:
    """The interrupted sweep at ``storage_path/name``: unfinished trials resume, finished ones stay.

    Tune restores the callbacks it saved with the sweep, ``CloseTrialRuns`` among them.
    """
    path = os.path.join(config.resolved_storage_path(), config.name)
    if not tune.Tuner.can_restore(path):
        raise FileNotFoundError(f"No sweep to resume at {path} (run without --resume to start one)")
    return tune.Tuner.restore(path, trainable=make_trainable(config, tracking), resume_unfinished=True)


def trial_records(results: tune.ResultGrid) -> list[TrialRecord]:
    """Every trial's arm, status and full report history, baseline first."""
    records = []
    for result in results:
        history = result.metrics_dataframe.to_dict("records") if result.metrics_dataframe is not None else []
        arm = (result.config or {}).get("arm") or {"variant": (history[-1] if history else {}).get("variant", "?")}
        trial_id = (result.metrics or {}).get("trial_id") or os.path.basename(result.path)
        status = _status(result, history)
        error = _error_line(result.error) if result.error else None
        overrides = {path: value for path, value in arm.get("overrides", {}).items() if value is not None}
        records.append(TrialRecord(trial_id, arm["variant"], overrides, status, history, error))
    records.sort(key=lambda record: record.variant != BASELINE)
    return records


def unfinished(results: tune.ResultGrid) -> int:
    """Trials neither finished, stopped by the scheduler, nor failed: a Ctrl-C left them for ``--resume``."""
    return sum(1 for result in results if not result.error and not (result.metrics or {}).get("done"))


def _status(result: tune.Result, history: list[dict[str, Any]]) -> str:
    if result.error:
        return "ERROR"
    if history and history[-1].get("finished"):
        return "TERMINATED"
    # Tune marks the last result of a trial that ended (or that its scheduler stopped) done.
    return "STOPPED" if (result.metrics or {}).get("done") else "INTERRUPTED"


def _error_line(error: BaseException) -> str:
    """The error that ended a trial on one line: the trial's own exception, not Ray's wrapper around it."""
    cause = getattr(error, "cause", None) or error  # a RayTaskError carries the exception the trial raised
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    text = f"{type(cause).__name__}: {' | '.join(lines)}"
    return text if len(text) <= 500 else text[:497] + "..."
