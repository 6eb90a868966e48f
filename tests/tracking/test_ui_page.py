"""MLflow's UI opens on raycomp's runs: experiments are tagged as model training, and the page their
description links to shows the sweep's parent run and its trials, checked in headless Chromium against a
real `mlflow server` on 127.0.0.1."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import tempfile

import pytest
from mlflow import MlflowClient

from raycomp.base import keys
from raycomp.config import ExperimentConfig
from raycomp.config.arm import Arm
from raycomp.tracking import sweep_run, trial_run
from raycomp.tracking.client import BatchedClient
from raycomp.tracking.experiment_page import mark_training_experiment, training_runs_page, training_runs_url
from raycomp.tracking.ref import RunRef

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_browser = pytest.mark.skipif(
    BROWSER is None, reason="Chromium is not installed (apt-get install -y chromium): the UI is not checked"
)


def sweep_config(tmp_path, tracking_uri: str, metric: str = "eval/accuracy") -> ExperimentConfig:
    return ExperimentConfig.from_dict(
        {
            "name": "ui-sweep",
            "storage_path": str(tmp_path / "runs"),
            "algorithms": {"selective_backprop": {}},
            "tracking": {"tracking_uri": tracking_uri},
            "sweep": {"metric": metric, "mode": "max", "space": {}},
        }
    )


def test_the_runs_page_sorts_by_the_sweeps_metric():
    page = training_runs_page("7", "eval/accuracy", "max")
    sorted_by = "orderByKey=metrics.%60eval%2Faccuracy%60&orderByAsc=false"
    assert page == f"#/experiments/7/runs?workflowType=machine_learning&{sorted_by}"
    assert training_runs_page("7", "eval/loss", "min").endswith("orderByAsc=true")
    assert training_runs_url(RunRef("sqlite:///x.db", "7", "r"), "eval/loss", "min") is None  # no UI of its own
    url = training_runs_url(RunRef("http://alice:secret@host:5000/", "7", "r"), "eval/loss", "min")
    assert url == "http://alice:***@host:5000/" + training_runs_page("7", "eval/loss", "min")


def test_the_clis_closing_lines_say_how_to_open_the_runs(tmp_path):
    """A SQLite store has no UI of its own: the closing lines give the `mlflow ui` command and the page."""
    from raycomp.tracking.experiment_page import how_to_open

    database = tmp_path / "my runs" / "mlflow.db"
    lines = how_to_open(RunRef(f"sqlite:///{database}", "3", "r"), "eval/accuracy", "max")
    assert lines[1] == f"  mlflow ui --backend-store-uri 'sqlite:///{database}' --port 5000"
    assert lines[2] == "  and open http://127.0.0.1:5000/" + training_runs_page("3", "eval/accuracy", "max")
    (served,) = how_to_open(RunRef("http://alice:pw@host:5000", "3", "r"), "eval/loss", "min")
    assert served == "MLflow: the runs at http://alice:***@host:5000/" + training_runs_page("3", "eval/loss", "min")


def test_experiments_are_tagged_once_and_what_is_there_is_kept(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    with sweep_run(sweep_config(tmp_path, client.tracking_uri), None, resume=False) as parent:
        pass
    tags = client.get_experiment(parent.ref.experiment_id).tags
    assert tags[keys.EXPERIMENT_KIND_TAG] == keys.TRAINING_EXPERIMENT_KIND
    assert training_runs_page(parent.ref.experiment_id, "eval/accuracy", "max") in tags[keys.NOTE_TAG]

    mine = client.create_experiment("mine", tags={keys.EXPERIMENT_KIND_TAG: "genai_development", keys.NOTE_TAG: "x"})
    mark_training_experiment(client, client.get_experiment(mine), "eval/accuracy", "max")
    assert client.get_experiment(mine).tags == {keys.EXPERIMENT_KIND_TAG: "genai_development", keys.NOTE_TAG: "x"}


def dump_dom(url: str, expected: list[str], tries: int = 3) -> str:
    """The page as Chromium renders it, once ``expected`` texts show (a loaded machine may need another try)."""
    dom = ""
    for _ in range(tries):
        with tempfile.TemporaryDirectory() as profile:  # a fresh browser: no workflow remembered
            command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
            command += [f"--user-data-dir={profile}", "--virtual-time-budget=30000", "--dump-dom", url]
            dom = subprocess.run(command, capture_output=True, text=True, timeout=120).stdout
        if all(text in dom for text in expected):
            break
    return dom


@needs_browser
def test_the_experiment_page_leads_to_the_sweeps_parent_and_trials(tmp_path, shared_mlflow_server):
    config = sweep_config(tmp_path, shared_mlflow_server.uri)
    arms = [Arm(keys.BASELINE, "baseline"), Arm(keys.METHOD, "m0")]
    with sweep_run(config, None, resume=False) as parent:
        for index, arm in enumerate(arms):
            with trial_run(parent.ref, f"trial_{index}", arm, config) as ref:
                client = BatchedClient(ref)
                client.log_metrics({"eval/accuracy": 0.5 + index / 10}, 1)
                client.flush()
    experiment_id = parent.ref.experiment_id
    assert MlflowClient(shared_mlflow_server.uri).get_experiment(experiment_id).tags[keys.EXPERIMENT_KIND_TAG] == (
        keys.TRAINING_EXPERIMENT_KIND
    )
    runs = ["ui-sweep", "trial_0-baseline", "trial_1-method"]

    # The experiment's own page (MLflow 3.17 opens it on the GenAI overview) shows the description's link ...
    page = dump_dom(f"{shared_mlflow_server.uri}/#/experiments/{experiment_id}", ["raycomp runs"])
    links = [html.unescape(href) for href in re.findall(r'href="(#/experiments/[^"]*/runs\?[^"]*)"', page)]
    assert training_runs_page(experiment_id, "eval/accuracy", "max") in links, links
    # ... and the page it links to, the one the CLI prints, lists the parent run and every trial.
    url = training_runs_url(parent.ref, "eval/accuracy", "max")
    assert url == f"{shared_mlflow_server.uri}/{training_runs_page(experiment_id, 'eval/accuracy', 'max')}"
    runs_page = dump_dom(url, runs)
    assert all(f">{name}<" in runs_page for name in runs), [name for name in runs if name not in runs_page]
