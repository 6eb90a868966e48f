"""The core must stand alone: no ray or mlflow, and nothing done at import time; the core imports no algorithm."""

import subprocess
import sys

import pytest

CHECK = """
import atexit, signal, sys
sys.modules["ray"] = None      # importing either now raises ImportError
sys.modules["mlflow"] = None
handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)}
registered = []
atexit.register = lambda *a, **k: registered.append(a)

import raycomp, raycomp.core, raycomp.loop.trainer, raycomp.algorithms, raycomp.functional, raycomp.loop.checkpoint
import raycomp.loop.batching, raycomp.loop.distributed, raycomp.config.recipe
import raycomp.base.errors, raycomp.base.keys, raycomp.base.layout, raycomp.base.process_env, raycomp.base.scratch
import raycomp.config, raycomp.tracking.ref, raycomp.launch.spec, raycomp.launch.eval_report, raycomp.launch.sinks
import torch.distributed as dist

assert handlers == {s: signal.getsignal(s) for s in handlers}, "signal handlers changed at import"
assert not [a for a in registered if "raycomp" in repr(a)], registered
assert not dist.is_initialized(), "a process group was created at import"
assert not __import__("torch").cuda.is_initialized()
print("ok")
"""


@pytest.mark.spawns
def test_core_imports_without_ray_or_mlflow_and_does_nothing_at_import():
    assert_prints_ok(CHECK)


NO_ALGORITHMS = """
import sys
sys.modules["raycomp.algorithms"] = None  # importing it now raises ImportError
import torch
from raycomp.core import Algorithm, Engine, Event, State
import raycomp.loop.trainer, raycomp.loop.batching, raycomp.loop.distributed

class Pinned(Algorithm):
    first_on = frozenset(Event)
    def match(self, event, state): return True
    def apply(self, event, state, logger): state.ran.append(type(self).__name__)

class Other(Pinned):
    first_on = frozenset()

state = State(torch.nn.Linear(2, 2), "1ep", algorithms=[Other(), Pinned()])
state.ran = []
engine = Engine(state)
for event in Event:
    engine.run_event(event)
assert state.ran == ["Pinned", "Other"] * len(Event), state.ran
print("ok")
"""


@pytest.mark.spawns
def test_the_core_orders_algorithms_without_importing_any():
    assert_prints_ok(NO_ALGORITHMS)


LAZY_PACKAGE = """
import sys
import raycomp
assert "torch" not in sys.modules, "import raycomp imported torch"
from raycomp import Event, Trainer  # the facade's names import their homes (and torch) when first used
assert Trainer.__module__ == "raycomp.loop.trainer" and Event.AFTER_LOSS.is_after_event
import torchvision.transforms.v2  # prepared for the CPU torch by the hook `import raycomp` added
print("ok")
"""


@pytest.mark.spawns
def test_import_raycomp_imports_no_torch_until_a_name_needs_it():
    assert_prints_ok(LAZY_PACKAGE)


UNTRACKED_TRIAL = """
import sys
sys.modules["mlflow"] = None  # importing it now raises ImportError
import raycomp.launch.sweep.tuner, raycomp.launch.worker  # what a trial's process loads to train
from raycomp.launch.sweep.trial import tracked
with tracked(None, "trial", None, None, None) as run:
    assert run is None
print("ok")
"""


@pytest.mark.spawns
def test_a_trial_without_tracking_never_imports_mlflow():
    """Its import is ~0.65 CPU-s in every trial process of a sweep that tracks nothing."""
    assert_prints_ok(UNTRACKED_TRIAL)


UNTRACKED_COMMANDS = """
import sys
sys.modules["mlflow"] = None  # importing it now raises ImportError
from raycomp.config import load_experiment
import raycomp.launch.sweep.command, raycomp.launch.sweep.finish, raycomp.launch.sweep.runner
import raycomp.launch.find.command, raycomp.launch.find.driver, raycomp.launch.find.finish
from raycomp.tracking import sweep_run, train_run
from raycomp.tracking.find_runs import find_run
off = ["tracking.enabled=false"]
with sweep_run(load_experiment("experiments/sb.yaml", off), None, resume=False) as run:
    assert run is None
with train_run(load_experiment("experiments/sb.yaml", off + ["sweep=null"]), None) as run:
    assert run is None
with find_run(load_experiment("experiments/find_cnn.yaml", off), None, resume=False) as run:
    assert run is None
print("ok")
"""


@pytest.mark.spawns
def test_a_sweep_training_or_find_without_tracking_never_imports_mlflow():
    """So they run where MLflow is not installed: a lent GPU machine has Ray carried to it (bench/gpu_carry.sh),
    not MLflow."""
    assert_prints_ok(UNTRACKED_COMMANDS)


def assert_prints_ok(script: str) -> None:
    """Runs ``script`` in a fresh interpreter (nothing imported yet, unlike this one) and expects it to print ok."""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"
