"""Simulated finds: the real decision code of ``raycomp.find`` on simulated trial times and accuracies.

The world: the baseline trains in 100 s to accuracy 0.96 at its full budget (0.90, 0.94, 0.97 at budgets 0.5,
0.75, 1.5, as bench/simulate_verdicts.py has it); a recipe divides that time by its speed-up and adds its
accuracy change (``World.effects``). Each trial's time has log-normal noise (``cv``), each seed a slow or fast
spell shared by every trial at that seed (``seed_time_sd``), and its accuracy a per-seed part shared by every
arm (data order, initialisation: what pairing cancels) plus the trial's own (``accuracy_sd``).

Two kinds of worlds. The first ones keep a trial's accuracy noise small (0.2 point), to check the race's logic.
The ones marked "measured" take it from real runs: find_cnn's Confirm (docs/benchmarks.md, `raycomp find`:
Δ accuracy +0.5 [-9.9, +11.0] points at 3 seeds, the look's t of 19.5) gives a paired sd of 0.93 points, so a
trial's own sd of 0.66 point (``MEASURED``); there the find judges at a tolerance its spread check calls
reachable (``REACHABLE_TOLERANCE``), and methods are faster but less accurate, or faster at equal accuracy.

    python bench/simulate_find.py                 # the rates in docs/find.md (about a minute)
    python bench/simulate_find.py --finds 200     # a quick look

tests/find/test_find_simulated.py runs the same worlds with fewer finds.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable, Mapping

import numpy as np

from raycomp.find.answer import Answer, answer_of
from raycomp.find.decide import advance, start
from raycomp.find.observations import Observations, Trial
from raycomp.find.plan import PROXY_SUFFIX, FindPlan, Proxy
from raycomp.find.race import Round
from raycomp.find.recipes import Candidate, Recipe
from raycomp.results.judging import Judging

BUDGETS = (0.5, 0.75, 1.0, 1.5)
FRONTIER_ACCURACY = (0.90, 0.94, 0.96, 0.97)
BASELINE_TIME_S = 100.0
SETTINGS = ((), (("level", 1),), (("level", 2),))  # each candidate's Tune settings: its default and two more

Effects = Callable[[Recipe], tuple[float, float]]  # a recipe's speed-up and accuracy change


@dataclasses.dataclass(frozen=True)
class World:
    effects: Effects
    cv: float = 0.05
    seed_time_sd: float = 0.05
    accuracy_sd: float = 0.002
    seed_accuracy_sd: float = 0.005
    tolerance: float = 0.005  # the find's find.accuracy_tolerance in this world
    auto: bool = False  # find.accuracy_tolerance: auto (the find takes the tolerance its seeds can reach)
    proxy: float | None = None  # the search races on this share of the run (find.proxy), None: at full length
    proxy_effects: Effects | None = None  # what a recipe does on that shorter run (None: what it does at full)


MEASURED = {"accuracy_sd": 0.0066, "seed_accuracy_sd": 0.005}  # find_cnn's Confirm (module docstring)
REACHABLE_TOLERANCE = 0.02  # 2 points: Confirm's 8 seeds show equal accuracy at MEASURED noise (about 5 needed)


def candidates(count: int, incompatible: Mapping[str, frozenset[str]] | None = None) -> tuple[Candidate, ...]:
    """``m0`` .. ``m<count-1>``, each with ``SETTINGS``."""
    incompatible = incompatible or {}
    return tuple(Candidate(f"m{i}", SETTINGS, incompatible.get(f"m{i}", frozenset())) for i in range(count))


def independent(speedups: Mapping[str, float], accuracy: Mapping[str, float] | None = None) -> Effects:
    """Each method's speed-up (by name, any setting) multiplies, its accuracy change adds; unnamed ones are neutral."""
    accuracy = accuracy or {}

    def effects(recipe: Recipe) -> tuple[float, float]:
        speedup = math.prod(speedups.get(name, 1.0) for name in recipe.names)
        return speedup, sum(accuracy.get(name, 0.0) for name in recipe.names)

    return effects


