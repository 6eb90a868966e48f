"""What a find searches over: a method with some of its arguments (``Method``), a set of them trained together
(``Recipe``), and a candidate method with the argument settings its Tune stage may try (``Candidate``).

Plain frozen values, hashable and JSON-friendly: the race keys its observations and its state by a recipe's
``key``, the text that also names the recipe's configuration in Ray, MLflow and the CLI's lines.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping
from typing import Any

Arguments = tuple[tuple[str, Any], ...]  # (argument, value) pairs sorted by argument: the non-default ones


def arguments(values: Mapping[str, Any]) -> Arguments:
    return tuple(sorted(values.items()))


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value) if isinstance(value, float) else str(value)


@dataclasses.dataclass(frozen=True, order=True)
class Method:
    """One algorithm by its registered name, with the arguments it sets away from their defaults."""

    name: str
    arguments: Arguments = ()

    @functools.cached_property
    def key(self) -> str:
        if not self.arguments:
            return self.name
        return f"{self.name}({','.join(f'{arg}={_shown(value)}' for arg, value in self.arguments)})"


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Methods trained together, one per algorithm, in name order (so equal recipes have equal keys)."""

    methods: tuple[Method, ...]

    def __post_init__(self) -> None:
        names = [method.name for method in self.methods]
        if len(set(names)) != len(names):
            raise ValueError(f"a recipe holds each algorithm once, got {names}")
        object.__setattr__(self, "methods", tuple(sorted(self.methods)))

    @classmethod
    def of(cls, *methods: Method) -> Recipe:
        return cls(tuple(methods))

    @functools.cached_property
    def key(self) -> str:
        return "+".join(method.key for method in self.methods)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(method.name for method in self.methods)

    def joined(self, other: Recipe) -> Recipe:
        return Recipe((*self.methods, *other.methods))

    def algorithms(self) -> dict[str, dict[str, Any]]:
        """The ``algorithms:`` block that trains this recipe (each method's non-default arguments)."""
        return {method.name: dict(method.arguments) for method in self.methods}

    def to_data(self) -> list[list[Any]]:
        return [[method.name, [list(pair) for pair in method.arguments]] for method in self.methods]

    @classmethod
    def from_data(cls, data: Iterable[Any]) -> Recipe:
        return cls(tuple(Method(name, tuple((arg, value) for arg, value in pairs)) for name, pairs in data))


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A method the find may recommend: its name, the argument settings the Tune stage tries (the defaults,
    ``()``, first) and the methods it is never combined with (declared by each algorithm: MixUp and CutMix)."""

    name: str
    settings: tuple[Arguments, ...] = ((),)
    incompatible_with: frozenset[str] = frozenset()
    changed: str = ""  # what the find changed so that it runs here ("starts at scale_factor: 1.0 (...)")

    @functools.cached_property
    def default(self) -> Recipe:
        """What Screen runs: the method at its first setting (its defaults, or the arguments the find gave it)."""
        return self.recipe(self.settings[0])

    def recipe(self, setting: Arguments) -> Recipe:
        return Recipe.of(Method(self.name, setting))

    def combines_with(self, recipe: Recipe, candidates: Mapping[str, Candidate]) -> str | None:
        """The method of ``recipe`` this candidate cannot be trained with (either side may declare it), or None."""
        for name in recipe.names:
            other = candidates.get(name)
            if name in self.incompatible_with or (other is not None and self.name in other.incompatible_with):
                return name
        return None
