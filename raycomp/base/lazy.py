"""A package's names imported when first asked for (PEP 562), so importing the package loads none of its modules:
``raycomp.tracking`` (no mlflow), ``raycomp.models`` and ``raycomp.data`` (no model or dataset code while a config
loads)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's ``__getattr__``: ``where`` maps each name to the module that defines it."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(where[name]), name)

    return __getattr__
