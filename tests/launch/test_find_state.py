"""A find's saved state (raycomp.launch.find.driver): written whole between rounds, read back by --resume, and, cut
short by a full disk, set aside rather than discarding the find (L13 of the 2026-12-01 probe)."""

from __future__ import annotations

import pytest

from raycomp.base.errors import RunConflict
from raycomp.find.decide import start
from raycomp.find.observations import Observations
from raycomp.find.plan import FindPlan
from raycomp.find.recipes import Candidate
from raycomp.launch.find.driver import Progress, load, save


def plan_of(*names: str) -> FindPlan:
    return FindPlan(tuple(Candidate(name) for name in names))


def test_a_saved_state_cut_short_is_set_aside_and_the_find_starts_again(tmp_path, capsys):
    plan = plan_of("mixup", "ema")
    path = tmp_path / "find_state.json"
    save(path, plan, Progress(start(plan), Observations()))
    assert load(path, plan) is not None  # whole: read back
    path.write_text(path.read_text()[:100])  # cut short mid-write by a full disk
    assert load(path, plan) is None  # the find starts again; the Tune folders' trials are adopted, as when deleted
    assert not path.exists() and (tmp_path / "find_state.json.damaged").read_text()
    said = capsys.readouterr().out
    assert "cannot be read" in said and "set aside as find_state.json.damaged" in said


def test_a_saved_state_of_other_candidates_is_still_refused(tmp_path):
    plan = plan_of("mixup", "ema")
    path = tmp_path / "find_state.json"
    save(path, plan, Progress(start(plan), Observations()))
    with pytest.raises(RunConflict, match="searched other methods"):
        load(path, plan_of("mixup", "ema", "cutmix"))
