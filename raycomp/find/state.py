"""Where a find stands between rounds (``FindState``): its stage, each stage's open work, each candidate's path.

The decisions change it only once a look's trials are all in, and the driver writes it to the run folder
(``to_data``) before each round, so a find killed at any moment continues from its stage.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pydantic

from raycomp.find.recipes import Recipe
from raycomp.results.verdicts import Verdict

SCREEN, TUNE, COMPOSE, CONFIRM, DONE = "screen", "tune", "compose", "confirm", "done"
STAGES = (SCREEN, TUNE, COMPOSE, CONFIRM)
TRIALS_FAILED = "its trials failed"  # how a candidate whose every trial raised leaves (Screen), with the error


@dataclasses.dataclass
class Line:
    """How far a candidate got (the stage it reached) and how it ended there, in a few words; in a candidate's
    path (``FindState.paths``), one step of it: what a stage decided about it."""

    stage: str
    outcome: str


@dataclasses.dataclass
class Halving:
    """One survivor's successive halving in Tune: the settings still in (as recipes) and their look's seeds."""

    alive: list[Recipe]
    n: int


@dataclasses.dataclass
class ScreenState:
    """Screen's open work: each candidate still open with its look's seeds, and those shown faster, in order."""

    open: dict[str, int] = dataclasses.field(default_factory=dict)
    survivors: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class TuneState:
    """Tune's: each survivor's successive halving, and the setting chosen for each."""

    halving: dict[str, Halving] = dataclasses.field(default_factory=dict)
    tuned: dict[str, Recipe] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class ComposeState:
    """Compose's: the recipe built so far, the survivors it has yet to try adding, the one being tried (with the
    best member of that combination, its rival) and its look's seeds."""

    current: Recipe | None = None
    queue: list[str] = dataclasses.field(default_factory=list)
    trying: str | None = None
    rival: Recipe | None = None
    n: int = 0


@dataclasses.dataclass
class ConfirmState:
    """Confirm's: the recipe it runs, its look's seeds, its verdict on the fresh seeds and the control's."""

    recipe: Recipe | None = None
    n: int = 0
    verdict: Verdict | None = None
    control: Verdict | None = None
    # With a proxy: each recipe's verdict on the proxy (the confirmed one's and each tuned survivor's), and each
    # recipe Confirm ran at full length with its verdict there, in the order it ran them (a miss, then the next).
    proxy: dict[str, Verdict] = dataclasses.field(default_factory=dict)
    full: dict[str, Verdict] = dataclasses.field(default_factory=dict)
    # then each tuned survivor Confirm did not run, alone at full length on Confirm's first seeds
    alone: dict[str, Verdict] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class FindState:
    """The stage, what the rounds cost so far, each candidate's line and path, the tolerance in force, and each
    stage's own open work (``screen``, ``tune``, ``compose``, ``confirm``)."""

    stage: str = SCREEN
    spent_s: float = 0.0  # wall time of the rounds run so far
    rounds: int = 0
    lines: dict[str, Line] = dataclasses.field(default_factory=dict)
    paths: dict[str, list[Line]] = dataclasses.field(default_factory=dict)  # each stage's word on a candidate
    tolerance: float | None = None  # the accuracy tolerance in force, once the baseline's spread settled it
    spread: str = ""  # what the baseline's spread lets the seeds show (spread.spread_line)
    out_of_reach: str = ""  # why the find stopped before the candidates: the tolerance asked is out of reach
    screen: ScreenState = dataclasses.field(default_factory=ScreenState)
    tune: TuneState = dataclasses.field(default_factory=TuneState)
    compose: ComposeState = dataclasses.field(default_factory=ComposeState)
    confirm: ConfirmState = dataclasses.field(default_factory=ConfirmState)

    def leave(self, name: str, stage: str, outcome: str, step: str | None = None) -> None:
        """``name`` ends ``stage`` with ``outcome`` (its answer line), recorded in its path as ``step`` or that."""
        self.lines[name] = Line(stage, outcome)
        self.note(name, stage, step or outcome)

    def note(self, name: str, stage: str, step: str) -> None:
        """A step of ``name``'s path that its answer line does not show (the report page does)."""
        self.paths.setdefault(name, []).append(Line(stage, step))

    def to_data(self) -> dict[str, Any]:
        """JSON-ready, by pydantic from the types above (no hand-written field list to keep in step)."""
        return _STATE.dump_python(self, mode="json")

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> FindState:
        """Back from ``to_data``; ``ValueError`` (pydantic's) when the data is not a find's state."""
        return _STATE.validate_python(data)


_STATE = pydantic.TypeAdapter(FindState)


def next_stage(stage: str) -> str:
    """The stage after ``stage`` (``DONE`` after the last): the order is ``STAGES``, written once."""
    order = (*STAGES, DONE)
    return order[order.index(stage) + 1]


def describe(verdict: Verdict | None, against: str = "") -> str:
    """A verdict in one phrase, both halves side by side with what the accuracy's interval rules out:
    ``faster 1.31x [1.12x, 1.53x], Δ +0.2 points [-0.4, +0.8]: equal within ±0.5 points, 4 seeds``."""
    if verdict is None:
        return "not judged"
    words = [verdict.verdict + (f" than {against}" if against else "")]
    if verdict.speedup_ci_low is not None and verdict.speedup is not None:
        words.append(f"{verdict.speedup:.2f}x [{verdict.speedup_ci_low:.2f}x, {verdict.speedup_ci_high:.2f}x]")
    if verdict.accuracy_text():
        words.append(verdict.accuracy_text())
    words.append(f"{verdict.n} seed{'s' if verdict.n != 1 else ''}")
    if verdict.note and not verdict.note.startswith("accuracy not shown"):  # the Δ's words above say it
        words.append(verdict.note)
    return ", ".join(words)
