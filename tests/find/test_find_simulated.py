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


def answers(world: str, seed: int, finds: int = FINDS) -> list:
    candidates, model = simulation.WORLDS[world]
    plan = simulation.plan_for(candidates, model.tolerance, model.auto, model.proxy)
    rng = np.random.default_rng(seed)
    return [simulation.simulate_find(plan, model, rng) for _ in range(finds)]


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


# -- worlds with the accuracy noise real runs have (find_cnn's Confirm: a paired sd of 0.93 points) --


def test_a_method_faster_but_as_much_less_accurate_as_the_tolerance_is_recommended_in_at_most_5_percent():
    found = answers("measured: one 1.5x, 1x the tolerance less accurate", seed=5)
    assert share(found, lambda recipe: "m2" in recipe.names) <= ALLOWED


def test_a_method_faster_but_three_times_the_tolerance_less_accurate_is_never_recommended():
    found = answers("measured: one 1.5x, 3x the tolerance less accurate", seed=6, finds=300)
    assert share(found, lambda recipe: "m2" in recipe.names) <= 3 / 300


def test_a_1_3x_method_at_equal_accuracy_is_recommended_at_a_tolerance_the_find_calls_reachable():
    found = answers("measured: one 1.3x at equal accuracy", seed=7, finds=400)
    assert share(found, lambda recipe: "m2" in recipe.names) >= 0.80
    assert sum(bool(answer.out_of_reach) for answer in found) / len(found) <= 0.05
    assert "needs about" in found[0].spread and "points between seeds" in found[0].spread


def test_with_tolerance_auto_the_find_takes_a_reachable_tolerance_and_recommends_the_faster_method():
    found = answers("measured, tolerance auto: one 1.3x at equal accuracy", seed=8, finds=300)
    assert not any(answer.out_of_reach for answer in found)
    # 0.5 point is out of reach at this noise: almost every find says so and takes a reachable tolerance instead
    assert sum("find.accuracy_tolerance: auto takes" in answer.spread for answer in found) >= 0.9 * len(found)
    assert share(found, lambda recipe: "m2" in recipe.names) >= 0.80


def test_where_no_method_helps_at_measured_noise_at_most_5_percent_of_finds_recommend_one():
    found = answers("measured: no effect (5 neutral)", seed=9, finds=400)
    assert share(found, lambda recipe: True) <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / 400)


def test_a_tolerance_out_of_reach_stops_the_find_before_the_candidates_train():
    """At the measured noise, 0.5 point needs far more than Confirm's 8 seeds: the find says so and stops."""
    candidates, world = simulation.WORLDS["measured: one 1.3x at equal accuracy"]
    plan = simulation.plan_for(candidates, 0.005)
    answer = simulation.simulate_find(plan, world, np.random.default_rng(10))
    assert answer.recommended is None and answer.chosen is None
    assert "equal accuracy within 0.5 points is out of reach of Confirm's 8 seeds" in answer.out_of_reach
    assert answer.headline().startswith("stopped before the race:")
    assert set(answer.lines) == {c.name for c in candidates}  # no candidate trained


PROXY_FINDS = 200  # a proxied find confirms up to three recipes: fewer finds, a looser bound


def test_where_the_proxy_ranks_right_its_choice_is_confirmed_at_full_length_and_said_to_hold():
    """Issue 57: the search races on a quarter of the run; Confirm trains the whole run on fresh seeds."""
    found = answers("proxy 0.25, ranks right: one 1.3x", seed=11, finds=PROXY_FINDS)
    assert share(found, lambda recipe: "m2" in recipe.names) >= 0.80
    assert all(answer.proxy == "0.25dur" for answer in found)
    said_held = [
        answer
        for answer in found
        if answer.recommended is not None
        and any(key == answer.recommended.key and h for key, *_, h in answer.proxy_held())
    ]
    assert len(said_held) >= 0.80 * len(found)


def test_where_the_proxy_ranks_wrong_its_miss_is_reported_and_the_next_candidate_confirmed():
    """m1 is 1.4x on the short run and 0.8x on the whole one (a method that helps only on short runs); m2 is 1.2x
    on both. The proxy's choice holds m1; at full length it does not hold, and the find goes on to the next best on
    the proxy, so the answer is still right: m2, without m1."""
    found = answers("proxy 0.25, ranks wrong: m1 1.4x only on it, m2 1.2x", seed=12, finds=PROXY_FINDS)
    assert share(found, lambda recipe: "m2" in recipe.names and "m1" not in recipe.names) >= 0.70
    assert share(found, lambda recipe: "m1" in recipe.names) <= ALLOWED
    missed = [answer for answer in found if any("m1" in key and h is False for key, *_, h in answer.proxy_held())]
    assert len(missed) >= 0.80 * len(found)  # the proxy's miss (a recipe with m1) is said, not hidden


