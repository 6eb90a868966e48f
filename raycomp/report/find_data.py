"""A find as its report page sees it (``FindReport``), read from the ``find.json`` a find writes
(``raycomp.find.files``): the answer and its confirmed verdict, each candidate's path through the stages, and
every arm it trained with its trials. Nothing is judged again here: the verdicts are the find's own.

``pareto_front`` is the one computation: which arms no other arm beats in both time and metric.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raycomp.base import keys
from raycomp.base.errors import NotFound, RaycompError, one_line
from raycomp.find.files import FIND_JSON
from raycomp.find.plan import PROXY_SUFFIX
from raycomp.find.state import Line
from raycomp.report.text import shown_path
from raycomp.results.results_document import json_number
from raycomp.results.verdicts import Verdict

CLOCKS = {  # find.timing -> what the times are, for the axes and the page
    "steps": "the training steps' own time (s)",
    "cpu": "the training steps' CPU time (s)",
    "wall": "the whole fit's wall time (s)",
}
REFERENCE_ARMS = (keys.BASELINE, keys.CONTROL)


@dataclasses.dataclass(frozen=True)
class TriedArm:
    """One arm the find trained: a recipe's key, the baseline, a frontier budget or the control."""

    arm: str
    seeds: tuple[int, ...]
    accuracy_median: float | None
    time_median_s: float | None
    failed: tuple[int, ...] = ()
    stages: tuple[str, ...] = ()
    runs: tuple[dict[str, Any], ...] = ()  # each trial: seed, accuracy, time_s, stage, curve, error

    @property
    def is_reference(self) -> bool:
        return self.arm in REFERENCE_ARMS or self.arm.startswith(f"{keys.FRONTIER}-")

    @property
    def has_point(self) -> bool:
        return self.accuracy_median is not None and self.time_median_s is not None


@dataclasses.dataclass(frozen=True)
class ProxyHeld:
    """One recipe a find on a proxy judged there: its verdict on the proxy, at full length (None: not run there),
    whether the proxy's call held (None: not run, or not shown either way there), and whether it was not run alone
    because the recipe it is in held (``covered``)."""

    recipe: str
    proxy: Verdict
    full: Verdict | None
    held: bool | None
    covered: bool = False


@dataclasses.dataclass(frozen=True)
class FindReport:
    name: str
    metric: str
    mode: str
    timing: str
    tolerance: float | None
    headline: str
    recommended: dict[str, dict[str, Any]] | None
    chosen: str | None
    verdict: Verdict | None  # the chosen recipe's on Confirm's fresh seeds
    control: Verdict | None
    lines: dict[str, Line]  # where each candidate ended, and how
    paths: dict[str, list[Line]]  # what each stage said of each candidate
    left_out: dict[str, str]
    tried: tuple[TriedArm, ...]
    source: str  # where the data came from, in words
    folder: Path | None = None
    proxy: str = ""  # the shorter run its search raced on ("" without one)
    proxy_data: float = 1.0  # the share of the training data it trained on
    proxy_held: tuple[ProxyHeld, ...] = ()

    @property
    def clock(self) -> str:
        return CLOCKS.get(self.timing, f"time ({self.timing}, s)")

    @property
    def recipes(self) -> list[TriedArm]:
        return [arm for arm in self.tried if not arm.is_reference]

    def arm(self, name: str) -> TriedArm | None:
        return next((arm for arm in self.tried if arm.arm == name), None)


def is_find_folder(path: str | Path) -> bool:
    """A find's run folder (it holds find.json), or find.json itself."""
    path = Path(path)
    return (path.name == FIND_JSON and path.is_file()) or (path / FIND_JSON).is_file()


def read_find(path: str | Path) -> FindReport:
    """The find in ``path`` (its run folder, or its find.json); ``NotFound`` when it holds none."""
    path = Path(path)
    file = path if path.name == FIND_JSON else path / FIND_JSON
    try:
        document = json.loads(file.read_text())
    except (OSError, ValueError) as error:
        raise NotFound(f"no find at {shown_path(path)}: {file.name} cannot be read ({error})") from error
    try:
        return find_report(document, shown_path(file), file.parent)
    except (KeyError, TypeError, ValueError, AttributeError) as error:  # hand-edited: one line, not a traceback (L2)
        message = f"{shown_path(file)} is not a find.json raycomp wrote: {one_line(error)}"
        raise RaycompError(message) from error


