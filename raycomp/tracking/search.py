"""MLflow search filters built from values raycomp does not control (names, paths, ids), quoted safely.

MLflow's filter grammar has no escape character: a string literal is quoted with ``'`` or ``"`` and may
not contain its own quote. A value with an apostrophe (``O'Neil/runs``) is therefore quoted with ``"``;
a value holding both quotes cannot be searched for and is refused with a clear error instead of
MLflow's "Invalid clause(s) in filter string".
"""

from __future__ import annotations

from collections.abc import Mapping

from raycomp.base.errors import ConfigError


def quoted(value: str) -> str:
    """``value`` as an MLflow filter string literal."""
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    raise ConfigError(f"{value}: MLflow cannot search for a value holding both ' and \" (rename the path or name)")


def tag_filter(tags: Mapping[str, str]) -> str:
    """Runs whose tags equal all of ``tags``: ``tags.`k` = 'v' and ...``."""
    return " and ".join(f"tags.`{key}` = {quoted(str(value))}" for key, value in tags.items())
