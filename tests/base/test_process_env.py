import os
import subprocess
import sys

import pytest

from raycomp.base.process_env import environment


@pytest.mark.spawns  # a child process reads the variable
def test_variables_are_set_for_the_block_and_its_processes_then_restored(monkeypatch):
    monkeypatch.setenv("RAYCOMP_TEST_WAS_SET", "before")
    monkeypatch.delenv("RAYCOMP_TEST_WAS_UNSET", raising=False)
    with environment({"RAYCOMP_TEST_WAS_SET": "inside", "RAYCOMP_TEST_WAS_UNSET": "inside"}):
        read = [sys.executable, "-c", "import os; print(os.environ['RAYCOMP_TEST_WAS_UNSET'])"]
        assert subprocess.run(read, capture_output=True, text=True, check=True).stdout.strip() == "inside"
    assert os.environ["RAYCOMP_TEST_WAS_SET"] == "before"
    assert "RAYCOMP_TEST_WAS_UNSET" not in os.environ
