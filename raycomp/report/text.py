"""How the report writes numbers, intervals and paths, the same on the page and in the figures.

Paths are shown relative to the working directory the report is written from: a page is shared, and
the layout of the machine it was written on is no business of its reader's (nor is it useful there).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from raycomp.base.layout import sqlite_path
from raycomp.tracking.ref import redacted_uri

ELSEWHERE = "…"  # stands for the folders above a path outside the working directory


def speedup_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def metric_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def delta_text(value: float | None) -> str:
    return "–" if value is None else f"{value:+.4f}".replace("-", "−")


def seconds_text(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.2f} s" if value < 100 else f"{value:.0f} s"


def percent_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def interval_text(low: float | None, high: float | None, write: Any = speedup_text) -> str:
    """``[low, high]`` written by ``write``; empty when there is no interval (one seed, no pairs)."""
    return "" if low is None or high is None else f"[{write(low)}, {write(high)}]"


def shown_path(path: str | Path) -> str:
    """``path`` relative to the working directory when under it; else ``…/`` and its last two parts."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(Path(ELSEWHERE, *path.parts[-2:]))


def shown_uri(uri: str) -> str:
    """A tracking URI as the page shows it: a SQLite or file store's path as ``shown_path`` shows it, a
    server's without its credentials."""
    database = sqlite_path(uri)
    if database is not None:
        return f"sqlite:///{shown_path(database)}"
    if uri.startswith("file://"):
        return f"file://{shown_path(uri.removeprefix('file://'))}"
    if uri.startswith("/"):
        return shown_path(uri)
    return redacted_uri(uri)


def escape(text: Any) -> str:
    return html.escape(str(text), quote=True)
