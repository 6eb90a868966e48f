"""The page says what the CLI says (issue 32): every text and figure follows the sweep's mode ("lower is better"
for a metric to minimise), a configuration whose trials failed is `failed` with its error's first line, and
open verdicts from fewer than 3 seeds are uninformative, the control's included. Hand-made results, no Ray."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from reportkit import hand_made_records, method_card, section

from raycomp.base import keys
from raycomp.cli.report import main
from raycomp.report.pareto import pareto_figure
from raycomp.report.plots import curves_figure
from raycomp.report.sweep import read_sweep
from raycomp.results.configs import summarize_configs
from raycomp.results.results_files import write_results
from raycomp.results.summary import TrialRecord, summarize
from raycomp.results.verdict_text import format_verdicts

MAE = "eval/mae"
FIRST_LINE = "ValueError: Input height (16) doesn't match model (32)."


def as_error_metric(records: list[TrialRecord]) -> list[TrialRecord]:
    """The hand-made sweep with its metric an error to minimise: eval/mae = 1 - accuracy at every report."""
    return [
        dataclasses.replace(
            record,
            history=[
                {**{k: v for k, v in report.items() if k != "eval/accuracy"}, MAE: 1 - report["eval/accuracy"]}
                for report in record.history
            ],
        )
        for record in records
    ]


def write_sweep(folder: Path, records: list[TrialRecord], metric: str = "eval/accuracy", mode: str = "max") -> Path:
    summaries = summarize(records, metric, mode)
    write_results(folder, summaries, metric, mode, summarize_configs(summaries, mode))
    assert main([str(folder), "--no-mlflow"]) == 0
    return folder


def page_of(folder: Path) -> str:
    return (folder / "report" / "report.html").read_text()


def test_a_minimised_metric_reads_lower_is_better_in_every_text_and_figure(tmp_path):
    folder = write_sweep(tmp_path / "mae", as_error_metric(hand_made_records()), MAE, "min")
    html = page_of(folder)
    assert "eval/mae: lower is better." in html
    assert "<i>less accurate</i> (worse in eval/mae) when the Δ interval lies wholly above +0.005" in html
    assert "wholly below −" not in html and "Accuracy against time" not in html
    assert "<h2>eval/mae against time (lower is better)</h2>" in html and "<h2>Time to eval/mae</h2>" in html
    assert "better configurations sit lower" in html
    assert "[95% interval]; lower is better" in section(html, "method-card")
    assert method_card(html)["method-2"]["verdict"]["value"] == "less accurate"  # 0.1 more error than the baseline

    sweep = read_sweep(folder)
    pareto = pareto_figure(sweep).axes[0]
    assert pareto.get_title() == "eval/mae against time (lower is better); bars: 95% intervals"
    assert pareto.get_ylabel() == "final eval/mae, median over seeds (lower is better)"
    curves = curves_figure(sweep).axes[0]
    assert curves.get_ylabel() == "eval/mae (lower is better)" and "eval/mae against time" in curves.get_title()

    rule = format_verdicts(sweep.verdicts, MAE).splitlines()[0]
    assert rule.startswith("verdicts on eval/mae (lower is better): faster needs both halves shown")
    assert "the Δ interval's worse end within +0.005" in rule
    assert "less accurate when the Δ interval lies wholly above +0.005" in rule


def test_a_maximised_metric_reads_higher_is_better(hand_made_sweep):
    assert main([str(hand_made_sweep), "--no-mlflow"]) == 0
    html = page_of(hand_made_sweep)
    assert "eval/accuracy: higher is better." in html and "the Δ interval lies wholly below −0.5 points" in html
    assert pareto_figure(read_sweep(hand_made_sweep)).axes[0].get_ylabel().endswith("(higher is better)")


def test_a_failed_configuration_is_failed_on_the_page_with_its_errors_first_line(tmp_path):
    records = [
        dataclasses.replace(r, status=keys.ERROR, history=[], error=f"{FIRST_LINE} | more", error_line=FIRST_LINE)
        if r.arm.config_id == "method-1"
        else r
        for r in hand_made_records()
    ]
    folder = write_sweep(tmp_path / "failing", records)
    html = page_of(folder)
    row = method_card(html)["method-1"]
    configs = json.loads((folder / "results.json").read_text())["configs"]
    written = next(c for c in configs if c["config_id"] == "method-1")
    assert row["verdict"]["value"] == written["verdict"] == "failed"
    assert FIRST_LINE in row["verdict"]["text"] and "no evidence" not in row["text"]
    assert "no paired seeds" not in row["text"] and "| more" not in row["text"]
    counts = html.split("<td id='counts'", 1)[1].split("</td>", 1)[0]
    assert '1 <span class="verdict failed">failed</span>' in counts
    best = html.split("<td id='best'", 1)[1].split("</td>", 1)[0]
    assert best.startswith(" data-value='null'>none") and "no configuration was shown faster" in best


def test_two_seeds_are_uninformative_not_as_it_should_be(tmp_path):
    folder = write_sweep(tmp_path / "two", hand_made_records(repeats=2))
    html = page_of(folder)
    control = html.split("<td id='control'", 1)[1].split("</td>", 1)[0]
    assert "as it should be" not in control
    assert "uninformative: from 2 seeds its interval rules nothing out" in control
    assert 'id="few-seeds"' in html
    assert "Intervals from fewer than 3 seeds are uninformative (control, method-1)" in html
    card = method_card(html)
    assert "uninformative: from 2 seeds" in card["control"]["speedup"]["text"]
    assert "uninformative" not in card["method-3"]["text"]  # slower at 2 seeds: its interval cleared 1
    assert "accuracy not shown" in card["method-1"]["text"]  # its speed-up cleared 1, its accuracy did not
    noise = html.split("<td id='noise-floor'", 1)[1].split("</td>", 1)[0]
    assert "at this noise 2 paired seeds find a speed-up of" in noise
