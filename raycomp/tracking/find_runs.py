"""A find's MLflow runs: one parent run for the whole search (kind ``find``), its trials' runs under it, each tagged
with the stage that asked for it, and the answer on the parent (tags, ``find.json``, ``recipe.yaml``).

The parent opens and ends as a sweep's does (``runs.open_top_level``, ``runs.ended_by_its_block``): a resumed find
reopens it (``raycomp.run_key``), an interrupt ends it KILLED, an error FAILED. As in ``runs``, the store's modules
are imported where a function talks to one: a find with tracking off runs without MLflow.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from raycomp.base import keys
from raycomp.base.errors import one_line
from raycomp.base.layout import RunLayout
from raycomp.config import ExperimentConfig
from raycomp.tracking.experiment_page import share_runs_view
from raycomp.tracking.ref import RunRef
from raycomp.tracking.runs import TrackedRun, ended_by_its_block, open_top_level
from raycomp.tracking.search import all_runs, tag_filter

FIND_KIND = keys.FIND_KIND  # the parent run's raycomp.kind
STAGE_TAG = keys.FIND_STAGE_TAG  # on each trial's run: screen, tune, compose or confirm
PROXY_TAG = "raycomp.find.proxy"  # on a trial's run that trained on the find's proxy: its max_duration (0.25dur)
RECIPE_TAG = "raycomp.find.recipe"  # on the parent: the recommended recipe ("none" when none is)
VERDICT_TAG = "raycomp.find.verdict"  # on the parent: the confirmed verdict of the recipe Confirm ran


@contextmanager
def find_run(config: ExperimentConfig, experiment_file: str | None, *, resume: bool) -> Iterator[TrackedRun | None]:
    """The find's parent run (reopened by ``resume``, finished or not); None with tracking off. Raises
    ``TrackingUnavailable`` at entry when the store does not answer."""
    if not config.tracking.enabled:
        yield None
        return
    from raycomp.tracking.store import make_client

    # a first attempt that failed before any trial (Ray did not start) leaves no parent of its own beside this one
    ref = open_top_level(config, FIND_KIND, experiment_file, reopen=resume, reopen_finished=resume, reopen_empty=True)
    find = config.find
    if find is not None:  # the page the CLI prints: the find's trials grouped by stage and configuration
        share_runs_view(make_client(ref.tracking_uri), ref, FIND_KIND, find.metric, find.mode)
    with ended_by_its_block(TrackedRun(ref)) as run:
        yield run


def tag_stage(parent: RunRef, trial_ids: Iterable[str], stage: str, proxy: str = "") -> bool:
    """Tags the runs of ``trial_ids`` (children of ``parent``) with the stage that trained them, and with the
    proxy's length when they trained on it. Never raises."""
    return tag_stages(parent, dict.fromkeys(trial_ids, stage), proxy)


def tag_stages(parent: RunRef, stages: Mapping[str, str], proxy: str = "") -> bool:
    """Tags each trial's run (by trial id, children of ``parent``) with its stage, where it lacks that tag; False
    when the store refused (said once). Never raises, and gives up at the first refused tag: with the server down
    every further one would wait out its own timeouts. The find's end calls it again for every trial, so tags an
    outage kept from the store are set once it answers."""
    from raycomp.tracking.client import BatchedClient
    from raycomp.tracking.store import make_client

    try:
        client = make_client(parent.tracking_uri)
        runs = [  # each run's two tags only; every page read before any tag is set
            (run.info.run_id, run.data.tags.get(keys.TRIAL_TAG, ""), run.data.tags.get(STAGE_TAG))
            for run in all_runs(client, [parent.experiment_id], tag_filter({keys.PARENT_TAG: parent.run_id}))
        ]
    except Exception as error:
        print(f"raycomp: could not find the trial runs of {parent.run_id}: {one_line(error)}", file=sys.stderr)
        return False
    for run_id, trial_id, tagged in runs:
        stage = stages.get(trial_id)
        if stage is not None and tagged != stage:
            child = RunRef(parent.tracking_uri, parent.experiment_id, run_id)
            if not BatchedClient(child).set_tags({STAGE_TAG: stage, **({PROXY_TAG: proxy} if proxy else {})}):
                return False
    return True


def find_run_of_folder(client: Any, folder: Path) -> Any:
    """The latest parent run of the find written to ``folder`` (its ``raycomp.run_key`` tag), or None."""
    key = RunLayout.of(str(folder.parent), folder.name).run_key(FIND_KIND)
    experiments = [experiment.experiment_id for experiment in client.search_experiments()]
    if not experiments:
        return None
    query = tag_filter({keys.RUN_KEY_TAG: key})
    runs = client.search_runs(experiments, query, max_results=1, order_by=["attributes.start_time DESC"])
    return runs[0] if runs else None


def log_answer(parent: RunRef, tags: Mapping[str, str], paths: Iterable[str | Path]) -> bool:
    """The find's answer on its parent run: ``tags`` and the files (find.json, recipe.yaml). Never raises."""
    from raycomp.tracking.client import BatchedClient

    client = BatchedClient(parent)
    done = client.set_tags(dict(tags))
    return all([client.log_artifact(path) for path in paths]) and done
