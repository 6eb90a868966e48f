"""How MLflow's UI shows raycomp's experiments: as model training, opened on the sweep's runs.

MLflow 3 opens an experiment on its GenAI overview; the training runs are a click away. An experiment
raycomp opens is tagged with MLflow's experiment kind for model training (``mlflow.experimentKind``), which
UIs that read the tag open on the runs. MLflow 3.17's UI decides by its own switch instead (the
``workflowType`` in the page's address, else what the browser last chose, GenAI by default), so raycomp also
names the page that does open on the runs: the experiment's description links to it, and the CLIs print it.
That page lists the runs sorted by the sweep's metric, which MLflow shows flat: the sweep's parent run and
every trial on one page, best first, instead of the trials folded under their parent.

The address a CLI prints opens a saved view instead (MLflow's Share: the view is an experiment tag
``mlflow.sharedViewState.<key>``, opened by ``viewStateShareKey=<key>`` in the page's address): a sweep's
trials grouped by configuration and verdict, each group's mean of the metric and train time beside its
verdict and speed-up, so the page opens on the comparison rather than on the best single trials (the
baseline's longer-budget runs). The key is the run's id, so the address needs no store.

No mlflow import: the client is passed in, and the addresses are plain strings.
"""

from __future__ import annotations

import json
import shlex
import sys
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from raycomp.base import keys
from raycomp.base.errors import one_line
from raycomp.tracking.ref import RunRef, redacted_uri

ML_WORKFLOW = "machine_learning"  # the UI's workflowType for model training (the other is "genai")
VIEW_KEY_PARAM = "viewStateShareKey"  # the page's query parameter naming a shared view
AVERAGE = "average"  # a group row shows its runs' mean (MLflow's others: min, max)
GROUP_LABEL_PX = 460  # wide enough for "Group: raycomp.config_id: <config>, raycomp.verdict: no evidence"


def training_runs_page(experiment_id: str, metric: str, mode: str, view: str | None = None) -> str:
    """The UI's route (``#/...``, relative to the UI's address) to the experiment's runs, best ``metric`` first;
    with ``view``, the shared view of that key (which holds its own order: MLflow 3.17 ignores a shared view
    whose address also sorts or filters)."""
    query = {"workflowType": ML_WORKFLOW}
    if view is None:
        query |= {"orderByKey": _column("metrics", metric), "orderByAsc": "true" if mode == "min" else "false"}
    else:
        query[VIEW_KEY_PARAM] = view
    return f"#/experiments/{quote(experiment_id)}/runs?{urlencode(query, quote_via=quote)}"


def training_runs_url(ref: RunRef, metric: str, mode: str) -> str | None:
    """The run's view (``share_runs_view``) on the tracking server, credentials left out; None for a store
    without a UI of its own (SQLite: start ``mlflow ui`` on it and open the page's route there)."""
    if urlsplit(ref.tracking_uri).scheme not in ("http", "https"):
        return None
    page = training_runs_page(ref.experiment_id, metric, mode, view=ref.run_id)
    return f"{redacted_uri(ref.tracking_uri).rstrip('/')}/{page}"


