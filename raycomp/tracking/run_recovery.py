"""Trial runs that a dead process or an MLflow outage left RUNNING, ended once it is known how their trials
ended (``close_orphaned_run``: Tune saw the trial end; ``finish_open_trial_runs``: the store answers again, at a
sweep's end or its ``--resume``). They end through ``runs.end_run``, as every run does."""

from __future__ import annotations

from collections.abc import Iterable

from raycomp.base import keys
from raycomp.config import ExperimentConfig
from raycomp.tracking.client import BatchedClient
from raycomp.tracking.ref import RunRef
from raycomp.tracking.runs import FAILED, FINISHED, KILLED, RUNNING, end_run, find_run
from raycomp.tracking.search import running_children
from raycomp.tracking.store import make_client


def close_orphaned_run(
    parent: RunRef, trial_id: str, *, failed: bool, finished: bool = False, run_id: str | None = None
) -> None:
    """Ends a trial's child run that is still RUNNING because its process never did (it died, or a
    multi-worker trial was stopped from outside): FAILED if ``failed``, FINISHED if ``finished`` (Tune's
    last result says it trained to its end), else KILLED. Never raises: the store may be down.

    ``run_id`` is the run the trial's reports named: read directly, where a search by tags costs the store a
    scan of the experiment's runs at every trial's end (quadratic in the trials of a sweep)."""
    try:
        client = make_client(parent.tracking_uri)
        if run_id is not None:
            run = client.get_run(run_id)
        else:
            run = find_run(client, parent.experiment_id, {keys.PARENT_TAG: parent.run_id, keys.TRIAL_TAG: trial_id})
    except Exception:  # the store is down: the trial reported its own failures already
        return
    if run is not None and run.info.status == RUNNING:
        status = FAILED if failed else FINISHED if finished else KILLED
        end_run(RunRef(parent.tracking_uri, parent.experiment_id, run.info.run_id), status)


def finish_open_trial_runs(parent: RunRef, finished_trial_ids: Iterable[str], config: ExperimentConfig) -> int:
    """What an MLflow outage left undone, done once the store answers again (at a sweep's end, and on each
    ``--resume``): the metric points trials spilled to ``unsent_metrics/`` are sent to their runs, and the runs
    of trials that trained to their end but could not end their run are ended FINISHED. A run whose points
    the store still refuses stays as it is for the next time. Never raises; returns how many runs it ended.

    Only those runs are read: the store is asked for the children still RUNNING, a page at a time, and the
    spilled files name their own runs. Reading every child (as before) held the store's whole record of a sweep
    in the driver's memory at its end, in one page of at most 10,000."""
    try:
        running = running_children(make_client(parent.tracking_uri), parent.experiment_id, parent.run_id)
    except Exception:  # still down: the next --resume tries again (no spilled file waits out its timeouts)
        return 0
    folder, refused = config.layout.unsent_metrics_dir, set()
    for spilled in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        sender = BatchedClient(RunRef(parent.tracking_uri, parent.experiment_id, spilled.stem))
        sender.load_spilled(spilled)
        if sender.flush():
            spilled.unlink(missing_ok=True)
        else:
            refused.add(spilled.stem)
    finished = set(finished_trial_ids)
    return sum(
        end_run(RunRef(parent.tracking_uri, parent.experiment_id, run_id), FINISHED)
        for run_id, trial_id in running
        if trial_id in finished and run_id not in refused
    )