def test_where_the_proxy_misleads_inside_its_recipe_the_recipe_without_the_culprit_is_confirmed():
    """m2 and m3 (1.2x each) add up on both runs; m1 joins them on the proxy (1.4x there) and is 0.6x at full length,
    so the proxy's recipe of all three is slower there. Each of its methods then trains alone at full length on
    Confirm's first seeds, and the recipe without m1 is confirmed on the same fresh seeds: the answer keeps what
    the proxy got right (m2+m3, 1.44x), not one survivor alone (1.2x), and m1 is never confirmed on its own."""
    found = answers("proxy 0.25, misleads in the recipe: m1 1.4x only on it, m2 and m3 1.2x", seed=14, finds=100)
    assert share(found, lambda recipe: {"m2", "m3"} <= set(recipe.names) and "m1" not in recipe.names) >= 0.85
    assert share(found, lambda recipe: "m1" in recipe.names) <= ALLOWED
    alone_m1 = [
        answer for answer in found if any(key.partition("(")[0] == "m1" for key in answer.at_full if "+" not in key)
    ]
    assert len(alone_m1) <= 0.05 * len(found)  # the culprit's own run at full length said it: no confirm of it
    left_out = [answer for answer in found if answer.lines["m1"].outcome.startswith("left out of the recipe")]
    assert len(left_out) >= 0.85 * len(found)
    from raycomp.find.text import proxy_lines

    said = "\n".join(proxy_lines(left_out[0]))  # the recipe confirmed again: its full-length verdict, no proxy one
    assert left_out[0].chosen.key in said and "proxy: not raced there" in said, said


def test_after_a_proxy_each_tuned_survivor_outside_the_held_recipe_trains_alone_and_its_call_is_judged_or_unknown():
    """Issue 57 item 3: "did the proxy hold" for each method that reached Tune, not only for the recipe. m1 1.3x alone
    and m2 1.25x alone, no faster together, on both run lengths: Confirm answers with one of them; then the other
    trains alone at full length on Confirm's first seeds. Three seeds seldom show one method either way at this noise,
    so its line is `held`, `did not hold` or, often, not known (`not shown either way`), never a miss for want of
    seeds; the answer is Confirm's. Where the two add up, the recipe holds them both: neither trains alone. Under a
    budget with no room left, none does."""
    import dataclasses

    from raycomp.results.verdicts import FASTER, RESOLVED

    candidates = simulation.candidates(4)
    world = dataclasses.replace(simulation.measured(simulation.not_adding_up), proxy=0.25)
    plan = simulation.plan_for(candidates, world.tolerance, world.auto, world.proxy)
    rng = np.random.default_rng(13)
    found = [simulation.simulate_find(plan, world, rng) for _ in range(20)]
    answered = [answer for answer in found if answer.recommended and len(answer.recommended.names) == 1]
    assert len(answered) >= 15
    calls = []
    for answer in answered:
        other = ({"m1", "m2"} - set(answer.recommended.names)).pop()
        assert other in {key.split("(")[0] for key in answer.alone}, (answer.recommended.key, answer.alone)
        assert not set(answer.alone) & set(answer.at_full)
        for key, _, full, held in answer.proxy_held():
            if key in answer.alone:
                assert full is answer.alone[key] and full.n == plan.confirm.first
                assert (held is None) == (full.verdict not in RESOLVED and not full.speed_shown), (key, full, held)
                calls.append(held)
    assert calls and calls.count(False) <= 0.1 * len(calls)  # m1 and m2 help on both lengths: a miss is rare

    adding = dataclasses.replace(simulation.measured(simulation.independent({"m1": 1.3, "m2": 1.25})), proxy=0.25)
    for answer in [simulation.simulate_find(plan, adding, rng) for _ in range(10)]:
        if answer.verdict is not None and answer.verdict.verdict == FASTER:
            names = set(answer.chosen.names)
            assert not [key for key in answer.alone if key.split("(")[0] in names]  # the recipe held them
            assert all(
                answer.in_held_recipe(key) for key in answer.on_proxy if key.split("(")[0] in names and "+" not in key
            )

    # A find whose budget is spent by the time Confirm starts: it answers on its first look, and its survivors do not
    # train alone (each says "not run at full length")
    from raycomp.find.answer import answer_of
    from raycomp.find.decide import advance, start
    from raycomp.find.observations import Observations
    from raycomp.find.state import CONFIRM

    spent, rng = dataclasses.replace(plan, budget_s=60.0), np.random.default_rng(14)
    state, observations, seeds = start(spent), Observations(), {}
    while (round_ := advance(spent, state, observations, 60.0 if state.stage == CONFIRM else 0.0)) is not None:
        observations.add(simulation.draw_round(round_, world, rng, seeds))
    answer = answer_of(spent, state)
    assert answer.verdict is not None and answer.verdict.n == plan.confirm.first and not answer.alone
    assert any(full is None for *_, full, _ in answer.proxy_held()), answer.proxy_held()  # "not run at full length"


def test_where_the_proxy_flatters_every_method_and_none_helps_at_full_length_few_finds_recommend_one():
    """Every method 1.3x on the proxy, none faster at full length: the proxy's recipe fails, its methods alone fail,
    and any recipe Confirm tries next passes only by luck on the same fresh seeds. With one second guess
    (``FindPlan.second_guesses``) at most 5 % of finds recommend one (plus Monte Carlo room at 200 finds), and none
    trains more than the "at most" it printed before starting (``most_runs``). Guessing on, up to 6 recipes, the
    finds recommended one in 11.5 % and trained past that line in 28 of these 200."""
    candidates, world = simulation.WORLDS["proxy 0.25, misleads everywhere: each 1.3x on it, none helps at full length"]
    plan = simulation.plan_for(candidates, world.tolerance, world.auto, world.proxy)
    rng, finds = np.random.default_rng(21), 200
    found = [simulation.simulate_find_and_cost(plan, world, rng) for _ in range(finds)]
    assert share([answer for answer, _ in found], lambda recipe: True) <= ALPHA + 3 * math.sqrt(ALPHA * 0.95 / finds)
    assert max(runs for _, runs in found) <= sum(plan.most_runs().values())
    assert all(len(answer.at_full) <= 1 + plan.second_guesses for answer, _ in found)
    assert sum(len(answer.at_full) == 2 for answer, _ in found) >= finds / 2  # the second guess is taken
