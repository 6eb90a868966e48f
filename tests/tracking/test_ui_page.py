"""MLflow's UI opens on raycomp's runs: experiments are tagged as model training, the page their
description links to shows the sweep's parent run and its trials, and the address the CLIs print opens the
sweep's shared view, its trials grouped by configuration with each one's verdict, checked in headless
Chromium against a real `mlflow server` on 127.0.0.1 (written to over HTTP, or as `mlflow ui` serves a
SQLite store raycomp wrote to)."""

from __future__ import annotations

import html
import json
import re
import shlex
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
from raycomp.tracking.experiment_page import (
    how_to_open,
    mark_training_experiment,
    training_runs_page,
    training_runs_url,
)
from raycomp.tracking.ref import RunRef
from raycomp.tracking.sweep_results import configuration_label

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_browser = pytest.mark.skipif(
    BROWSER is None, reason="Chromium is not installed (apt-get install -y chromium): the UI is not checked"
)


def sweep_config(
    tmp_path, tracking_uri: str, metric: str = "eval/accuracy", name: str = "ui-sweep"
) -> ExperimentConfig:
    return ExperimentConfig.from_dict(
        {
            "name": name,
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
    # The printed address opens the run's shared view, which holds the order: MLflow ignores a view whose
    # address also sorts.
    url = training_runs_url(RunRef("http://alice:secret@host:5000/", "7", "r"), "eval/loss", "min")
    assert url == "http://alice:***@host:5000/#/experiments/7/runs?workflowType=machine_learning&viewStateShareKey=r"


def test_the_clis_closing_lines_say_how_to_open_the_runs(tmp_path):
    """A SQLite store has no UI of its own: the closing lines give the `mlflow ui` command and the run's view."""
    database = tmp_path / "my runs" / "mlflow.db"
    lines = how_to_open(RunRef(f"sqlite:///{database}", "3", "r"), "eval/accuracy", "max")
    assert lines[1] == f"  mlflow ui --backend-store-uri 'sqlite:///{database}' --port 5000"
    assert lines[2] == "  and open http://127.0.0.1:5000/" + training_runs_page("3", "eval/accuracy", "max", view="r")
    (served,) = how_to_open(RunRef("http://alice:pw@host:5000", "3", "r"), "eval/loss", "min")
    assert served == "MLflow: the runs at http://alice:***@host:5000/" + training_runs_page(
        "3", "eval/loss", "min", "r"
    )


def test_a_finds_page_opens_on_its_trials_grouped_by_stage_and_recipe(tmp_path):
    """Issue 59 item 6: a find printed no MLflow page and its experiment opened on MLflow's GenAI overview. Its
    parent run now saves a view of its own trials, grouped by stage, then by recipe (the configuration id a find
    gives a trial is its recipe's algorithms and arguments), the one its printed address opens."""
    from raycomp.tracking.find_runs import find_run

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    find = {"methods": ["mixup"], "metric": "eval/loss", "mode": "min"}
    config = ExperimentConfig.from_dict({"name": "f", "storage_path": str(tmp_path), "tracking": {"tracking_uri": uri},
                                         "find": find})  # fmt: skip
    with find_run(config, None, resume=False) as run:
        parent = run.ref
    experiment = MlflowClient(uri).get_experiment(parent.experiment_id)
    view = json.loads(experiment.tags[keys.SHARED_VIEW_TAG_PREFIX + parent.run_id])
    assert view["searchFilter"] == f"tags.`{keys.PARENT_TAG}` = '{parent.run_id}'"
    groups = [key["groupByData"] for key in view["groupBy"]["groupByKeys"]]
    assert groups == [keys.FIND_STAGE_TAG, keys.CONFIG_ID_TAG]
    assert view["orderByKey"] == "metrics.`eval/loss`" and view["orderByAsc"] is True
    assert experiment.tags[keys.EXPERIMENT_KIND_TAG] == keys.TRAINING_EXPERIMENT_KIND  # not the GenAI overview
    assert f"viewStateShareKey={parent.run_id}" in how_to_open(parent, "eval/loss", "min")[2]


def test_experiments_are_tagged_once_and_what_is_there_is_kept(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    with sweep_run(sweep_config(tmp_path, client.tracking_uri), None, resume=False) as parent:
        pass
    tags = client.get_experiment(parent.ref.experiment_id).tags
    assert tags[keys.EXPERIMENT_KIND_TAG] == keys.TRAINING_EXPERIMENT_KIND
    assert training_runs_page(parent.ref.experiment_id, "eval/accuracy", "max") in tags[keys.NOTE_TAG]
    view = json.loads(tags[keys.SHARED_VIEW_TAG_PREFIX + parent.ref.run_id])  # the view the CLI's address opens
    assert view["searchFilter"] == f"tags.`mlflow.parentRunId` = '{parent.ref.run_id}'"
    assert [key["groupByData"] for key in view["groupBy"]["groupByKeys"]] == [keys.CONFIGURATION_TAG, keys.VERDICT_TAG]

    mine = client.create_experiment("mine", tags={keys.EXPERIMENT_KIND_TAG: "genai_development", keys.NOTE_TAG: "x"})
    mark_training_experiment(client, client.get_experiment(mine), "eval/accuracy", "max")
    assert client.get_experiment(mine).tags == {keys.EXPERIMENT_KIND_TAG: "genai_development", keys.NOTE_TAG: "x"}


def dump_dom(url: str, expected: list[str], tries: int = 3) -> str:
    """The page as Chromium renders it, once ``expected`` texts show (a loaded machine may need another try)."""
    dom = ""
    for _ in range(tries):
        with tempfile.TemporaryDirectory() as profile:  # a fresh browser: no workflow remembered
            command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
            command += ["--disable-background-networking", "--disable-component-update"]
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
    # ... and the page it links to lists the parent run and every trial.
    runs_page = dump_dom(
        f"{shared_mlflow_server.uri}/{training_runs_page(experiment_id, 'eval/accuracy', 'max')}", runs
    )
    assert all(f">{name}<" in runs_page for name in runs), [name for name in runs if name not in runs_page]


def page_text(dom: str) -> str:
    """The page's words, each cell's text between ``|``."""
    text = re.sub(r"<[^>]+>", "|", re.sub(r"<(script|style)[^>]*>.*?</\1>", "", dom, flags=re.S))
    return html.unescape(re.sub(r"\s*\|[\s|]*", "|", text))


CONFIGS = {"baseline": "reference", "control": "no evidence", "method-1": "faster"}  # config id -> verdict
ARGUMENTS = {"method-1": {"algorithms.selective_backprop.keep": 0.31234, "algorithms.selective_backprop.interrupt": 2}}
LABELS = {config: configuration_label(config, ARGUMENTS.get(config, {})) for config in CONFIGS}
ACCURACY = {"baseline": 0.90, "control": 0.89, "method-1": 0.88}  # each config's trials score about this


def log_sweep(config: ExperimentConfig) -> RunRef:
    """A finished sweep as raycomp records one: the parent, two trials per configuration, then each trial's
    configuration verdict tagged at the sweep's end (``log_verdicts``'s tags)."""
    arms = [Arm(keys.BASELINE), Arm(keys.CONTROL), Arm(keys.METHOD, "method-1")]
    with sweep_run(config, None, resume=False) as parent:
        for repeat in range(2):
            for arm in arms:
                arm = Arm(arm.variant, arm.config_id, repeat=repeat)
                with trial_run(parent.ref, f"trial_{arm.config_id}_{repeat}", arm, config) as ref:
                    client = BatchedClient(ref)
                    client.log_metrics({"eval/accuracy": ACCURACY[arm.config_id] + repeat / 100}, 1)
                    client.flush()
    client = MlflowClient(parent.ref.tracking_uri)
    for run in client.search_runs([parent.ref.experiment_id], f"tags.`{keys.PARENT_TAG}` = '{parent.ref.run_id}'"):
        config = run.data.tags[keys.CONFIG_ID_TAG]
        client.set_tag(run.info.run_id, keys.VERDICT_TAG, CONFIGS[config])
        client.set_tag(run.info.run_id, keys.CONFIGURATION_TAG, LABELS[config])
    return parent.ref


@needs_browser
@pytest.mark.parametrize("store", ["server", "sqlite"])
def test_the_printed_address_opens_the_sweep_grouped_by_configuration(tmp_path, shared_mlflow_server, store):
    """The address `raycomp tune` prints (a server's, or the one to open in `mlflow ui` on a SQLite store)
    shows the sweep's trials grouped by configuration, each group headed by its configuration and verdict
    and the groups ordered by their mean accuracy, not its runs flat and best first."""
    served_db = f"sqlite:///{shared_mlflow_server.folder / 'mlflow.db'}"  # what the server serves
    uri = shared_mlflow_server.uri if store == "server" else served_db
    parent = log_sweep(sweep_config(tmp_path, uri, name=f"ui-groups-{store}"))
    if store == "server":
        url = training_runs_url(parent, "eval/accuracy", "max")
    else:
        assert training_runs_url(parent, "eval/accuracy", "max") is None
        lines = how_to_open(parent, "eval/accuracy", "max")
        assert lines[1] == f"  mlflow ui --backend-store-uri {shlex.quote(served_db)} --port 5000"
        url = lines[2].removeprefix("  and open ").replace("http://127.0.0.1:5000", shared_mlflow_server.uri)
    groups = [f"{keys.CONFIGURATION_TAG}: {LABELS[c]}, {keys.VERDICT_TAG}: {verdict}" for c, verdict in CONFIGS.items()]
    assert LABELS["method-1"] == "method-1: selective_backprop(keep=0.312, interrupt=2)"  # by what it runs
    dom = dump_dom(url, [f"Group: {group}" for group in groups])
    shown = re.findall(r">Group: ([^<]*)<", dom)
    assert sorted(set(shown)) == sorted(groups), page_text(dom)[:3000]
    # The groups' rows, in the table's order (ag-grid's row-index; a group's row id is its tag values):
    rows = dict.fromkeys(
        row_id for _, row_id in sorted(re.findall(r'row-index="(\d+)" row-id="([^"]*)"', dom), key=lambda r: int(r[0]))
    )
    ids = {
        f"tag.{keys.CONFIGURATION_TAG}.{LABELS[config]},tag.{keys.VERDICT_TAG}.{verdict}": config
        for config, verdict in CONFIGS.items()
    }
    assert [ids[row] for row in rows if row in ids] == ["baseline", "control", "method-1"]  # best mean first
    assert not [row for row in rows if parent.run_id in row]  # the sweep's parent run is left out: its trials
    text = page_text(dom)
    assert all(f"|{verdict}|" in text for verdict in CONFIGS.values())  # the verdict column, on each trial
