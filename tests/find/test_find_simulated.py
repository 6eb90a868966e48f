"""Simulated finds (bench/simulate_find.py): the real decision code of ``raycomp.find`` on simulated trial times and
accuracies, 1,000 finds per world. Log-normal time noise of 5 % per trial, a slow or fast spell per seed shared by
every trial at that seed, accuracy noise per seed and per trial.

Each rate is checked with room for Monte Carlo error: a bound of 5 % is allowed 5 % + 3 standard deviations of a
share over 1,000 finds. Every world is drawn from its own fixed seed, so the rates are the same at each run.
"""

from __future__ import annotations

import math

import numpy as np
from find_simulation import simulation

FINDS = 1000
ALPHA = 0.05
ALLOWED = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / FINDS)  # 0.0707


def answers(world: str, seed: int) -> list:
    candidates, model = simulation.WORLDS[world]
    rng = np.random.default_rng(seed)
    return [simulation.simulate_find(simulation.plan_for(candidates), model, rng) for _ in range(FINDS)]


def share(found: list, holds) -> float:
    return sum(1 for answer in found if answer.recommended is not None and holds(answer.recommended)) / len(found)


def test_where_no_candidate_helps_a_recipe_is_recommended_as_faster_in_at_most_5_percent_of_finds():
    found = answers("no effect (9 neutral)", seed=1)
    assert share(found, lambda recipe: True) <= ALLOWED
    assert all(answer.verdict is None or answer.verdict.n >= 3 for answer in found)  # confirmed on its own seeds


def test_one_planted_1_3x_candidate_among_8_neutral_ones_is_recommended_in_at_least_80_percent():
    found = answers("one 1.3x among 8 neutral", seed=2)
    assert share(found, lambda recipe: "m4" in recipe.names) >= 0.80


def test_two_candidates_whose_effects_add_up_are_recommended_together():
    found = answers("two that add up (1.3x, 1.25x)", seed=3)
    assert share(found, lambda recipe: {"m1", "m2"} <= set(recipe.names)) >= 0.80


def test_a_second_candidate_that_helps_only_alone_is_not_combined():
    found = answers("two that do not add up", seed=4)
    assert share(found, lambda recipe: {"m1", "m2"} <= set(recipe.names)) <= ALLOWED
    assert share(found, lambda recipe: True) >= 0.80  # one of them alone is still the answer
