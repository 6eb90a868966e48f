"""The report read from MLflow: a parent run with its trial runs in a SQLite store, made with MlflowClient
directly. With the parent's results.json (its verdicts judged again from its trials), and without it (rebuilt
from the trial runs by the same ``raycomp.results.summary.summarize``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from mlflow import MlflowClient
from mlflow.entities import Metric, Param
from reportkit import SB, hand_made_records, method_card, section, trial_rows

from raycomp.base.keys import CPU, WALL
from raycomp.cli.report import main, resolve
from raycomp.report.write import write_report
from raycomp.results.configs import summarize_configs
from raycomp.results.judging import Judging
from raycomp.results.results_files import write_results
from raycomp.results.summary import TraceRow, summarize

STATUS = {"TERMINATED": "FINISHED", "STOPPED": "KILLED", "ERROR": "FAILED"}


def make_store(folder: Path, with_results: bool, repeats: int = 3, **judging: object) -> tuple[str, str]:
    """A sweep as raycomp tracks one: a parent run, a child per hand-made trial; returns (uri, parent id)."""
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("made", artifact_location=(folder / "artifacts").as_uri())
    parent = client.create_run(experiment, tags={"raycomp.kind": "sweep"}, run_name="made").info.run_id
    space = {f"{SB}.keep": {"choice": [0.25, 0.5, 0.75, 0.9]}, "seed": {"grid": [0, 1, 2]}}
    config = {"name": "made", "sweep": {"space": space, "metric": "eval/accuracy", "mode": "max", **judging}}
    client.log_text(parent, yaml.safe_dump(config), "config.yaml")
    records = hand_made_records(repeats)
    for record in records:
        variant = record.arm.variant
        tags = {"mlflow.parentRunId": parent, "raycomp.trial_id": record.trial_id, "raycomp.variant": variant}
        child = client.create_run(experiment, tags=tags, run_name=f"{record.trial_id}-{variant}").info.run_id
        params = record.arm.overrides  # a trial logs its whole config; the swept keys are what matters here
        now = int(time.time() * 1000)
        metrics = []
        for report in record.history:
            metrics += [Metric(key, report[key], now, report["step"]) for key in ("eval/accuracy", WALL, CPU)]
        if variant == "method" and record.history:
            last = record.history[-1]["step"]
            prefix = "trace/SelectiveBackprop/after_dataloader"
            metrics += [Metric(f"{prefix}/total_s", 0.25, now, last), Metric(f"{prefix}/count", 4, now, last)]
        client.log_batch(child, metrics=metrics, params=[Param(k, str(v)) for k, v in params.items()])
        client.set_terminated(child, STATUS[record.status])
    if with_results:
        summaries = summarize(records)
        paths = write_results(folder / "written", summaries, "eval/accuracy", "max", summarize_configs(summaries))
        client.log_artifact(parent, str(paths[1]))
    return uri, parent


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[str, str]:
    return make_store(tmp_path_factory.mktemp("with-results"), with_results=True)


@pytest.fixture(scope="module")
def store_without_results(tmp_path_factory) -> tuple[str, str]:
    return make_store(tmp_path_factory.mktemp("without-results"), with_results=False, repeats=1)


def test_report_from_a_parent_run_uses_its_results_json_and_its_trials_traces(store, tmp_path, capsys):
    uri, parent = store
    out = tmp_path / "out"
    assert main([parent, "--tracking-uri", uri, "--out", str(out)]) == 0
    assert f"logged to MLflow run {parent} under report/" in capsys.readouterr().out
    html = (out / "report.html").read_text()
    written = json.loads((Path(uri.removeprefix("sqlite:///")).parent / "written" / "results.json").read_text())
    rows = trial_rows(html)
    assert list(rows) == [t["trial_id"] for t in written["trials"]]
    for trial in written["trials"]:
        assert rows[trial["trial_id"]]["speedup"]["value"] == trial["speedup"]
        assert rows[trial["trial_id"]]["wall_s"]["value"] == trial["wall_s"]
    card = method_card(html)
    assert {c: row["verdict"]["value"] for c, row in card.items() if "verdict" in row} == {
        c["config_id"]: c["verdict"] for c in written["configs"] if c["verdict"] is not None
    }
    assert "From MLflow run" in html and "sqlite:///…/" in html and str(Path(uri[10:]).parent) not in html
    assert (out / "traces.png").is_file()
    table = section(html, "traces")
    assert "after_dataloader" in table and "<td class='num'>14</td>" in table  # 14 method trials logged it
    client = MlflowClient(uri)
    logged = {a.path for a in client.list_artifacts(parent, "report")}
    assert logged == {"report/report.html", "report/time_to_accuracy.png", "report/pareto.png", "report/traces.png"}


def test_a_sweep_is_found_by_experiment_name_or_by_a_trial_run(store):
    uri, parent = store
    assert resolve("made", uri).parent.run_id == parent
    child = MlflowClient(uri).search_runs(["1"], f"tags.`mlflow.parentRunId` = '{parent}'")[0].info.run_id
    assert resolve(child, uri).parent.run_id == parent


def test_without_results_json_the_sweep_is_rebuilt_and_summarized_the_same_way(store_without_results):
    uri, parent = store_without_results
    sweep = resolve(parent, uri)
    assert "rebuilt from its trial runs" in sweep.source
    expected = {s.trial_id: s for s in summarize(hand_made_records(repeats=1))}
    assert [t.trial_id for t in sweep.trials] == list(expected)
    for trial in sweep.trials:
        summary = expected[trial.trial_id]
        assert trial.status == summary.status and trial.overrides == summary.overrides
        assert trial.final_metric == summary.final_metric and trial.wall_s == summary.wall_s
        assert trial.cpu_s == summary.cpu_s  # every clock a sweep may be judged on comes back
        assert trial.speedup == summary.speedup and trial.time_to_baseline_s == summary.time_to_baseline_s
        logged = trial.variant == "method" and summary.curve
        assert trial.traces == ((TraceRow("SelectiveBackprop", "after_dataloader", 4, 0.25),) if logged else ())
    paths = write_report(sweep, Path(uri[10:]).parent / "out")  # each trial its own configuration: no repeats
    assert "From MLflow run" in paths[-1].read_text()


def test_a_rebuilt_sweep_is_judged_with_its_own_clock_looks_and_margins(tmp_path):
    """Judged with the defaults instead, an adaptive sweep on CPU time would be read on another clock and at
    a single look's level: other verdicts than the sweep printed, and more liberal ones."""
    judging = {"timing": "cpu", "max_repeats": 8, "equivalence": 0.1, "confidence": 0.9, "accuracy_tolerance": 0.01}
    uri, parent = make_store(tmp_path, with_results=False, repeats=1, **judging)
    verdicts = resolve(parent, uri).verdicts
    assert verdicts.judging == Judging(0.01, 0.9, 0.1, (1, 8), "cpu")


def test_an_mlflow_store_that_does_not_answer_exits_3(capsys):
    from helpers import free_port

    assert main(["made", "--tracking-uri", f"http://127.0.0.1:{free_port()}"]) == 3
    assert capsys.readouterr().err.startswith("error: MLflow tracking store http://127.0.0.1:")


@pytest.fixture(autouse=True)
def _quick_http(monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
