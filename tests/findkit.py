"""A find's run folder made without Ray for the report's tests: the real decision code on simulated trials
(bench/simulate_find.py), its files written by ``raycomp.find.files`` as a real find's end writes them."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np

from raycomp.config import ExperimentConfig
from raycomp.find.answer import Answer, answer_of
from raycomp.find.decide import advance, start
from raycomp.find.files import write_find_files
from raycomp.find.observations import Observations


def simulation() -> Any:
    """bench/simulate_find.py as a module (loaded once)."""
    if "simulate_find" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "simulate_find", Path(__file__).parents[1] / "bench" / "simulate_find.py"
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules["simulate_find"] = module  # its dataclasses look their module up by name
        spec.loader.exec_module(module)
    return sys.modules["simulate_find"]


def simulated_find(
    folder: Path,
    speedups: dict[str, float],
    count: int = 3,
    seed: int = 0,
    sections: dict[str, Any] | None = None,
    proxy: float | None = None,
    proxy_speedups: dict[str, float] | None = None,
    **find: Any,
) -> Answer:
    """A find of ``count`` candidates ``m0``.. with the given speed-ups, written to ``folder`` (find.json; a
    recipe.yaml when one is recommended); ``find`` sets keys of its find section (metric, mode, timing),
    ``sections`` the experiment's other sections (tracking, ...)."""
    sim = simulation()
    plan = sim.plan_for(sim.candidates(count), proxy=proxy)
    proxied = sim.independent(proxy_speedups) if proxy_speedups is not None else None
    world = sim.World(sim.independent(speedups), proxy=proxy, proxy_effects=proxied)
    rng, seeds, state, observations = np.random.default_rng(seed), {}, start(plan), Observations()
    while (round_ := advance(plan, state, observations)) is not None:
        trials = sim.draw_round(round_, world, rng, seeds)
        curves = [((0.5 * t.time_s, t.accuracy - 0.05), (t.time_s, t.accuracy)) for t in trials]
        observations.add(
            dataclasses.replace(t, stage=round_.stage, curve=curve) for t, curve in zip(trials, curves, strict=True)
        )
    answer = answer_of(plan, state)
    experiment = {"name": folder.name, **(sections or {}), "find": {"methods": ["mixup"], **find}}
    config = ExperimentConfig.from_dict(experiment)
    folder.mkdir(parents=True, exist_ok=True)
    write_find_files(folder, config, answer, observations, {"alibi": "no raycomp GPT attention found"})
    return answer
