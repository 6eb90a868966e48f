"""The report at a sweep's end, from its summaries and verdicts in memory: with tracking off it still shows the
traces the trials reported, and so does ``python -m raycomp.report`` on the results.json it left, with the same
verdicts judged again from the trials (no Ray, no MLflow)."""

from __future__ import annotations

from reportkit import method_card, section, traced_records

from raycomp.cli.report import main
from raycomp.report.write import write_sweep_report
from raycomp.results.configs import summarize_configs
from raycomp.results.results_files import write_results
from raycomp.results.summary import summarize

FILES = ["time_to_accuracy.png", "pareto.png", "traces.png", "report.html"]


def test_with_tracking_off_the_report_shows_the_traces_the_trials_reported(tmp_path):
    folder = tmp_path / "untracked"
    summaries = summarize(traced_records())
    verdicts = summarize_configs(summaries, "max")
    paths = write_sweep_report(summaries, verdicts, "untracked", "eval/accuracy", "max", folder, None)
    assert paths == [folder / "report" / name for name in FILES]
    html = paths[-1].read_text()
    assert "No trace summary" not in html and "From …/untracked/results.json" in html
    # 14 method trials reported (the failed one never did): 16 calls in 1 s at the last of 4 reports, 8 in 0.5 s
    # at the last of 2 (the 3 stopped)
    traces = section(html, "traces")
    assert "<td>SelectiveBackprop</td><td>after_dataloader</td><td class='num'>14</td>" in traces
    assert "<td class='num'>200</td><td class='num'>12.500 s</td>" in traces
    assert "best" in method_card(html)["method-1"]["text"]


def test_the_cli_shows_the_same_page_from_results_json(tmp_path):
    folder = tmp_path / "untracked"
    summaries = summarize(traced_records())
    verdicts = summarize_configs(summaries, "max")
    html = write_sweep_report(summaries, verdicts, "untracked", "eval/accuracy", "max", folder, None)[-1].read_text()
    write_results(folder, summaries, "eval/accuracy", "max", verdicts)
    for argv in ([str(folder)], [str(folder), "--no-mlflow"]):  # no mlflow.db beside it: tracking was off
        assert main(argv) == 0
        again = (folder / "report" / "report.html").read_text()
        assert section(again, "traces") == section(html, "traces"), argv
        assert method_card(again) == method_card(html), argv  # the verdicts judged again, to the same numbers
        assert section(again, "headline") == section(html, "headline"), argv
