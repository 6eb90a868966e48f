"""A find's state, typed by stage and written by pydantic (issue 56 item 5): what a killed find continues from."""

from __future__ import annotations

import json

import pydantic
import pytest

from raycomp.find.recipes import Method, Recipe
from raycomp.find.state import (
    COMPOSE,
    CONFIRM,
    DONE,
    SCREEN,
    STAGES,
    TUNE,
    ComposeState,
    ConfirmState,
    FindState,
    Halving,
    Line,
    ScreenState,
    TuneState,
    next_stage,
)
from raycomp.results.verdicts import Verdict

MIXUP = Recipe.of(Method("mixup", (("alpha", 0.2),)))
PR = Recipe.of(Method("progressive_resizing", (("initial_scale", 0.5), ("resize_targets", True))))


def verdict(name: str) -> Verdict:
    return Verdict(name, 3, (0, 1, 2), 1.3, 1.1, 1.5, 1.2, 3, 0.9, 10.0, 0.001, -0.004, 0.006, 0, 0, tolerance=0.01)


def test_every_stages_work_comes_back_whole_through_json():
    state = FindState(
        stage=COMPOSE,
        spent_s=61.5,
        rounds=4,
        lines={"mixup": Line(TUNE, "tuned to mixup(alpha=0.2)")},
        paths={"mixup": [Line(SCREEN, "shown faster"), Line(TUNE, "tuned")]},
        tolerance=0.01,
        spread="the baseline's eval/accuracy varies by ±0.3 points",
        screen=ScreenState(open={"cutmix": 4}, survivors=["mixup", "progressive_resizing"]),
        tune=TuneState(halving={"mixup": Halving([MIXUP], 6)}, tuned={"mixup": MIXUP, "progressive_resizing": PR}),
        compose=ComposeState(current=MIXUP, queue=["ema"], trying="progressive_resizing", rival=PR, n=3),
        confirm=ConfirmState(recipe=MIXUP.joined(PR), n=5, verdict=verdict("faster"), control=verdict("equivalent")),
    )
    back = FindState.from_data(json.loads(json.dumps(state.to_data())))
    assert back == state
    assert back.compose.rival.key == PR.key and back.tune.halving["mixup"].alive == [MIXUP]


def test_a_document_that_is_not_a_finds_state_is_refused_as_a_value_error():
    with pytest.raises(ValueError):
        FindState.from_data({"stage": SCREEN, "screen": {"open": {"mixup": "three"}}})
    assert issubclass(pydantic.ValidationError, ValueError)  # what the driver sets a damaged file aside on


def test_the_stage_order_is_written_once():
    assert [next_stage(stage) for stage in STAGES] == [TUNE, COMPOSE, CONFIRM, DONE]
