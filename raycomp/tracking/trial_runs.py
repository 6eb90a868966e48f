"""A trial's child run under its sweep's or find's parent run: opened (or reopened, when the trial ran before) and
ended by ``trial_run``, as ``runs`` does for the parents. The store's modules are imported where a trial talks to
one, so an untracked trial imports no MLflow.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from raycomp.base import keys
from raycomp.base.errors import one_line
from raycomp.config import ExperimentConfig
from raycomp.config.arm import Arm
from raycomp.tracking.ref import RunRef, redacted_uri
from raycomp.tracking.runs import FAILED, FINISHED, KILLED, RUNNING, TRIAL, end_run, find_run


@contextmanager
def trial_run(
    parent: RunRef | None,
    trial_id: str,
    arm: Arm,
    config: ExperimentConfig,
    *,
    lost_trial_id: str | None = None,
) -> Iterator[RunRef | None]:
    """The child run of one trial under the sweep's run, reopened if the trial ran before (a restore).

    ``arm`` is the trial's sweep arm; its variant, config id, repeat and budget become the run's tags.
    ``lost_trial_id`` names the trial of the same arm this one continues (one a killed driver lost): its
    run, finished or not, becomes this trial's, so the arm keeps one run.

    Yields None without a parent, and also when the store fails to open the child (said in one line):
    the trial then trains untracked rather than failing. Ends the run FINISHED when the block returns,
    KILLED on ``SystemExit(0)`` (how Tune stops a local-mode trial), else FAILED, and re-raises.
    """
    ref = None
    if parent is not None:
        try:
            ref = _open_trial(parent, trial_id, arm, config, lost_trial_id)
        except Exception as error:  # the store's failure must not cost the trial
            print(
                f"raycomp: MLflow run of trial {trial_id} under {parent.run_id} at "
                f"{redacted_uri(parent.tracking_uri)} could not be opened ({one_line(error)}); "
                "the trial trains untracked",
                file=sys.stderr,
                flush=True,
            )
    if ref is None:
        yield None
        return
    try:
        yield ref
    except SystemExit as stop:
        end_run(ref, KILLED if stop.code in (0, None) else FAILED)
        raise
    except BaseException:
        end_run(ref, FAILED)
        raise
    end_run(ref, FINISHED)


def _open_trial(parent: RunRef, trial_id: str, arm: Arm, config: ExperimentConfig, lost_trial_id: str | None) -> RunRef:
    """The trial's child run: its own, else the run of the lost trial it continues, else the unfinished run
    of the same arm (config id and repeat) that a trial lost with a killed driver's unsaved state left
    (each retagged: one run per arm), else a new one."""
    from raycomp.tracking.params import log_config
    from raycomp.tracking.store import make_client

    client = make_client(parent.tracking_uri)
    previous = find_run(client, parent.experiment_id, {keys.PARENT_TAG: parent.run_id, keys.TRIAL_TAG: trial_id})
    if previous is None and lost_trial_id is not None:
        previous = find_run(
            client, parent.experiment_id, {keys.PARENT_TAG: parent.run_id, keys.TRIAL_TAG: lost_trial_id}
        )
        if previous is not None:
            client.set_tag(previous.info.run_id, keys.TRIAL_TAG, trial_id)
    if previous is None:
        same_arm = {keys.PARENT_TAG: parent.run_id, keys.CONFIG_ID_TAG: arm.config_id, keys.REPEAT_TAG: str(arm.repeat)}
        previous = find_run(client, parent.experiment_id, same_arm)
        if previous is not None and previous.info.status == FINISHED:
            previous = None  # another trial's finished run: not one a dead driver left
        if previous is not None:
            client.set_tag(previous.info.run_id, keys.TRIAL_TAG, trial_id)
    if previous is not None:
        client.update_run(previous.info.run_id, status=RUNNING)
        return RunRef(parent.tracking_uri, parent.experiment_id, previous.info.run_id)
    variant = arm.variant
    tags = {keys.PARENT_TAG: parent.run_id, keys.TRIAL_TAG: trial_id, keys.VARIANT_TAG: variant, keys.KIND_TAG: TRIAL}
    tags |= {keys.CONFIG_ID_TAG: arm.config_id, keys.REPEAT_TAG: str(arm.repeat)}
    if arm.budget is not None:
        tags[keys.BUDGET_TAG] = str(arm.budget)
    run_id = client.create_run(parent.experiment_id, tags=tags, run_name=f"{trial_id}-{variant}").info.run_id
    try:  # a frontier arm's max_duration is the one its workers train to (config.trial.worker_budget)
        log_config(client, run_id, config, measured=("max_duration",) if variant == keys.FRONTIER else ())
    except Exception as error:  # the run exists now: keep it, so its points spill and a resume ends it
        print(
            f"raycomp: the params of MLflow run {run_id} (trial {trial_id}) could not be recorded "
            f"({one_line(error)}); the trial's metrics are kept for the run",
            file=sys.stderr,
            flush=True,
        )
    return RunRef(parent.tracking_uri, parent.experiment_id, run_id)
