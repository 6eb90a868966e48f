"""The report at a sweep's end, from its summaries in memory: with tracking off it still shows the traces the
trials reported, and so does ``python -m raycomp.report`` on the results.json it left (no Ray, no MLflow)."""

from __future__ import annotations

from reportkit import method_card, traced_records

from raycomp.report import summarize, write_results, write_sweep_report
from raycomp.report.__main__ import main

FILES = ["time_to_accuracy.png", "pareto.png", "traces.png", "report.html"]


def trace_table(html: str) -> str:
    return html.split('<table id="traces">', 1)[1].split("</table>", 1)[0]


def test_with_tracking_off_the_report_shows_the_traces_the_trials_reported(tmp_path):
    folder = tmp_path / "untracked"
    summaries = summarize(traced_records())
    paths = write_sweep_report(summaries, "untracked", "eval/accuracy", "max", folder, None)
    assert paths == [folder / "report" / name for name in FILES]
    html = paths[-1].read_text()
    assert "No trace summary" not in html and f"From {folder / 'results.json'}" in html
    # t1..t3 reported 16 calls in 1 s at their last report, t4 (stopped after 2 reports) 8 in 0.5 s
    assert "<td>SelectiveBackprop</td><td>after_dataloader</td><td class='num'>4</td>" in trace_table(html)
    assert "<td class='num'>56</td><td class='num'>3.500 s</td>" in trace_table(html)
    assert "best" in method_card(html)["t1"]["text"]


def test_the_cli_shows_the_same_traces_from_results_json_without_mlflow(tmp_path):
    folder = tmp_path / "untracked"
    summaries = summarize(traced_records())
    expected = trace_table(
        write_sweep_report(summaries, "untracked", "eval/accuracy", "max", folder, None)[-1].read_text()
    )
    write_results(folder, summaries, "eval/accuracy", "max")
    for argv in ([str(folder)], [str(folder), "--no-mlflow"]):  # no mlflow.db beside it: tracking was off
        assert main(argv) == 0
        assert trace_table((folder / "report" / "report.html").read_text()) == expected, argv
