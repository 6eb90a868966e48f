"""Fixtures of the report tests (helpers are in reportkit.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from reportkit import write_hand_made


@pytest.fixture
def hand_made_sweep(tmp_path: Path) -> Path:
    return write_hand_made(tmp_path / "made")
