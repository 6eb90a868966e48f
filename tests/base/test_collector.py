"""The cyclic garbage collector in a process raycomp runs (raycomp/base/collector.py): paused while it starts, then
start-up's garbage freed and the rest frozen, once a process; untouched in anyone else's process."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import pytest
import yaml
from helpers import command_here

# A fresh interpreter: raycomp's own processes are the only ones that pause, so this one must not.
PAUSE_THEN_RESUME = """
import gc, weakref
from raycomp.base.collector import freeze_imports, pause_collector, resume_collector

class Node:
    pass

def cycle():
    node = Node(); node.self = node
    return node

pause_collector()
assert not gc.isenabled()
imported = cycle(); from_imports = weakref.ref(imported); del imported  # garbage an import left
freeze_imports()
frozen = gc.get_freeze_count()
assert frozen > 0 and not gc.isenabled()
built = cycle(); from_start_up = weakref.ref(built); del built  # garbage start-up left: a model a check built
resume_collector()
assert gc.isenabled() and from_start_up() is None, "start-up's garbage is freed before the freeze"
assert from_imports() is not None, "frozen with the imports: no pass over them"
assert gc.get_freeze_count() > frozen
frozen = gc.get_freeze_count()
pause_collector()  # a second start-up in this process (the next trial in a reused Tune actor): not paused
assert gc.isenabled()
freeze_imports()
resume_collector()
assert gc.get_freeze_count() == frozen, "frozen twice: the first trial's leftovers would never be freed"
print("ok")
"""


@pytest.mark.spawns
def test_a_process_pauses_once_then_frees_its_start_up_garbage_and_freezes_the_rest():
    result = subprocess.run([sys.executable, "-c", PAUSE_THEN_RESUME], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


# The commands themselves stood in for: what each sees of the collector as its main starts.
COMMANDS_START = """
import gc, sys, types
for name in ("tune", "report"):
    stand_in = types.ModuleType(name)
    stand_in.main = lambda argv: print(gc.isenabled()) or 0
    sys.modules[f"raycomp.cli.{name}"] = stand_in
from raycomp.cli.main import run_command
run_command("report")  # no point where its work starts: collecting all along
run_command("tune")
"""


@pytest.mark.spawns
@pytest.mark.parametrize(("freeze", "seen"), [(None, ["True", "False"]), ("0", ["True", "True"])])
def test_a_sweeps_process_starts_paused_and_a_reports_does_not(freeze, seen):
    """``RAYCOMP_FREEZE_START_UP=0``: no process pauses."""
    env = {key: value for key, value in os.environ.items() if key != "RAYCOMP_FREEZE_START_UP"}
    if freeze is not None:
        env["RAYCOMP_FREEZE_START_UP"] = freeze
    result = subprocess.run([sys.executable, "-c", COMMANDS_START], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == seen


def test_resuming_in_a_process_that_never_paused_touches_nothing():
    """A user's notebook runs the code that resumes (a sweep's driver through ``raycomp.api``): nothing frozen."""
    from raycomp.base.collector import resume_collector

    frozen, enabled = gc.get_freeze_count(), gc.isenabled()
    resume_collector()
    assert (gc.get_freeze_count(), gc.isenabled()) == (frozen, enabled)


def test_a_trial_trains_with_the_collector_on_and_its_start_up_frozen(tmp_path, local_ray, test_plugins):
    """The probe (tests/plugins) records the trial process's collector as training starts; the driver runs here."""
    record = tmp_path / "collector.jsonl"
    experiment = {
        "name": "collector",
        "data": {"num_train": 32, "num_test": 16, "batch_size": 16},
        "max_duration": "1ba",
        "storage_path": str(tmp_path),
        "scaling": {"num_workers": 0},
        "tracking": {"enabled": False},
        "algorithms": {"collector_probe": {"record": str(record)}},
        "sweep": {"space": {"algorithms.collector_probe.record": {"choice": [str(record)]}}, "repeats": 1},
    }
    path = tmp_path / "collector.yaml"
    path.write_text(yaml.safe_dump(experiment))
    code, output = command_here([str(path), "--no-report"])
    assert code == 0, output[-3000:]
    (probe,) = [json.loads(line) for line in record.read_text().splitlines()]  # the method's trial; not the baseline's
    assert probe["enabled"], "the trial trained with the collector paused"
    assert probe["frozen"] > 100_000, probe  # torch's, Ray's and raycomp's modules: ~600,000 objects
