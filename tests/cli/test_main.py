"""The `raycomp` console script dispatches to the same commands as `python -m raycomp.tune|train|report`."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from raycomp.cli.main import main


def test_usage_and_unknown_commands(capsys):
    assert main([]) == 2 and "raycomp COMMAND" in capsys.readouterr().out
    assert main(["--help"]) == 0
    assert main(["sweep"]) == 2 and "unknown command 'sweep'" in capsys.readouterr().err


@pytest.mark.spawns
def test_a_bad_experiment_exits_2_through_the_console_script(tmp_path):
    script = shutil.which("raycomp")
    if script is None:
        pytest.skip("the raycomp console script is not installed (pip install -e .)")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nmax_duration: 0ep\n")
    for command in ("tune", "train"):
        done = subprocess.run([script, command, str(bad)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert f"{bad}:2: max_duration" in done.stderr
    done = subprocess.run([script, "report", str(tmp_path / "nothing")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no sweep" in done.stderr