def runs_view(run_id: str, kind: str, metric: str, mode: str) -> dict[str, Any]:
    """The page's state (the fields MLflow's Share stores) for a top-level run: a sweep's trials grouped by
    configuration and verdict, groups ordered by their mean ``metric``, the verdict and speed-up as columns;
    a training's experiment, best ``metric`` first, as the page without a view shows it."""
    view: dict[str, Any] = {"orderByKey": _column("metrics", metric), "orderByAsc": mode == "min"}
    columns = [_column("metrics", metric), _column("metrics", keys.WALL)]
    if kind in (keys.SWEEP_KIND, keys.FIND_KIND):
        view["searchFilter"] = f"tags.`{keys.PARENT_TAG}` = '{run_id}'"  # this one's: config ids repeat
        # a sweep's configurations by verdict; a find's by stage, each recipe (its algorithms and arguments) a group
        sweep_groups = (keys.CONFIGURATION_TAG, keys.VERDICT_TAG)  # configurations named by what they run
        groups = sweep_groups if kind == keys.SWEEP_KIND else (keys.FIND_STAGE_TAG, keys.CONFIG_ID_TAG)
        by = [{"mode": "tag", "groupByData": tag} for tag in groups]
        view["groupBy"] = {"aggregateFunction": AVERAGE, "groupByKeys": by}
        if kind == keys.SWEEP_KIND:
            speedups = [keys.SPEEDUP_TAG_PREFIX + name for name in ("speedup", "speedup_ci_low", "speedup_ci_high")]
            columns += [_column("tags", tag) for tag in (keys.VERDICT_TAG, *speedups)]
        else:
            columns += [_column("tags", keys.FIND_STAGE_TAG), _column("tags", keys.CONFIG_ID_TAG)]
        name = _column("attributes", "Run Name")  # a width applies to the columns in columnOrder only
        view |= {"columnOrder": [name], "columnWidths": {name: GROUP_LABEL_PX}}  # the group's label in full
    view["selectedColumns"] = columns
    return view


def share_runs_view(client: Any, ref: RunRef, kind: str, metric: str, mode: str) -> bool:
    """Saves the run's view (``runs_view``) as the experiment's shared view keyed by the run's id, the one
    the printed address opens (again on a resume: the config may have changed). Never raises: without it
    the page says the key is unknown and opens the experiment; False then, said in one line."""
    view = json.dumps(runs_view(ref.run_id, kind, metric, mode), separators=(",", ":"))
    try:
        client.set_experiment_tag(ref.experiment_id, keys.SHARED_VIEW_TAG_PREFIX + ref.run_id, view)
        return True
    except Exception as error:
        print(f"raycomp: MLflow's view of run {ref.run_id} could not be saved: {one_line(error)}", file=sys.stderr)
        return False


def _column(kind: str, name: str) -> str:
    """A column's (and sort key's) name on MLflow's page: ``metrics.`eval/accuracy```, ``tags.`raycomp.verdict```."""
    return f"{kind}.`{name}`"


UI_PORT = 5000  # mlflow ui's default


def how_to_open(ref: RunRef, metric: str, mode: str) -> list[str]:
    """The lines a CLI closes with: the run's view on the tracking server, or, for a SQLite store (no UI of its
    own), the ``mlflow ui`` command that serves it and the view to open there."""
    url = training_runs_url(ref, metric, mode)
    if url is not None:
        return [f"MLflow: the runs at {url}"]
    uri = redacted_uri(ref.tracking_uri)
    page = f"http://127.0.0.1:{UI_PORT}/{training_runs_page(ref.experiment_id, metric, mode, view=ref.run_id)}"
    return [
        "MLflow: to see the runs, start its UI on this store:",
        f"  mlflow ui --backend-store-uri {shlex.quote(uri)} --port {UI_PORT}",
        f"  and open {page}",
    ]


def mark_training_experiment(client: Any, experiment: Any, metric: str, mode: str) -> None:
    """Tags ``experiment`` (an MLflow ``Experiment``) as model training and links its description to the runs
    page; a kind or a description already there, the user's or an earlier run's, is left as it is."""
    tags = experiment.tags or {}
    if keys.EXPERIMENT_KIND_TAG not in tags:
        client.set_experiment_tag(experiment.experiment_id, keys.EXPERIMENT_KIND_TAG, keys.TRAINING_EXPERIMENT_KIND)
    if keys.NOTE_TAG not in tags:
        page = training_runs_page(experiment.experiment_id, metric, mode)
        note = f"raycomp runs: [the sweep's and training runs, best {metric} first]({page})"
        client.set_experiment_tag(experiment.experiment_id, keys.NOTE_TAG, note)
