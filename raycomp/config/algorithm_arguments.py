"""The config's ``algorithms`` section: each name a registered algorithm, its arguments validated by the
algorithm's own declaration (``raycomp.algorithms.arguments``), each problem at its key, and kept as the
validated ``Arguments`` (no algorithm is built: the recipe builds each once)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from raycomp.algorithms.arguments import Arguments, broken_rule
from raycomp.algorithms.registry import ALGORITHMS, algorithm_class, arguments_schema
from raycomp.config.messages import Invalid, Problem, explain, show, suggest


def checked_algorithms(data: Any) -> dict[str, Arguments]:
    """``algorithms:`` as written (names to argument mappings, null for the defaults, or false: switched off),
    validated; ``Invalid`` with every problem found.

    ``false`` lets a command line run an experiment without one of its methods (``--set
    algorithms.progressive_resizing=false``): before, it took replacing the whole mapping (issue 59 item 8)."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise Invalid([((), f"must map algorithm names to their arguments, got {show(data)}")])
    problems: list[Problem] = []
    checked: dict[str, Arguments] = {}
    for name, args in data.items():
        if args is False and name in ALGORITHMS:
            continue  # switched off: neither run nor checked
        args = {} if args is None else args
        if isinstance(args, Arguments):
            args = args.given()
        if name not in ALGORITHMS:
            problems.append(((name,), f"unknown algorithm {suggest(name, ALGORITHMS, 'algorithms')}"))
        elif not isinstance(args, Mapping):
            wanted = "must map argument names to values (or be empty, or false to switch it off)"
            problems.append(((name,), f"{wanted}, got {show(args)}"))
        else:
            arguments, found = validated_arguments(name, args)
            problems += [((name, *path), message) for path, message in found]
            if arguments is not None:
                checked[name] = arguments
    if problems:
        raise Invalid(problems)
    return checked


def algorithm_problems(name: str, args: Mapping[str, Any]) -> list[Problem]:
    """Problems with one algorithm's arguments, at their keys, read from its constructor's declaration."""
    return validated_arguments(name, args)[1]


def validated_arguments(name: str, args: Mapping[str, Any]) -> tuple[Arguments | None, list[Problem]]:
    """One algorithm's arguments validated by its constructor's declaration, else None and the problems, at their
    keys: each argument at its own, a rule across arguments (``start < end``) at the algorithm's."""
    cls, model = algorithm_class(name), arguments_schema(name)
    fields = model.model_fields
    problems: list[Problem] = [
        ((arg,), f"unknown argument of {cls.__name__} {suggest(arg, fields, 'arguments')}")
        for arg in args
        if arg not in fields
    ]
    missing = [arg for arg, field in fields.items() if field.is_required() and arg not in args]
    if missing:
        return None, [*problems, ((), f"missing argument(s) {', '.join(missing)} (add them under algorithms.{name})")]
    try:
        arguments = model.model_validate({arg: value for arg, value in args.items() if arg in fields})
    except ValidationError as exc:
        rule = broken_rule(exc)
        if rule is not None:  # every argument is valid: reported when nothing else is
            return None, problems or [((), str(rule))]
        for entry in exc.errors(include_url=False):
            loc = tuple(entry["loc"])
            problems.append((loc, explain(entry, fields.get(str(loc[0])) if len(loc) == 1 else None)))
        return None, problems
    return (None if problems else arguments), problems


def never_together(name: str, other: str) -> bool:
    """Whether a find may not train ``name`` and ``other`` together: either declares it (``incompatible_with``).
    A config may still name both (MixUp and CutMix run together, as in Composer); a find's recipes never do."""
    return other in algorithm_class(name).incompatible_with or name in algorithm_class(other).incompatible_with
