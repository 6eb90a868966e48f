"""Helpers of the report tests: hand-made sweep results, and the method-card table read back from a page."""

from __future__ import annotations

import dataclasses
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from raycomp.keys import TRACES, WALL
from raycomp.report.results_files import write_results
from raycomp.report.summary import TrialRecord, summarize

SB = "algorithms.selective_backprop"
MACHINE = "Test CPU, 2 cores, torch threads: 1"


def curve(speed: float, top: float, reports: int = 4) -> list[dict[str, Any]]:
    """Reports whose accuracy rises towards ``top``, ``speed`` times as fast as the baseline's clock."""
    return [
        {
            "step": 10 * (i + 1),
            WALL: 10.0 * (i + 1) / speed,
            "eval/accuracy": top * (1 - 0.5 ** (i + 1)),
            "machine": MACHINE,
        }
        for i in range(reports)
    ]


def hand_made_records() -> list[TrialRecord]:
    return [
        TrialRecord("t0", "baseline", {}, "TERMINATED", curve(1.0, 0.8)),
        TrialRecord("t1", "method", {f"{SB}.keep": 0.5, "seed": 1}, "TERMINATED", curve(1.25, 0.82)),
        TrialRecord("t2", "method", {f"{SB}.keep": 0.5, "seed": 2}, "TERMINATED", curve(1.5, 0.81)),
        TrialRecord("t3", "method", {f"{SB}.keep": 0.25}, "TERMINATED", curve(2.0, 0.7)),  # fast, never there
        TrialRecord("t4", "method", {f"{SB}.keep": 0.75}, "STOPPED", curve(1.1, 0.8, reports=2)),
        TrialRecord("t5", "method", {f"{SB}.keep": 0.9}, "ERROR", [], error="RuntimeError: boom"),
    ]


def traced_records() -> list[TrialRecord]:
    """The hand-made trials, each report carrying the Engine's trace rows so far, as a trial reports them:
    SelectiveBackprop ran 4 times in 0.0625 s per report; the baseline ran no algorithm."""
    records = []
    for record in hand_made_records():
        history = [
            {**report, TRACES: [] if record.variant == "baseline" else [trace_row(4 * (i + 1), 0.25 * (i + 1))]}
            for i, report in enumerate(record.history)
        ]
        records.append(dataclasses.replace(record, history=history))
    return records


def trace_row(count: int, total_s: float) -> dict[str, Any]:
    return {"algorithm": "SelectiveBackprop", "event": "after_dataloader", "count": count, "total_s": total_s}


def write_hand_made(folder: Path) -> Path:
    """A sweep folder holding results.json from ``summarize`` over hand-made trials."""
    write_results(folder, summarize(hand_made_records()), "eval/accuracy", "max")
    return folder


class _Card(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, Any]] = {}
        self._row: dict[str, Any] | None = None
        self._key: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "tr" and "data-trial" in attributes:
            self._row = {"class": attributes.get("class") or "", "text": ""}
            self.rows[str(attributes["data-trial"])] = self._row
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
    """Per trial id: its row's class and whole text, and per numeric cell its ``data-value`` and shown text."""
    parser = _Card()
    parser.feed(html)
    return parser.rows