def draw_round(round_: Round, world: World, rng: np.random.Generator, seeds: dict[int, tuple[float, float]]) -> list:
    """The round's trials, drawn at once; ``seeds`` keeps each seed's shared time and accuracy parts."""
    requests = round_.requests
    for seed in {request.seed for request in requests} - seeds.keys():
        seeds[seed] = (
            math.exp(world.seed_time_sd * rng.standard_normal()),
            world.seed_accuracy_sd * rng.standard_normal(),
        )
    sigma = math.sqrt(math.log1p(world.cv**2))
    time_noise = np.exp(sigma * rng.standard_normal(len(requests)))
    accuracy_noise = world.accuracy_sd * rng.standard_normal(len(requests))
    trials = []
    for k, request in enumerate(requests):
        budget = request.budget or 1.0
        on_proxy = request.arm.endswith(PROXY_SUFFIX)  # a smaller copy of the run: its time, its own effects
        effects = (world.proxy_effects or world.effects) if on_proxy else world.effects
        speedup, gain = effects(request.recipe) if request.recipe is not None else (1.0, 0.0)
        seed_time, seed_accuracy = seeds[request.seed]
        length = BASELINE_TIME_S * (world.proxy or 1.0 if on_proxy else 1.0)
        time_s = length * budget / speedup * seed_time * time_noise[k]
        accuracy = float(np.interp(budget, BUDGETS, FRONTIER_ACCURACY)) + gain + seed_accuracy + accuracy_noise[k]
        trials.append(Trial(request.arm, request.seed, float(accuracy), float(time_s), budget=request.budget))
    return trials


def simulate_find(plan: FindPlan, world: World, rng: np.random.Generator) -> Answer:
    return simulate_find_and_cost(plan, world, rng)[0]


def simulate_find_and_cost(plan: FindPlan, world: World, rng: np.random.Generator) -> tuple[Answer, float]:
    """The find's answer and what it trained, in full runs as ``FindPlan.most_runs`` counts them (a proxy trial its
    share of the run, a frontier trial its budget)."""
    state, observations, seeds, runs = start(plan), Observations(), {}, 0.0
    while (round_ := advance(plan, state, observations)) is not None:
        for request in round_.requests:
            runs += ((world.proxy or 1.0) if request.arm.endswith(PROXY_SUFFIX) else 1.0) * (request.budget or 1.0)
        observations.add(draw_round(round_, world, rng, seeds))
    return answer_of(plan, state), runs


def plan_for(
    candidates_: tuple[Candidate, ...], tolerance: float = 0.005, auto: bool = False, proxy: float | None = None
) -> FindPlan:
    budgets = tuple(b for b in BUDGETS if b != 1.0)
    return FindPlan(
        candidates_,
        frontier_budgets=budgets,
        judging=Judging(tolerance=tolerance),
        tolerance_auto=auto,
        proxy=Proxy(proxy, duration=f"{proxy:g}dur") if proxy is not None else None,
    )


WORLDS: dict[str, tuple[tuple[Candidate, ...], World]] = {
    "no effect (9 neutral)": (candidates(9), World(independent({}))),
    "one 1.3x among 8 neutral": (candidates(9), World(independent({"m4": 1.3}))),
    "two that add up (1.3x, 1.25x)": (candidates(4), World(independent({"m1": 1.3, "m2": 1.25}))),
}


def not_adding_up(recipe: Recipe) -> tuple[float, float]:
    """m1 1.3x, m2 1.25x alone; together no faster than m1 alone (m2 helps only alone)."""
    names = set(recipe.names)
    return (1.3 if "m1" in names else 1.25 if "m2" in names else 1.0), 0.0


WORLDS["two that do not add up"] = (candidates(4), World(not_adding_up))


def measured(effects: Effects, auto: bool = False) -> World:
    return World(effects, tolerance=0.005 if auto else REACHABLE_TOLERANCE, auto=auto, **MEASURED)


