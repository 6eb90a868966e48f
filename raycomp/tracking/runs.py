"""The lifecycle of tracked runs: the only code that creates or ends MLflow runs.

One parent run per sweep or find, a child run per trial (``trial_runs``), one run per training, each opened and ended
by a context manager whose exit decides the run's status once: FAILED on an exception, KILLED on Ctrl-C (or a trial Tune
stopped), else FINISHED. Runs are found again by tags, not by process state: a resumed sweep or training reopens
its run (``raycomp.run_key``), and a restarted or restored trial its child (``raycomp.trial_id`` under
``mlflow.parentRunId``), so retries append to the run they belong to.

The store's modules (and so MLflow) are imported by the functions that talk to a store, so that a sweep, training
or find with tracking off runs where MLflow is not installed (a lent GPU machine: bench/gpu_check.sh).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import yaml

from raycomp.base import keys
from raycomp.base.errors import one_line
from raycomp.config import ExperimentConfig
from raycomp.tracking.experiment_page import share_runs_view
from raycomp.tracking.ref import RunRef
from raycomp.tracking.search import running_children, tag_filter

if TYPE_CHECKING:
    from mlflow import MlflowClient

SWEEP, TRAIN, TRIAL = keys.SWEEP_KIND, keys.TRAIN_KIND, keys.TRIAL_KIND
RUNNING, FINISHED, FAILED, KILLED = "RUNNING", "FINISHED", "FAILED", "KILLED"
CONFIG_FILE = "config.yaml"


@dataclasses.dataclass
class TrackedRun:
    """A sweep's or training's run; the block sets ``status`` to end it otherwise than FINISHED."""

    ref: RunRef
    status: str = FINISHED


@contextmanager
def sweep_run(
    config: ExperimentConfig, experiment_file: str | None, *, resume: bool, extend: bool = False
) -> Iterator[TrackedRun | None]:
    """The sweep's parent run (reopened if ``resume`` finds an unfinished one, or with ``extend`` a
    finished one, whose ``config.yaml`` then becomes the extended config); None with tracking off.

    Raises ``TrackingUnavailable`` at entry when the store does not answer.
    """
    if not config.tracking.enabled:
        yield None
        return
    from raycomp.tracking.store import make_client

    again = resume or extend  # a continued sweep keeps its one parent run, finished or not
    ref = open_top_level(config, SWEEP, experiment_file, reopen=again, reopen_finished=again, new_config=extend)
    share_runs_view(make_client(ref.tracking_uri), ref, SWEEP, *config.objective)  # the page the CLI prints
    with ended_by_its_block(TrackedRun(ref)) as run:
        yield run


@contextmanager
def train_run(
    config: ExperimentConfig, experiment_file: str | None, *, resumed_from: str | None = None
) -> Iterator[TrackedRun | None]:
    """The training's run, reopened while the latest of the same name is unfinished; None with tracking off.

    ``resumed_from`` (``--resume-from``'s reference) is recorded as a tag. Raises ``TrackingUnavailable``
    at entry when the store does not answer.
    """
    if not config.tracking.enabled:
        yield None
        return
    from raycomp.tracking.client import BatchedClient
    from raycomp.tracking.store import make_client

    ref = open_top_level(config, TRAIN, experiment_file, reopen=True)
    share_runs_view(make_client(ref.tracking_uri), ref, TRAIN, *config.objective)
    if resumed_from:
        BatchedClient(ref).set_tags({keys.RESUMED_FROM_TAG: resumed_from})
    with ended_by_its_block(TrackedRun(ref)) as run:
        yield run


# ---- opening and ending ----------------------------------------------------------------------------------


def open_top_level(
    config: ExperimentConfig,
    kind: str,
    experiment_file: str | None,
    *,
    reopen: bool,
    reopen_finished: bool = False,
    new_config: bool = False,
    reopen_empty: bool = False,
) -> RunRef:
    """A tagged run holding the resolved config (and, for a training, its params); ``reopen`` continues the latest
    unfinished run of the same storage path and name instead (``reopen_finished``: finished too; ``new_config``: its
    config.yaml replaced; ``reopen_empty``: an unfinished one without a child run, a failed attempt taken over)."""
    from raycomp.tracking.params import environment_tags, log_config
    from raycomp.tracking.store import open_experiment, tracking_uri

    client, experiment_id = open_experiment(config)
    uri, key = tracking_uri(config), config.layout.run_key(kind)
    if reopen or reopen_empty:
        previous = find_run(client, experiment_id, {keys.RUN_KEY_TAG: key})
        unfinished = previous is not None and previous.info.status != FINISHED
        empty = unfinished and not find_run(client, experiment_id, {keys.PARENT_TAG: previous.info.run_id})
        if previous is not None and ((reopen and (reopen_finished or unfinished)) or (reopen_empty and empty)):
            client.update_run(previous.info.run_id, status=RUNNING)
            if new_config:  # the config it now runs (the old one is in git or in its trials' params)
                _log_config_file(client, previous.info.run_id, config)
            return RunRef(uri, experiment_id, previous.info.run_id)
    tags = {**environment_tags(experiment_file), keys.RUN_KEY_TAG: key, keys.KIND_TAG: kind}
    run_id = client.create_run(experiment_id, tags=tags, run_name=config.name).info.run_id
    _log_config_file(client, run_id, config)
    if kind == TRAIN:
        log_config(client, run_id, config)
    return RunRef(uri, experiment_id, run_id)


def _log_config_file(client: MlflowClient, run_id: str, config: ExperimentConfig) -> None:
    from raycomp.tracking.params import public_config

    client.log_text(run_id, yaml.safe_dump(public_config(config), sort_keys=False), CONFIG_FILE)


@contextmanager
def ended_by_its_block(run: TrackedRun) -> Iterator[TrackedRun]:
    """``run`` ended as its block ends: KILLED on Ctrl-C (its RUNNING children too), FAILED on an error."""
    try:
        yield run
    except KeyboardInterrupt:
        run.status = KILLED
        raise
    except BaseException:
        run.status = FAILED
        raise
    finally:
        if run.status == KILLED:
            _end_running_children(run.ref)
        end_run(run.ref, run.status)


def _end_running_children(parent: RunRef) -> None:
    """Ends KILLED the trial runs an interrupted sweep or find left RUNNING. A trial ends its own run when Tune
    stops it, but Ray kills a trial's process at the driver's exit, and one it killed first left its run RUNNING
    (until a ``--resume`` reopened it). Never raises: the store may be what failed."""
    from raycomp.tracking.store import make_client

    try:
        running = running_children(make_client(parent.tracking_uri), parent.experiment_id, parent.run_id)
    except Exception:  # nothing to add: the store's failure was said where it happened
        return
    for run_id, _ in running:
        end_run(RunRef(parent.tracking_uri, parent.experiment_id, run_id), KILLED)


def end_run(ref: RunRef, status: str) -> bool:
    """Marks the run ended; never raises (it runs while a failure is handled), says so if the store refused."""
    from raycomp.tracking.store import make_client

    try:
        make_client(ref.tracking_uri).set_terminated(ref.run_id, status=status)
        return True
    except Exception as error:
        print(f"raycomp: could not mark MLflow run {ref.run_id} {status}: {one_line(error)}", file=sys.stderr)
        return False


def find_run(client: MlflowClient, experiment_id: str, tags: Mapping[str, str]) -> Any:
    """The latest run of ``experiment_id`` with all of ``tags``, or None."""
    runs = client.search_runs([experiment_id], tag_filter(tags), max_results=1, order_by=["attributes.start_time DESC"])
    return runs[0] if runs else None
