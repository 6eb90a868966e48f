"""raycomp's cache: what it can build again, kept between runs to save building it (tokenised text, an empty
MLflow store). Deleting it costs only the time to build each thing once more."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$RAYCOMP_CACHE_DIR``, else ``$XDG_CACHE_HOME/raycomp``, else ``~/.cache/raycomp``."""
    if os.environ.get("RAYCOMP_CACHE_DIR"):
        return Path(os.environ["RAYCOMP_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "raycomp"