WORLDS |= {
    "measured: no effect (5 neutral)": (candidates(5), measured(independent({}))),
    "measured: one 1.3x at equal accuracy": (candidates(5), measured(independent({"m2": 1.3}))),
    "measured: one 1.5x, 1x the tolerance less accurate": (
        candidates(5),
        measured(independent({"m2": 1.5}, {"m2": -REACHABLE_TOLERANCE})),
    ),
    "measured: one 1.5x, 3x the tolerance less accurate": (
        candidates(5),
        measured(independent({"m2": 1.5}, {"m2": -3 * REACHABLE_TOLERANCE})),
    ),
    "measured, tolerance auto: one 1.3x at equal accuracy": (candidates(5), measured(independent({"m2": 1.3}), True)),
}
# A search on a quarter of the run (find.proxy: 0.25dur), confirmed at full length. Where the proxy ranks right, m2
# helps on both; where it ranks wrong, m1 is 1.4x on the short run and 0.8x on the real one (a warmup-like method).
# Where it misleads inside the recipe, m2 and m3 add up on both runs and m1 joins them on the proxy only: at full
# length it is 0.6x, so the proxy's recipe (all three, 0.86x there) is slower and m2+m3 is the answer. Where it
# misleads everywhere, every method is 1.3x on the proxy and none helps at full length: any recipe is a false one.
SHORT_ONLY = independent({"m1": 1.4, "m2": 1.2})
WORLDS |= {
    "proxy 0.25, ranks right: one 1.3x": (
        candidates(5),
        dataclasses.replace(measured(independent({"m2": 1.3})), proxy=0.25),
    ),
    "proxy 0.25, ranks wrong: m1 1.4x only on it, m2 1.2x": (
        candidates(5),
        dataclasses.replace(measured(independent({"m1": 0.8, "m2": 1.2})), proxy=0.25, proxy_effects=SHORT_ONLY),
    ),
    "proxy 0.25, misleads in the recipe: m1 1.4x only on it, m2 and m3 1.2x": (
        candidates(5),
        dataclasses.replace(
            measured(independent({"m1": 0.6, "m2": 1.2, "m3": 1.2})),
            proxy=0.25,
            proxy_effects=independent({"m1": 1.4, "m2": 1.2, "m3": 1.2}),
        ),
    ),
    "proxy 0.25, misleads everywhere: each 1.3x on it, none helps at full length": (
        candidates(5),
        dataclasses.replace(
            measured(independent({})), proxy=0.25, proxy_effects=independent({f"m{i}": 1.3 for i in range(5)})
        ),
    ),
}


def rates(finds: int, seed: int = 0, cv: float | None = None) -> dict[str, dict[str, float]]:
    """Per world: how often a recipe is recommended, holds the planted method(s), and holds a combination."""
    rng = np.random.default_rng(seed)
    table = {}
    for name, (candidates_, world) in WORLDS.items():
        world = world if cv is None else dataclasses.replace(world, cv=cv)
        plan = plan_for(candidates_, world.tolerance, world.auto, world.proxy)
        answers = [simulate_find(plan, world, rng) for _ in range(finds)]
        recommended = [answer.recommended for answer in answers if answer.recommended is not None]
        table[name] = {
            "recommended": len(recommended) / finds,
            "with m4": sum("m4" in r.names for r in recommended) / finds,
            "with m2": sum("m2" in r.names for r in recommended) / finds,
            "m1+m2": sum({"m1", "m2"} <= set(r.names) for r in recommended) / finds,
            "m2+m3 without m1": sum({"m2", "m3"} <= set(r.names) and "m1" not in r.names for r in recommended) / finds,
            "out of reach": sum(bool(answer.out_of_reach) for answer in answers) / finds,
        }
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finds", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cv", type=float, default=None, help="each trial's time noise (default: World's, 0.05)")
    args = parser.parse_args()
    columns = ("recommended", "with m4", "with m2", "m1+m2", "m2+m3 without m1", "out of reach")
    print(f"| world | {' | '.join(columns)} |  ({args.finds} finds each)\n|---|{'---|' * len(columns)}")
    for name, row in rates(args.finds, args.seed, args.cv).items():
        print(f"| {name} | {' | '.join(f'{row[column]:.3f}' for column in columns)} |")


if __name__ == "__main__":
    main()
