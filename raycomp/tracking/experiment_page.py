"""How MLflow's UI shows raycomp's experiments: as model training, opened on the sweep's runs.

MLflow 3 opens an experiment on its GenAI overview; the training runs are a click away. An experiment
raycomp opens is tagged with MLflow's experiment kind for model training (``mlflow.experimentKind``), which
UIs that read the tag open on the runs. MLflow 3.17's UI decides by its own switch instead (the
``workflowType`` in the page's address, else what the browser last chose, GenAI by default), so raycomp also
names the page that does open on the runs: the experiment's description links to it, and the CLIs print it.
That page lists the runs sorted by the sweep's metric, which MLflow shows flat: the sweep's parent run and
every trial on one page, best first, instead of the trials folded under their parent.

No mlflow import: the client is passed in, and the addresses are plain strings.
"""

from __future__ import annotations

import shlex
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from raycomp.base import keys
from raycomp.tracking.ref import RunRef, redacted_uri

ML_WORKFLOW = "machine_learning"  # the UI's workflowType for model training (the other is "genai")


def training_runs_page(experiment_id: str, metric: str, mode: str) -> str:
    """The UI's route (``#/...``, relative to the UI's address) to the experiment's runs, best ``metric`` first."""
    query = {
        "workflowType": ML_WORKFLOW,
        "orderByKey": f"metrics.`{metric}`",
        "orderByAsc": "true" if mode == "min" else "false",
    }
    return f"#/experiments/{quote(experiment_id)}/runs?{urlencode(query, quote_via=quote)}"


def training_runs_url(ref: RunRef, metric: str, mode: str) -> str | None:
    """The runs page on the tracking server, credentials left out; None for a store without a UI of its own
    (SQLite: start ``mlflow ui`` on it and open the page's route there)."""
    if urlsplit(ref.tracking_uri).scheme not in ("http", "https"):
        return None
    return f"{redacted_uri(ref.tracking_uri).rstrip('/')}/{training_runs_page(ref.experiment_id, metric, mode)}"


UI_PORT = 5000  # mlflow ui's default


def how_to_open(ref: RunRef, metric: str, mode: str) -> list[str]:
    """The lines a CLI closes with: the runs page on the tracking server, or, for a SQLite store (no UI of its
    own), the ``mlflow ui`` command that serves it and the page to open there."""
    url = training_runs_url(ref, metric, mode)
    if url is not None:
        return [f"MLflow: the runs at {url}"]
    uri = redacted_uri(ref.tracking_uri)
    page = f"http://127.0.0.1:{UI_PORT}/{training_runs_page(ref.experiment_id, metric, mode)}"
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
