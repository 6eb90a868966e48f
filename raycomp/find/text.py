"""A find's answer as the CLI prints it: the recommendation (or that there is none), the ``algorithms:`` block to
paste, and one line per candidate saying how far it got and why it left."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from raycomp.find.answer import Answer
from raycomp.find.plan import proxy_words
from raycomp.find.state import CONFIRM, describe


def algorithms_block(algorithms: Mapping[str, Mapping[str, Any]]) -> str:
    """``algorithms:`` in YAML, each method's arguments inline (``{}``: its defaults)."""
    if not algorithms:
        return "algorithms: {}"
    lines = ["algorithms:"]
    for name, args in algorithms.items():
        shown = yaml.safe_dump(dict(args), default_flow_style=True, width=10_000).strip()
        lines.append(f"  {name}: {shown}")
    return "\n".join(lines)


def proxy_lines(answer: Answer) -> list[str]:
    """Did the proxy hold: each recipe's verdict on the proxy beside its verdict at full length."""
    if not answer.proxy:
        return []
    lines = [
        "",
        f"did the proxy hold? (the search raced on {proxy_words(answer.proxy, answer.proxy_data)}; Confirm ran at full "
        "length)",
    ]
    width = max([len(key) for key in (*answer.on_proxy, *answer.at_full)] + [4])
    for key, proxy, full, held in answer.proxy_held():
        at_full = f"full length: {describe(full)}" if full is not None else "not run at full length"
        if full is None and answer.in_held_recipe(key):
            at_full = "not run alone at full length: the recipe it is in held"
        word = {True: "held: ", False: "did not hold: ", None: "" if full is None else "not shown either way: "}[held]
        lines.append(f"  {key:<{width}}  proxy: {describe(proxy)}")
        lines.append(f"  {'':<{width}}  {word}{at_full}")
    for key, full in answer.at_full.items():  # a recipe confirmed again without its culprits: never on the proxy
        if key not in answer.on_proxy:
            lines.append(f"  {key:<{width}}  proxy: not raced there (a recipe above without its culprits)")
            lines.append(f"  {'':<{width}}  full length: {describe(full)}")
    return lines


def answer_lines(
    answer: Answer, algorithms: Mapping[str, Mapping[str, Any]] | None, left_out: Mapping[str, str], rule: str = ""
) -> list[str]:
    """``algorithms`` is the block to paste (the experiment's own algorithms and the recipe's), None when no
    recipe is recommended; ``rule`` says how to read the numbers (the metric and its direction)."""
    lines = [answer.headline()]
    if rule:
        lines.append(f"  ({rule})")
    if answer.spread:
        lines.append(f"  ({answer.spread})")
    if answer.verdict is not None and answer.recommended is None:
        lines.append(f"  the recipe on fresh seeds: {describe(answer.verdict)}")
    if answer.control is not None:
        lines.append(f"  the control arm (the baseline again) on the same seeds: {describe(answer.control)}")
    lines += proxy_lines(answer)
    if algorithms is not None:
        lines += [
            "",
            "paste into your experiment:",
            *("  " + line for line in algorithms_block(algorithms).splitlines()),
        ]
    lines += ["", "candidates (the stage each reached, and how it ended there):"]
    width = max([len(name) for name in (*answer.lines, *left_out)] + [4])
    for name, line in answer.lines.items():
        stage = "recipe" if line.stage == CONFIRM else line.stage
        lines.append(f"  {name:<{width}}  {stage:<7}  {line.outcome}")
        if name in answer.changed:
            lines.append(f"  {'':<{width}}  {'':<7}  ({answer.changed[name]})")
    lines += [f"  {name:<{width}}  {'-':<7}  left out: {why}" for name, why in left_out.items()]
    return lines
