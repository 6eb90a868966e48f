"""Helpers of the report tests: a hand-made sweep (repeats, a frontier budget, a control, methods with known
verdicts), and the page's tables read back."""

from __future__ import annotations

import dataclasses
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from raycomp.base.keys import CPU, HOST_LOAD, TRACES, WALL
from raycomp.config import arm as config_arm
from raycomp.results.configs import summarize_configs
from raycomp.results.results_files import write_results
from raycomp.results.summary import TrialRecord, summarize

SB = "algorithms.selective_backprop"
MACHINE = "Test CPU, 2 cores, torch threads: 1"


BASELINE_FINAL = (0.80, 0.81, 0.79)  # the baseline's final accuracy at each seed
TIME_NOISE = {  # each configuration's time factor at each seed: the machine's noise, a few percent
    "baseline": (1.00, 1.04, 0.97),
    "frontier-0.5": (1.01, 0.98, 1.02),
    "control": (1.03, 0.99, 1.02),
}
OTHER_NOISE = (1.00, 1.02, 0.99)


@dataclasses.dataclass(frozen=True)
class Arm:
    """A hand-made configuration: ``speed`` times as fast as the baseline, its final accuracy the
    baseline's at the same seed plus ``delta``; ``stopped``/``failed`` at those seeds."""

    config_id: str
    variant: str
    overrides: dict[str, Any]
    speed: float = 1.0
    delta: tuple[float, float, float] = (0.0, 0.0, 0.0)
    reports: int = 4
    budget: float | None = None
    stopped: tuple[int, ...] = ()
    failed: tuple[int, ...] = ()


ARMS = (
    Arm("baseline", "baseline", {}),
    Arm("frontier-0.5", "frontier", {}, reports=2, delta=(-0.04, -0.04, -0.04), budget=0.5),
    Arm("control", "control", {}),
    Arm("method-1", "method", {f"{SB}.keep": 0.5}, speed=1.5, delta=(0.0005, -0.0005, 0.0)),  # faster, Δ shown
    Arm("method-2", "method", {f"{SB}.keep": 0.25}, speed=2.0, delta=(-0.10, -0.09, -0.11)),  # less accurate
    Arm("method-3", "method", {f"{SB}.keep": 0.6}, speed=0.7),  # slower
    Arm("method-4", "method", {f"{SB}.keep": 0.75}, speed=1.1, stopped=(0, 1, 2)),  # ASHA stopped every seed
    Arm("method-5", "method", {f"{SB}.keep": 0.9}, speed=1.1, failed=(0,)),  # one seed failed
)
VERDICTS = {"control": "no evidence", "method-1": "faster", "method-2": "less accurate", "method-3": "slower"}


def curve(speed: float, final: float, reports: int = 4, noise: float = 1.0) -> list[dict[str, Any]]:
    """Reports every 10 s of the baseline's clock (``speed`` times as fast, times ``noise``), the accuracy
    rising to ``final`` at the last of ``reports``."""
    return [
        {
            "step": 10 * (i + 1),
            WALL: 10.0 * (i + 1) * noise / speed,
            "eval/accuracy": final * (1 - 0.5 ** (i + 1)) / (1 - 0.5**reports),
            CPU: 9.5 * (i + 1) * noise / speed,
            HOST_LOAD: 1.5 + 0.1 * i,
            "machine": MACHINE,
        }
        for i in range(reports)
    ]


def hand_made_records(repeats: int = 3, arms: tuple[Arm, ...] = ARMS) -> list[TrialRecord]:
    """Every arm at every seed, seed by seed as a sweep runs them; trial ids t00, t01, ... in that order."""
    records = []
    for repeat in range(repeats):
        for arm in arms:
            noise = TIME_NOISE.get(arm.config_id, OTHER_NOISE)[repeat]
            history = curve(arm.speed, BASELINE_FINAL[repeat] + arm.delta[repeat], arm.reports, noise)
            status, error = "TERMINATED", None
            if repeat in arm.stopped:
                status, history = "STOPPED", history[:2]
            if repeat in arm.failed:
                status, history, error = "ERROR", [], "RuntimeError: boom"
            trial_id = f"t{len(records):02d}"
            records.append(
                TrialRecord(
                    trial_id,
                    config_arm.Arm(arm.variant, arm.config_id, dict(arm.overrides), repeat, arm.budget),
                    status,
                    history,
                    error=error,
                )
            )
    return records


def traced_records(repeats: int = 3) -> list[TrialRecord]:
    """The hand-made trials, each report carrying the Engine's trace rows so far, as a trial reports them:
    SelectiveBackprop ran 4 times in 0.25 s per report in a method trial; the other arms ran no algorithm."""
    records = []
    for record in hand_made_records(repeats):
        history = [
            {**report, TRACES: [] if record.arm.variant != "method" else [trace_row(4 * (i + 1), 0.25 * (i + 1))]}
            for i, report in enumerate(record.history)
        ]
        records.append(dataclasses.replace(record, history=history))
    return records


def trace_row(count: int, total_s: float) -> dict[str, Any]:
    return {"algorithm": "SelectiveBackprop", "event": "after_dataloader", "count": count, "total_s": total_s}


def write_hand_made(folder: Path, records: list[TrialRecord] | None = None) -> Path:
    """A sweep folder holding results.json (with its verdicts, as the sweep's end writes it) over hand-made
    trials."""
    summaries = summarize(hand_made_records() if records is None else records)
    write_results(folder, summaries, "eval/accuracy", "max", summarize_configs(summaries, "max"))
    return folder


def trial_by_config(records: list[TrialRecord]) -> dict[tuple[str, int], str]:
    """``(config_id, repeat)`` -> trial id."""
    return {(r.arm.config_id, r.arm.repeat): r.trial_id for r in records}


class _Rows(HTMLParser):
    def __init__(self, attribute: str) -> None:
        super().__init__()
        self.attribute = attribute
        self.rows: dict[str, dict[str, Any]] = {}
        self._row: dict[str, Any] | None = None
        self._key: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "tr" and self.attribute in attributes:
            self._row = {"class": attributes.get("class") or "", "text": ""}
            self.rows[str(attributes[self.attribute])] = self._row
        elif tag == "td" and self._row is not None and "data-key" in attributes:
            self._key = str(attributes["data-key"])
            self._row[self._key] = {"value": json.loads(str(attributes["data-value"])), "text": ""}

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._key = None
        elif tag == "tr":
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._row is not None:
            self._row["text"] += data
            if self._key is not None:
                self._row[self._key]["text"] += data


def method_card(html: str) -> dict[str, dict[str, Any]]:
    """Per config id: its row's class and whole text, and per numeric cell its ``data-value`` and shown text."""
    parser = _Rows("data-config")
    parser.feed(html)
    return parser.rows


def trial_rows(html: str) -> dict[str, dict[str, Any]]:
    """Per trial id, the same from the collapsed table of every trial."""
    parser = _Rows("data-trial")
    parser.feed(html)
    return parser.rows


def section(html: str, table_id: str) -> str:
    """The inside of the page's table with that id."""
    return html.split(f'<table id="{table_id}">', 1)[1].split("</table>", 1)[0]