def find_report(document: dict[str, Any], source: str, folder: Path | None = None) -> FindReport:
    """A find.json's document as the page reads it (a file written before it kept the metric, the clock or the
    paths reads as judged on eval/accuracy, higher is better, on the steps' time, with paths of one step)."""
    lines = {name: Line(**line) for name, line in document.get("candidates", {}).items()}
    paths = {name: [Line(**step) for step in steps] for name, steps in document.get("paths", {}).items()}
    return FindReport(
        name=document.get("name") or (folder.name if folder else "find"),
        metric=document.get("metric", keys.DEFAULT_METRIC),
        mode=document.get("mode", keys.DEFAULT_MODE),
        timing=document.get("timing", "steps"),
        tolerance=document.get("accuracy_tolerance"),
        headline=document["headline"],
        recommended=document.get("recommended"),
        chosen=document.get("chosen"),
        verdict=_verdict(document.get("verdict")),
        control=_verdict(document.get("control")),
        lines=lines,
        paths={name: paths.get(name) or [line] for name, line in lines.items()},
        left_out=dict(document.get("left_out", {})),
        # the full run's arms: a proxy's (``name@proxy``, a shorter run) stay in find.json, off this page's axes
        tried=tuple(
            _arm(row, index)
            for index, row in enumerate(document.get("tried", []))
            if not str(row.get("arm", "")).endswith(PROXY_SUFFIX)
        ),
        source=source,
        folder=folder,
        proxy=(document.get("proxy") or {}).get("max_duration", ""),
        proxy_data=float((document.get("proxy") or {}).get("data_fraction", 1.0)),
        proxy_held=tuple(
            ProxyHeld(
                row["recipe"],
                _verdict(row["proxy"]),
                _verdict(row.get("full")),
                row.get("held"),  # type: ignore[arg-type]
                bool(row.get("covered")),
            )
            for row in (document.get("proxy") or {}).get("recipes", [])
        ),
    )


def _arm(row: dict[str, Any], index: int) -> TriedArm:
    def number(key: str) -> float | None:
        try:
            return json_number(row.get(key))
        except ValueError as error:
            raise ValueError(f"tried[{index}].{key}: {error}") from None

    return TriedArm(
        row["arm"],
        tuple(row.get("seeds", ())),
        number("accuracy_median"),
        number("time_median_s"),
        tuple(row.get("failed", ())),
        tuple(row.get("stages", ())),
        tuple(row.get("runs", ())),
    )


def _verdict(data: dict[str, Any] | None) -> Verdict | None:
    return Verdict(**{**data, "seeds": tuple(data["seeds"])}) if data else None


def pareto_front(arms: Sequence[TriedArm], mode: str) -> list[TriedArm]:
    """The arms no other arm beats in both median time (lower) and median metric (``mode``), fastest first: the
    best metric each time buys. An arm that ties another in both is kept with it."""
    sign = 1.0 if mode == "max" else -1.0
    points = {arm.arm: (float(arm.time_median_s), sign * float(arm.accuracy_median)) for arm in arms if arm.has_point}

    def beaten(time: float, value: float) -> bool:
        return any(t <= time and v >= value and (t, v) != (time, value) for t, v in points.values())

    front = [arm for arm in arms if arm.arm in points and not beaten(*points[arm.arm])]
    return sorted(front, key=lambda arm: points[arm.arm][0])


def numbered(report: FindReport) -> dict[str, int]:
    """Each recipe tried, numbered from 1 in find.json's order: the figure's labels and the page's table rows."""
    return {arm.arm: number for number, arm in enumerate(report.recipes, start=1)}


def frontier_budget(arm: str) -> float | None:
    """The budget of a baseline arm (1.0 for the baseline itself, ``frontier-0.5`` -> 0.5), None for others."""
    if arm == keys.BASELINE:
        return 1.0
    prefix = f"{keys.FRONTIER}-"
    return float(arm.removeprefix(prefix)) if arm.startswith(prefix) else None
