"""Each candidate's path through the stages (``FindState.paths``): what every stage said of it, kept beside its
answer line (which only holds where it ended), through the state file, and in find.json with the trials' stages.
Simulated trials (bench/simulate_find.py)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
from find_simulation import simulation

from raycomp.config import ExperimentConfig
from raycomp.find.answer import answer_of
from raycomp.find.decide import advance, start
from raycomp.find.files import FIND_JSON, write_find_files
from raycomp.find.observations import Observations
from raycomp.find.state import COMPOSE, CONFIRM, SCREEN, TUNE, FindState

ADDING_UP = simulation.World(simulation.independent({"m1": 1.5, "m2": 1.4}))


def simulated(plan, world, seed=0):
    rng, seeds, state, observations = np.random.default_rng(seed), {}, start(plan), Observations()
    while (round_ := advance(plan, state, observations)) is not None:
        trials = simulation.draw_round(round_, world, rng, seeds)
        observations.add(dataclasses.replace(trial, stage=round_.stage) for trial in trials)
        state = FindState.from_data(json.loads(json.dumps(state.to_data())))  # as the driver's file keeps it
    return answer_of(plan, state), observations


def test_a_recipe_members_path_has_a_step_at_every_stage_and_a_dropped_candidate_ends_at_the_screen():
    plan = simulation.plan_for(simulation.candidates(3))
    answer, _ = simulated(plan, ADDING_UP)
    assert answer.recommended is not None and set(answer.recommended.names) == {"m1", "m2"}
    for name in ("m1", "m2"):
        stages = [step.stage for step in answer.paths[name]]
        assert stages == [SCREEN, TUNE, COMPOSE, CONFIRM], (name, answer.paths[name])
        assert answer.paths[name][0].outcome.startswith("shown faster")
        assert answer.paths[name][-1].outcome.startswith(f"{answer.recommended.key} on ")
        assert answer.lines[name].stage == CONFIRM and answer.lines[name].outcome.startswith("in the recipe (")
    composed = " ".join(step.outcome for name in ("m1", "m2") for step in answer.paths[name] if step.stage == COMPOSE)
    assert "starts the recipe" in composed and "added: " in composed
    assert [step.stage for step in answer.paths["m0"]] == [SCREEN]  # a neutral method leaves at the screen


def test_find_json_holds_the_paths_the_clock_and_each_arms_trials_with_their_stage(tmp_path):
    plan = simulation.plan_for(simulation.candidates(3))
    answer, observations = simulated(plan, ADDING_UP)
    config = ExperimentConfig.from_dict({"name": "sim", "find": {"methods": ["mixup"], "timing": "cpu"}})
    write_find_files(tmp_path, config, answer, observations, {"alibi": "no attention"})
    document = json.loads((tmp_path / FIND_JSON).read_text())
    assert (document["name"], document["metric"], document["mode"], document["timing"]) == (
        "sim",
        "eval/accuracy",
        "max",
        "cpu",
    )
    assert [step["stage"] for step in document["paths"]["m1"]] == [SCREEN, TUNE, COMPOSE, CONFIRM]
    rows = {row["arm"]: row for row in document["tried"]}
    assert rows["baseline"]["stages"][0] == SCREEN and CONFIRM in rows["baseline"]["stages"]
    assert rows["control"]["stages"] == [CONFIRM]
    assert [run["seed"] for run in rows["m0"]["runs"]] == rows["m0"]["seeds"]
    assert all(run["accuracy"] is not None and run["stage"] == SCREEN for run in rows["m0"]["runs"])
