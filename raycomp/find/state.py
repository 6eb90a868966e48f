"""Where a find stands between rounds (``FindState``): its stage, each stage's open work, each candidate's path.

The decisions change it only once a look's trials are all in, and the driver writes it to the run folder
(``to_data``) before each round, so a find killed at any moment continues from its stage.
"""

from __future__ import annotations

import dataclasses
from typing import Any

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
class FindState:
    stage: str = SCREEN
    spent_s: float = 0.0  # wall time of the rounds run so far
    rounds: int = 0
    lines: dict[str, Line] = dataclasses.field(default_factory=dict)
    paths: dict[str, list[Line]] = dataclasses.field(default_factory=dict)  # each stage's word on a candidate
    screening: dict[str, int] = dataclasses.field(default_factory=dict)  # open candidate -> its look's seeds
    survivors: list[str] = dataclasses.field(default_factory=list)  # shown faster at the screen, in order
    halving: dict[str, Halving] = dataclasses.field(default_factory=dict)
    tuned: dict[str, Recipe] = dataclasses.field(default_factory=dict)  # each survivor's chosen setting
    current: Recipe | None = None  # the recipe Compose has built so far
    queue: list[str] = dataclasses.field(default_factory=list)  # survivors Compose has yet to try adding
    trying: str | None = None
    rival: Recipe | None = None  # the best member of the combination being tried
    compose_n: int = 0
    recipe: Recipe | None = None  # what Confirm runs
    confirm_n: int = 0
    verdict: Verdict | None = None  # the recipe's verdict on Confirm's fresh seeds
    control: Verdict | None = None  # the control arm's on the same seeds
    tolerance: float | None = None  # the accuracy tolerance in force, once the baseline's spread settled it
    spread: str = ""  # what the baseline's spread lets the seeds show (spread.spread_line)
    out_of_reach: str = ""  # why the find stopped before the candidates: the tolerance asked is out of reach

    def leave(self, name: str, stage: str, outcome: str, step: str | None = None) -> None:
        """``name`` ends ``stage`` with ``outcome`` (its answer line), recorded in its path as ``step`` or that."""
        self.lines[name] = Line(stage, outcome)
        self.note(name, stage, step or outcome)

    def note(self, name: str, stage: str, step: str) -> None:
        """A step of ``name``'s path that its answer line does not show (the report page does)."""
        self.paths.setdefault(name, []).append(Line(stage, step))

    def to_data(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key in ("current", "rival", "recipe"):
            data[key] = getattr(self, key).to_data() if getattr(self, key) else None
        data["tuned"] = {name: recipe.to_data() for name, recipe in self.tuned.items()}
        data["halving"] = {
            name: {"alive": [r.to_data() for r in race.alive], "n": race.n} for name, race in self.halving.items()
        }
        return data

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> FindState:
        data = dict(data)
        for key in ("current", "rival", "recipe"):
            data[key] = Recipe.from_data(data[key]) if data.get(key) else None
        for key in ("verdict", "control"):
            data[key] = _verdict(data.get(key))
        data["tuned"] = {name: Recipe.from_data(recipe) for name, recipe in data["tuned"].items()}
        data["halving"] = {
            name: Halving([Recipe.from_data(r) for r in race["alive"]], race["n"])
            for name, race in data["halving"].items()
        }
        data["lines"] = {name: Line(**line) for name, line in data["lines"].items()}
        data["paths"] = {name: [Line(**step) for step in steps] for name, steps in data.get("paths", {}).items()}
        return cls(**data)


def _verdict(data: dict[str, Any] | None) -> Verdict | None:
    return Verdict(**{**data, "seeds": tuple(data["seeds"])}) if data else None


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
