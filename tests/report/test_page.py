"""The report from hand-made results (no Ray, no MLflow): files, the method card against results.json,
hardware, repeats and their spread, the trace summary, and the CLI's answers for a missing sweep."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import subprocess
import sys

import pytest
from reportkit import MACHINE, method_card

from raycomp.report import read_sweep, write_report
from raycomp.report.__main__ import main
from raycomp.report.page import metric_text, seconds_text, speedup_text
from raycomp.report.summary import TraceRow


def test_cli_writes_figures_and_a_self_contained_page(hand_made_sweep, capsys):
    assert main([str(hand_made_sweep)]) == 0
    report = hand_made_sweep / "report"
    assert {p.name for p in report.iterdir()} == {"time_to_accuracy.png", "pareto.png", "report.html"}
    assert f"report: {report / 'report.html'}" in capsys.readouterr().out
    html = (report / "report.html").read_text()
    sources = re.findall(r'src="([^"]*)"', html)
    assert len(sources) == 2 and all(s.startswith("data:image/png;base64,") for s in sources)
    inlined = {base64.b64decode(s.split(",", 1)[1]) for s in sources}
    assert inlined == {(report / name).read_bytes() for name in ("time_to_accuracy.png", "pareto.png")}
    assert "http://" not in html and "https://" not in html and "<link" not in html and "<script" not in html


def test_method_card_numbers_are_results_json_numbers(hand_made_sweep):
    assert main([str(hand_made_sweep)]) == 0
    trials = json.loads((hand_made_sweep / "results.json").read_text())["trials"]
    card = method_card((hand_made_sweep / "report" / "report.html").read_text())
    assert list(card) == [t["trial_id"] for t in trials]  # every trial, in results.json's order
    for trial in trials:
        row = card[trial["trial_id"]]
        for key, column in (("final_metric", "eval/accuracy"), ("wall_s", "wall_s")):
            assert row[key]["value"] == trial[column]
        assert row["time_to_baseline_s"]["value"] == trial["time_to_baseline_s"]
        assert row["speedup"]["value"] == trial["speedup"]
        if trial["speedup"] is not None:
            assert row["speedup"]["text"] == speedup_text(trial["speedup"])
            assert row["time_to_baseline_s"]["text"] == seconds_text(trial["time_to_baseline_s"])
        if trial["eval/accuracy"] is not None:
            assert row["final_metric"]["text"] == metric_text(trial["eval/accuracy"])
            assert row["wall_s"]["text"] == seconds_text(trial["wall_s"])
    assert card["t0"]["class"] == "baseline" and "baseline" in card["t0"]["text"]
    assert [tid for tid, row in card.items() if row["class"] == "baseline"] == ["t0"]
    assert card["t0"]["speedup"]["text"] == "1.00×"
    assert card["t1"]["speedup"]["text"] == speedup_text(1.25)  # reached 0.75 at its last report: 40 s / 32 s
    assert card["t3"]["speedup"]["text"] == "never" and card["t3"]["time_to_baseline_s"]["text"] == "never"
    assert card["t5"]["speedup"]["text"] == "–" and "RuntimeError: boom" in card["t5"]["text"]
    assert "best" in card["t1"]["text"]


def test_page_names_the_hardware_the_repeats_and_their_spread(hand_made_sweep):
    assert main([str(hand_made_sweep)]) == 0
    html = (hand_made_sweep / "report" / "report.html").read_text()
    assert f"<b>Measured on:</b> {MACHINE}." in html
    assert "6 (1 baseline, 5 method; 1 ERROR, 1 STOPPED, 4 TERMINATED)" in html
    assert "1 of 4 configs ran 2 times" in html
    spread = html.split('<table id="spread">', 1)[1].split("</table>", 1)[0]
    low, high = sorted([0.82 * 0.9375, 0.81 * 0.9375])
    assert "keep=0.5" in spread and f"{metric_text(low)}–{metric_text(high)}" in spread
    assert f"{speedup_text(1.25)}–{speedup_text(1.5)}" in spread


def test_without_mlflow_the_page_says_why_there_are_no_traces(hand_made_sweep):
    assert main([str(hand_made_sweep), "--no-mlflow"]) == 0
    html = (hand_made_sweep / "report" / "report.html").read_text()
    assert "No trace summary: MLflow was not read (--no-mlflow)" in html
    assert main([str(hand_made_sweep)]) == 0  # no mlflow.db beside it: tracking was off
    assert (
        "No trace summary: no MLflow store beside this sweep"
        in (hand_made_sweep / "report" / "report.html").read_text()
    )


def test_traces_are_drawn_and_tabled_per_algorithm_and_event(hand_made_sweep, tmp_path):
    sweep = read_sweep(hand_made_sweep)
    rows = (TraceRow("SelectiveBackprop", "after_dataloader", 8, 0.5), TraceRow("SelectiveBackprop", "init", 1, 0.001))
    trials = tuple(dataclasses.replace(t, traces=() if t.is_baseline else rows) for t in sweep.trials)
    paths = write_report(sweep.replace(trials=trials), tmp_path / "out")
    assert [p.name for p in paths] == ["time_to_accuracy.png", "pareto.png", "traces.png", "report.html"]
    html = paths[-1].read_text()
    table = html.split('<table id="traces">', 1)[1].split("</table>", 1)[0]
    assert "after_dataloader" in table and "<td class='num'>40</td>" in table and "2.500 s" in table  # 5 trials


def test_missing_sweep_exits_2_with_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    done = subprocess.run(
        [sys.executable, "-m", "raycomp.report", str(tmp_path / "nowhere")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and not done.stdout
    assert done.stderr.startswith(f"error: no sweep '{tmp_path / 'nowhere'}'") and done.stderr.count("\n") == 1
    (tmp_path / "empty").mkdir()
    assert main(["empty"]) == 2 and capsys.readouterr().err == "error: no results.json in empty\n"
    assert main(["no-such-experiment"]) == 2
    assert capsys.readouterr().err.startswith("error: no sweep 'no-such-experiment': not a folder")
    assert not (tmp_path / "runs").exists()  # looking a name up created no MLflow store


def test_at_the_sweeps_end_a_store_that_went_away_costs_only_the_traces(hand_made_sweep, monkeypatch):
    from helpers import free_port

    from raycomp.report import read_results, write_sweep_report
    from raycomp.tracking.ref import RunRef

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    uri = f"http://127.0.0.1:{free_port()}"
    trials = read_results(hand_made_sweep).trials  # written by hand-made trials that reported no traces
    paths = write_sweep_report(trials, "made", "eval/accuracy", "max", hand_made_sweep, RunRef(uri, "1", "0" * 32))
    assert [p.name for p in paths] == ["time_to_accuracy.png", "pareto.png", "report.html"]
    assert f"No trace summary: the MLflow store {uri} did not answer" in paths[-1].read_text()


@pytest.mark.parametrize(
    "keep",
    [
        pytest.param(lambda r: r.variant != "baseline", id="no-baseline"),
        pytest.param(lambda r: r.status == "ERROR", id="all-failed"),
        pytest.param(lambda r: r.trial_id == "t0", id="baseline-only"),
    ],
)
def test_the_report_is_written_whatever_the_sweeps_shape(tmp_path, keep):
    from reportkit import hand_made_records

    from raycomp.report import summarize, write_results

    write_results(tmp_path / "odd", summarize([r for r in hand_made_records() if keep(r)]), "eval/accuracy", "max")
    assert main([str(tmp_path / "odd"), "--no-mlflow"]) == 0
    html = (tmp_path / "odd" / "report" / "report.html").read_text()
    if keep(hand_made_records()[0]):
        assert "<b>Baseline:</b>" in html
    else:
        assert "No baseline trial with a result: no speed-ups." in html
