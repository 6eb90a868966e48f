"""Every module of the package stays within 250 lines but the Trainer's (issue 34): a module past that holds two
concepts, and the next reader pays for it. Lines over 120 characters are ruff's (pyproject.toml's line-length)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "raycomp"
BUDGET = 250
EXEMPT = {"loop/trainer.py"}  # the training loop, read top to bottom as Composer's Trainer is


def test_no_module_is_over_its_line_budget():
    sizes = {path.relative_to(PACKAGE).as_posix(): len(path.read_text().splitlines()) for path in PACKAGE.rglob("*.py")}
    over = {name: lines for name, lines in sizes.items() if lines > BUDGET and name not in EXEMPT}
    assert not over, f"modules over {BUDGET} lines: {over}"
