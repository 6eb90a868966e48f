"""The report from hand-made results (no Ray, no MLflow): files, the top of the page (the control's verdict,
the noise floor, the warning), the method card and the trial table against results.json, paths, hardware,
the trace summary, and the CLI's answers for a missing sweep."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import subprocess
import sys

import pytest
from reportkit import ARMS, MACHINE, VERDICTS, Arm, hand_made_records, method_card, section, trial_rows, write_hand_made

from raycomp.cli.report import main
from raycomp.report.sweep import read_sweep
from raycomp.report.text import delta_text, metric_text, seconds_text, speedup_text
from raycomp.report.write import write_report
from raycomp.results.summary import TraceRow

WARNING = "this machine&#x27;s timing could not support verdicts in this sweep"


def page_of(folder) -> str:
    return (folder / "report" / "report.html").read_text()


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


def test_the_top_of_the_page_is_the_controls_verdict_and_the_noise_floor(hand_made_sweep):
    assert main([str(hand_made_sweep)]) == 0
    html = page_of(hand_made_sweep)
    document = json.loads((hand_made_sweep / "results.json").read_text())
    top = html.split('<table id="method-card">', 1)[0]
    headline = section(top, "headline")
    control = re.search(r"<td id='control' data-value='([^']*)'>(.*?)</td>", headline)
    assert json.loads(control[1].replace("&quot;", '"')) == document["control"] == "no evidence"
    assert "no evidence" in control[2] and "as it should be" in control[2]
    floor = re.search(r"<td id='noise-floor' data-value='([^']*)'>(.*?)</td>", headline)
    assert float(floor[1]) == document["noise_floor"] and f"{document['noise_floor']:.1%}" in floor[2]
    assert "over its 3 repeats" in floor[2]
    assert "<b>method-1</b>" in headline and document["best_config"] == "method-1"
    assert "timing-warning" not in html


@pytest.mark.parametrize("speed, verdict", [(1.5, "faster"), (0.6, "slower")])
def test_a_control_judged_faster_or_slower_puts_a_warning_at_the_top(tmp_path, speed, verdict):
    arms = tuple(dataclasses.replace(a, speed=speed) if a.variant == "control" else a for a in ARMS)
    folder = write_hand_made(tmp_path / "noisy", hand_made_records(arms=arms))
    assert main([str(folder), "--no-mlflow"]) == 0
    html = page_of(folder)
    top = html.split("<h2>", 1)[0]  # above the first section
    assert '<div class="alarm" id="timing-warning">' in top and WARNING in top
    assert f"came out &#x27;{verdict}&#x27;" in top
    assert f'<span class="verdict alarm">{verdict}</span>' in top  # no good news for the control, either way
    assert method_card(html)["control"]["verdict"]["value"] == verdict


def test_without_a_control_arm_the_top_says_so(tmp_path):
    arms = tuple(a for a in ARMS if a.variant != "control")
    folder = write_hand_made(tmp_path / "plain", hand_made_records(arms=arms))
    assert main([str(folder), "--no-mlflow"]) == 0
    headline = section(page_of(folder), "headline")
    assert "no control arm in this sweep" in headline and "timing-warning" not in page_of(folder)


def test_method_card_is_one_row_per_configuration_with_results_jsons_numbers(hand_made_sweep):
    assert main([str(hand_made_sweep)]) == 0
    configs = json.loads((hand_made_sweep / "results.json").read_text())["configs"]
    card = method_card(page_of(hand_made_sweep))
    assert list(card) == [c["config_id"] for c in configs] == [a.config_id for a in ARMS]
    for config in configs:
        row = card[config["config_id"]]
        assert row["seeds"]["value"] == len(config["seeds"]) == 3
        assert row["accuracy_median"]["value"] == config["accuracy_median"]
        assert row["time_median_s"]["value"] == config["time_median_s"]
        if config["variant"] in ("baseline", "frontier"):
            assert "reference" in row["text"] and "verdict" not in row
            continue
        assert row["verdict"]["value"] == config["verdict"]
        assert row["speedup"]["value"] == [config["speedup"], config["speedup_ci_low"], config["speedup_ci_high"]]
        delta = [config["accuracy_delta"], config["accuracy_delta_ci_low"], config["accuracy_delta_ci_high"]]
        assert row["accuracy_delta"]["value"] == delta
        assert row["speedup_to_full_baseline"]["value"] == config["speedup_to_full_baseline"]
        if config["speedup"] is not None:
            assert row["speedup"]["text"].startswith(speedup_text(config["speedup"]))
            low, high = speedup_text(config["speedup_ci_low"]), speedup_text(config["speedup_ci_high"])
            assert f"[{low}, {high}]" in row["speedup"]["text"]
            assert row["accuracy_delta"]["text"].startswith(delta_text(config["accuracy_delta"]))
    assert {c: card[c]["verdict"]["value"] for c in VERDICTS} == VERDICTS  # as the hand-made arms were planted
    assert "no paired seeds" in card["method-4"]["verdict"]["text"]
    assert "best" in card["method-1"]["text"] and "best" not in card["method-5"]["text"]
    assert card["method-1"]["speedup_to_full_baseline"]["text"].endswith("2 of 3 seeds reached it")
    assert card["method-2"]["speedup_to_full_baseline"]["text"] == "never"
    assert card["control"]["class"] == "control" and card["baseline"]["class"] == "reference"


def test_the_trial_table_keeps_every_trial_with_results_jsons_numbers(hand_made_sweep):
    assert main([str(hand_made_sweep)]) == 0
    html = page_of(hand_made_sweep)
    trials = json.loads((hand_made_sweep / "results.json").read_text())["trials"]
    rows = trial_rows(html)
    assert "<details id='trial-details'>" in html and list(rows) == [t["trial_id"] for t in trials]
    for trial in trials:
        row = rows[trial["trial_id"]]
        for key, column in (("final_metric", "eval/accuracy"), ("wall_s", "wall_s")):
            assert row[key]["value"] == trial[column]
        assert row["time_to_baseline_s"]["value"] == trial["time_to_baseline_s"]
        assert row["speedup"]["value"] == trial["speedup"]
        assert row["cpu_s"]["value"] == trial["cpu_s"] and row["host_load"]["value"] == trial["host_load"]
        if trial["speedup"] is not None:
            assert row["speedup"]["text"] == speedup_text(trial["speedup"])
            assert row["time_to_baseline_s"]["text"] == seconds_text(trial["time_to_baseline_s"])
        if trial["eval/accuracy"] is not None:
            assert row["final_metric"]["text"] == metric_text(trial["eval/accuracy"])
    baselines = [t["trial_id"] for t in trials if t["variant"] == "baseline"]
    assert [tid for tid, row in rows.items() if row["class"] == "baseline"] == baselines
    assert all(rows[tid]["speedup"]["text"] == "1.00×" for tid in baselines)  # each against its own seed's
    failed = next(t["trial_id"] for t in trials if t["status"] == "ERROR")
    assert rows[failed]["speedup"]["text"] == "–" and "RuntimeError: boom" in rows[failed]["text"]


def test_the_tolerance_the_sweep_was_judged_with_is_the_one_the_page_judges_with(tmp_path):
    folder = write_hand_made(tmp_path / "tolerant")
    document = json.loads((folder / "results.json").read_text())
    # Δ = -0.1: within a 0.2 tolerance it counts as equal accuracy, priced at the full baseline's time (faster)
    for tolerance, expected in ((0.2, "faster"), (0.005, "less accurate")):
        (folder / "results.json").write_text(json.dumps(document | {"accuracy_tolerance": tolerance}))
        assert main([str(folder), "--no-mlflow"]) == 0
        assert method_card(page_of(folder))["method-2"]["verdict"]["value"] == expected  # Δ = -0.1


def test_no_absolute_path_of_this_machine_on_the_page(hand_made_sweep, tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)  # the sweep folder is under the working directory: relative to it
    assert main(["made"]) == 0
    html = page_of(hand_made_sweep)
    assert "From made/results.json;" in html and "no MLflow store beside this sweep (mlflow.db)" in html
    assert str(tmp_path) not in html
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # it is not: only its own name and file, after an ellipsis
    assert main([str(hand_made_sweep)]) == 0
    html = page_of(hand_made_sweep)
    assert "From …/made/results.json;" in html and str(tmp_path) not in html


def test_page_names_the_hardware_the_arms_and_the_repeats(hand_made_sweep):
    assert main([str(hand_made_sweep)]) == 0
    html = page_of(hand_made_sweep)
    assert f"<b>Measured on:</b> {MACHINE}." in html
    assert "24 (3 baseline, 3 frontier, 3 control, 15 method; 1 ERROR, 3 STOPPED, 20 TERMINATED)" in html
    assert "in 8 configurations" in html and "each configuration ran with 3 seeds" in html


def test_without_mlflow_the_page_says_why_there_are_no_traces(hand_made_sweep):
    assert main([str(hand_made_sweep), "--no-mlflow"]) == 0
    assert "No trace summary: MLflow was not read (--no-mlflow)" in page_of(hand_made_sweep)
    assert main([str(hand_made_sweep)]) == 0  # no mlflow.db beside it: tracking was off
    assert "No trace summary: no MLflow store beside this sweep" in page_of(hand_made_sweep)


def test_traces_are_drawn_and_tabled_per_algorithm_and_event(hand_made_sweep, tmp_path):
    sweep = read_sweep(hand_made_sweep)
    rows = (TraceRow("SelectiveBackprop", "after_dataloader", 8, 0.5), TraceRow("SelectiveBackprop", "init", 1, 0.001))
    trials = tuple(dataclasses.replace(t, traces=rows if t.variant == "method" else ()) for t in sweep.trials)
    paths = write_report(sweep.replace(trials=trials), tmp_path / "out")
    assert [p.name for p in paths] == ["time_to_accuracy.png", "pareto.png", "traces.png", "report.html"]
    table = section(paths[-1].read_text(), "traces")
    assert "after_dataloader" in table and "<td class='num'>120</td>" in table and "7.500 s" in table  # 15 trials


@pytest.mark.spawns
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

    from raycomp.report.write import write_sweep_report
    from raycomp.results.configs import summarize_configs
    from raycomp.results.results_files import read_results
    from raycomp.tracking.ref import RunRef

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    uri = f"http://127.0.0.1:{free_port()}"
    trials = read_results(hand_made_sweep).trials  # written by hand-made trials that reported no traces
    verdicts = summarize_configs(trials, "max")
    paths = write_sweep_report(
        trials, verdicts, "made", "eval/accuracy", "max", hand_made_sweep, RunRef(uri, "1", "0" * 32)
    )
    assert [p.name for p in paths] == ["time_to_accuracy.png", "pareto.png", "report.html"]
    assert f"No trace summary: the MLflow store {uri} did not answer" in paths[-1].read_text()


@pytest.mark.parametrize(
    "keep",
    [
        pytest.param(lambda r: r.arm.variant != "baseline", id="no-baseline"),
        pytest.param(lambda r: r.status == "ERROR", id="all-failed"),
        pytest.param(lambda r: r.arm.config_id == "baseline", id="baseline-only"),
        pytest.param(lambda r: r.arm.repeat == 0, id="one-repeat"),
        pytest.param(lambda r: r.arm.variant in ("baseline", "method"), id="no-frontier-no-control"),
    ],
)
def test_the_report_is_written_whatever_the_sweeps_shape(tmp_path, keep):
    folder = write_hand_made(tmp_path / "odd", [r for r in hand_made_records() if keep(r)])
    assert main([str(folder), "--no-mlflow"]) == 0
    html = page_of(folder)
    assert '<table id="headline">' in html and '<table id="method-card">' in html
    if not any(keep(r) for r in hand_made_records() if r.arm.variant == "baseline"):
        judged = "no baseline to compare with" in html or "no method configuration was judged" in html
        assert judged or '<span class="verdict failed">failed</span>' in html  # all-failed: the state, no verdict


def test_a_method_never_judged_is_shown_without_a_verdict():
    arms = (Arm("method-1", "method", {"x": 1}),)  # no baseline at all
    sweep_html = _render(hand_made_records(arms=arms))
    assert "no baseline to compare with" in sweep_html and "Best configuration" in sweep_html


def _render(records) -> str:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as scratch:
        folder = write_hand_made(Path(scratch) / "s", records)
        paths = write_report(read_sweep(folder), Path(scratch) / "out")
        return paths[-1].read_text()
