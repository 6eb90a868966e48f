"""`python -m raycomp.find` before Ray starts: examples/own_model's `methods: auto` picks only what applies to its
network; a bad find section exits 2 at its file:line:key. (Real finds: tests/find/test_find_resume.py, on
experiments/find_cnn.yaml, with its answer, runs and recipe; tests/tracking/test_find_runs.py, its server down;
tests/launch/test_multinode.py, a user's package as a cluster job.)
"""

from __future__ import annotations

import pytest
from find_experiments import shrunk

from raycomp.cli import find as find_cli
from raycomp.config import load_experiment
from raycomp.find.candidates import find_candidates


def test_auto_races_only_what_applies_to_the_users_network(user_project, monkeypatch):
    """examples/own_model/find.yaml as written: the language-model methods are left out, each with its reason."""
    monkeypatch.chdir(user_project)
    from my_project.data import write_image_folder

    write_image_folder(user_project / "images", 3, (4, 2), 24)
    config = load_experiment("find.yaml", ["find.max_settings=1"])
    candidates, left_out, problems = find_candidates(config)
    assert not problems and {"progressive_resizing", "selective_backprop", "blurpool"} <= {c.name for c in candidates}
    assert set(left_out) == {"alibi", "gated_linear_units", "fused_layernorm", "seq_length_warmup"}
    assert "(my_project.nets.TinyResNet)" in left_out["alibi"]


def test_a_find_section_that_names_a_method_the_model_cannot_run_exits_2_at_its_line(tmp_path, capsys):
    path = shrunk(tmp_path, "refused", methods=["alibi", "label_smoothing"])
    with pytest.raises(SystemExit) as exit_:
        find_cli.main([str(path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"{path}:" in err and "find.methods.alibi: Alibi cannot run here: no raycomp GPT" in err
    assert not (tmp_path / "refused").exists()  # nothing claimed, nothing started


def test_raycomp_api_find_raises_the_problems_before_ray_starts(tmp_path):
    from raycomp.api import find
    from raycomp.config import ConfigError

    path = shrunk(tmp_path, "api", methods=["alibi"])
    with pytest.raises(ConfigError, match=r"find\.methods\.alibi: Alibi cannot run here"):
        find(path)
    with pytest.raises(ConfigError, match="has no find section"):
        find({"name": "nofind", "storage_path": str(tmp_path)})
