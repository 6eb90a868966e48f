import io
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from helpers import tiny_loader, tiny_model
from torch import nn

from raycomp import Algorithm, Event, Trainer
from raycomp.algorithms import SelectiveBackprop
from raycomp.core import State
from raycomp.loop.checkpoint import (
    CheckpointError,
    KeptCheckpoints,
    load_checkpoint,
    save_checkpoint,
    save_to_folder,
    torch_save,
)


class ScaleInput(Algorithm):
    """Model surgery for the tests: puts a learnable scale in front of the network at INIT."""

    def __init__(self, init_scale: float = 2.0):
        self.init_scale = init_scale

    @staticmethod
    def required_on_load() -> bool:
        return True

    def match(self, event, state):
        return event is Event.INIT

    def apply(self, event, state, logger):
        scale = nn.Conv2d(3, 3, 1, bias=False)
        nn.init.constant_(scale.weight, 0)
        with torch.no_grad():
            scale.weight[:, :, 0, 0] = torch.eye(3) * self.init_scale
        state.model.module = nn.Sequential(scale, state.model.module)


class Counter(Algorithm):
    """A stateful algorithm: counts batches; its count must survive a checkpoint."""

    def __init__(self):
        self.batches = 0

    def match(self, event, state):
        return event is Event.BATCH_END

    def apply(self, event, state, logger):
        self.batches += 1

    def state_dict(self):
        return {"batches": self.batches}

    def load_state_dict(self, state):
        self.batches = state["batches"]


def weights(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def assert_bitwise_equal(a, b):
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


def make_trainer(tmp_path, seed=0, algorithms=None, **kwargs):
    algorithms = (
        [SelectiveBackprop(start=0.2, end=0.9, keep=0.5, scale_factor=0.5, interrupt=2)]
        if algorithms is None
        else algorithms
    )
    kwargs.setdefault("save_folder", tmp_path / "ckpt")
    kwargs.setdefault("device", "cpu")  # bitwise resume is a CPU property here: cuDNN's kernels are not
    model = tiny_model(seed=seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.5)
    return Trainer(
        model,
        tiny_loader(n=64, batch_size=16),
        "4ep",
        eval_dataloader=tiny_loader(n=16),
        algorithms=algorithms,
        optimizers=optimizer,
        schedulers=scheduler,
        seed=seed,
        **kwargs,
    )


@pytest.mark.parametrize(
    ("save_interval", "resume_from", "scale_factor"),
    [("3ba", "ep1-ba6.pt", 0.5), ("1ep", "ep2-ba8.pt", 0.5), ("3ba", "ep1-ba6.pt", 1.0)],
)
def test_resume_gives_bitwise_identical_weights_with_selective_backprop(
    tmp_path, save_interval, resume_from, scale_factor
):
    """scale_factor 1 freezes the BatchNorm statistics during the kept step: the flags are back before a save."""
    full = make_trainer(
        tmp_path,
        save_interval=save_interval,
        algorithms=[Counter(), SelectiveBackprop(0.2, 0.9, 0.5, scale_factor, 2)],
    )
    full.fit()
    assert (tmp_path / "ckpt" / resume_from).exists()

    resumed = make_trainer(
        tmp_path,
        seed=999,
        save_folder=tmp_path / "resumed",
        load_path=tmp_path / "ckpt" / resume_from,
        algorithms=[Counter(), SelectiveBackprop(0.2, 0.9, 0.5, scale_factor, 2)],
    )
    assert resumed.state.timestamp.batch == int(resume_from.split("-ba")[1][:-3])
    resumed.fit()
    assert resumed.state.timestamp == full.state.timestamp.__class__(
        **{**full.state.timestamp.state_dict(), "total_wct": resumed.state.timestamp.total_wct}
    )
    assert_bitwise_equal(weights(full.state.model), weights(resumed.state.model))
    assert resumed.state.algorithms[0].batches == full.state.algorithms[0].batches == 16
    assert resumed.state.eval_metrics == full.state.eval_metrics


def test_latest_points_at_the_newest_and_old_ones_are_rotated(tmp_path):
    trainer = make_trainer(tmp_path, save_interval="2ba", save_num_checkpoints_to_keep=2)
    trainer.fit()
    folder = tmp_path / "ckpt"
    assert sorted(p.name for p in folder.iterdir()) == ["ep3-ba14.pt", "ep3-ba16.pt", "latest.pt"]
    assert os.readlink(folder / "latest.pt") == "ep3-ba16.pt"
    assert load_checkpoint(folder)["state"]["timestamp"]["batch"] == 16


def test_checkpoint_contents(tmp_path):
    trainer = make_trainer(tmp_path, save_interval="1ep")
    trainer.fit()
    payload = load_checkpoint(tmp_path / "ckpt" / "latest.pt")
    state = payload["state"]
    assert set(state) == {"model", "optimizers", "schedulers", "scaler", "timestamp", "algorithms", "callbacks"}
    assert set(payload["rng"]) == {"python", "numpy", "torch", "cuda"}
    [sb] = state["algorithms"]
    assert {key: value for key, value in sb.items() if key != "state"} == {
        "class_path": "raycomp.algorithms.selective_backprop.SelectiveBackprop",
        "init_args": {
            "start": 0.2,
            "end": 0.9,
            "keep": 0.5,
            "scale_factor": 0.5,
            "interrupt": 2,
        },
        "required_on_load": False,
    }
    assert sb["state"] == {}  # no stored batches: BatchNorm statistics come from the selection pass


def test_a_selective_backprop_checkpoint_is_the_size_of_the_baselines(tmp_path):
    """Only SB's name and arguments add to the baseline's checkpoint (before issue 24: 8 full batches)."""
    make_trainer(tmp_path / "sb").fit()
    make_trainer(tmp_path / "baseline", algorithms=[]).fit()
    sb_size = (tmp_path / "sb" / "ckpt" / "latest.pt").stat().st_size
    baseline_size = (tmp_path / "baseline" / "ckpt" / "latest.pt").stat().st_size
    assert 0 <= sb_size - baseline_size < 1024, (sb_size, baseline_size)


def test_required_algorithm_missing_is_refused_by_name(tmp_path):
    trainer = make_trainer(tmp_path, algorithms=[ScaleInput(3.0)])
    trainer.fit()
    with pytest.raises(CheckpointError, match=r"test_checkpoint\.ScaleInput.*required_on_load"):
        make_trainer(tmp_path, algorithms=[], load_path=tmp_path / "ckpt", save_folder=None)


def test_required_algorithm_is_recreated_when_opted_in(tmp_path):
    trained = make_trainer(tmp_path, algorithms=[ScaleInput(3.0)])
    trained.fit()
    loaded = make_trainer(
        tmp_path, algorithms=[], load_path=tmp_path / "ckpt", save_folder=None, load_recreate_required_algorithms=True
    )
    [recreated] = loaded.state.algorithms
    assert isinstance(recreated, ScaleInput) and recreated.init_scale == 3.0
    assert isinstance(loaded.state.model.module[0], nn.Conv2d)  # surgery re-applied before the weights
    assert_bitwise_equal(weights(trained.state.model), weights(loaded.state.model))
    assert loaded.engine.trace_summary.get("ScaleInput", Event.INIT).count == 1


def test_required_algorithm_present_loads_identical_weights(tmp_path):
    trained = make_trainer(tmp_path, algorithms=[ScaleInput(3.0)])
    trained.fit()
    loaded = make_trainer(tmp_path, algorithms=[ScaleInput(3.0)], load_path=tmp_path / "ckpt", save_folder=None)
    assert_bitwise_equal(weights(trained.state.model), weights(loaded.state.model))


class LoadProbe(Counter):
    """Counts batches, and records on BEFORE_LOAD its count, the run's step and its optimizers."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def match(self, event, state):
        return event in (Event.BATCH_END, Event.BEFORE_LOAD)

    def apply(self, event, state, logger):
        if event is Event.BEFORE_LOAD:
            self.seen.append((self.batches, state.timestamp.batch, len(state.optimizers)))
        else:
            super().apply(event, state, logger)


def test_algorithms_have_their_state_on_before_load_and_the_weights_come_after(tmp_path):
    """So an algorithm that changed the optimizers (LayerFreezing) can redo it before their state is loaded."""
    make_trainer(tmp_path, algorithms=[LoadProbe()]).fit()
    probe = LoadProbe()
    make_trainer(tmp_path, algorithms=[probe], load_path=tmp_path / "ckpt", save_folder=None)
    assert probe.seen == [(16, 0, 1)]  # its state is back; the timestamp (and weights, optimizer state) not yet


class Unpicklable:
    def __reduce__(self):
        raise RuntimeError("disk full")


class Poisoned(Algorithm):
    """Its state cannot be written: saving fails halfway through torch.save."""

    def match(self, event, state):
        return False

    def apply(self, event, state, logger):
        pass

    def state_dict(self):
        return {"big": torch.zeros(1000), "bad": Unpicklable()}


def test_a_failed_save_leaves_the_previous_checkpoint_loadable(tmp_path):
    state = State(tiny_model(), "1ep")
    folder = tmp_path / "ckpt"
    first = save_checkpoint(state, folder)
    state.algorithms.append(Poisoned())
    state.timestamp = state.timestamp.to_next_batch(4)
    with pytest.raises(RuntimeError, match="disk full"):
        save_checkpoint(state, folder)
    assert sorted(p.name for p in folder.iterdir()) == [first.name, "latest.pt"]  # no partial file left
    assert load_checkpoint(folder)["state"]["timestamp"]["batch"] == 0


KILLED_WRITER = """
import sys, torch
from raycomp.loop.checkpoint import save_checkpoint
from raycomp.core import State
from torch import nn
model = nn.Linear(1, 1)
state = State(model, "1ep")
save_checkpoint(state, sys.argv[1])
print("first saved", flush=True)
model.big = nn.Parameter(torch.zeros(150_000_000))  # 600 MB: slow enough to be killed mid-write
state.timestamp = state.timestamp.to_next_batch(1)
save_checkpoint(state, sys.argv[1])
"""


@pytest.mark.spawns
def test_a_process_killed_while_saving_leaves_the_previous_checkpoint_loadable(tmp_path):
    folder = tmp_path / "ckpt"
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(folder)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "first saved"
    deadline = time.monotonic() + 60
    while not any(p.name.endswith(".tmp") and p.stat().st_size > 0 for p in folder.iterdir()):
        assert time.monotonic() < deadline and writer.poll() is None, "the second save never started"
        time.sleep(0.002)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    assert not (folder / "ep0-ba1.pt").exists()
    payload = load_checkpoint(folder / "latest.pt")
    assert payload["state"]["timestamp"]["batch"] == 0


def test_loading_never_runs_code_from_the_file(tmp_path):
    class Exploit:
        def __reduce__(self):
            return (os.system, ("touch " + str(tmp_path / "pwned"),))

    path = tmp_path / "evil.pt"
    torch.save({"format_version": 1, "x": Exploit()}, path)
    with pytest.raises(CheckpointError, match="Cannot read checkpoint"):
        load_checkpoint(path)
    assert not (tmp_path / "pwned").exists()


def test_missing_or_foreign_checkpoint(tmp_path):
    with pytest.raises(FileNotFoundError, match="No checkpoint at"):
        load_checkpoint(tmp_path / "nope.pt")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="not a raycomp checkpoint"):
        load_checkpoint(tmp_path / "foreign.pt")


# ---- issue 14: malformed and damaged checkpoints (L11, M8) --------------------------------------------------


def _saved_payload(tmp_path, change):
    """A real checkpoint's payload, changed by ``change(payload)`` and written to ``bad.pt``."""
    from raycomp.loop.checkpoint_format import checkpoint_payload

    payload = checkpoint_payload(State(tiny_model(), "1ep", algorithms=[SelectiveBackprop()]))
    change(payload)
    path = tmp_path / "bad.pt"
    torch.save(payload, path)
    return path


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda p: p.pop("state"), "state: missing"),
        (lambda p: p["state"].update(timestamp="3ep"), "state.timestamp: expected a mapping, got str '3ep'"),
        (lambda p: p["state"]["timestamp"].update(batch="7"), "state.timestamp.batch: expected a count >= 0"),
        (lambda p: p["state"].pop("optimizers"), "state: missing optimizers"),
        (lambda p: p["state"].update(algorithms={"a": 1}), "state.algorithms: expected a list"),
        (lambda p: p["state"]["algorithms"][0].pop("class_path"), "state.algorithms[0].class_path: expected str"),
        (lambda p: p["state"]["algorithms"][0].update(init_args=[1]), "state.algorithms[0].init_args: expected"),
        (lambda p: p["state"]["model"].update(extra="x"), "state.model: not a tensor: extra"),
        (lambda p: p["rng"].update(torch=torch.zeros(3)), "rng: not a saved random state"),
        (lambda p: p.pop("rng"), "rng: missing"),
    ],
)
def test_l11_a_malformed_payload_raises_checkpoint_error_naming_the_file_and_the_entry(tmp_path, change, named):
    path = _saved_payload(tmp_path, change)
    random_state = torch.get_rng_state()
    with pytest.raises(CheckpointError) as raised:
        load_checkpoint(path)
    message = str(raised.value)
    assert str(path) in message and named in message and "\n" not in message
    assert torch.equal(torch.get_rng_state(), random_state)  # checking the saved RNG state left ours alone


def test_l11_arguments_a_required_algorithm_refuses_raise_checkpoint_error(tmp_path):
    from raycomp.algorithms import BlurPool
    from raycomp.core import Engine
    from raycomp.loop.checkpoint import restore_required_algorithms

    def bad_blurpool(payload):
        entry = {"class_path": "raycomp.algorithms.blurpool.BlurPool", "required_on_load": True, "state": {}}
        payload["state"]["algorithms"].append({**entry, "init_args": {"min_channels": "many"}})

    payload = load_checkpoint(_saved_payload(tmp_path, bad_blurpool))
    state = State(tiny_model(), "1ep")
    with pytest.raises(CheckpointError, match=r"Cannot re-create .*BlurPool from the checkpoint's arguments"):
        restore_required_algorithms(payload, state, Engine(state), recreate=True)
    assert not any(isinstance(algorithm, BlurPool) for algorithm in state.algorithms)


def _kept_run(tmp_path, count=3):
    kept = KeptCheckpoints(tmp_path / "run", num_to_keep=count)
    state = State(tiny_model(), "4ep")
    for batch in range(count):
        state.timestamp = state.timestamp.to_next_batch(1) if batch else state.timestamp
        save_to_folder(state, tmp_path / "report")
        kept.add(tmp_path / "report")
    return kept


def test_m8_corrupt_newest_checkpoint_falls_back_to_the_previous_kept_one(tmp_path, capsys):
    kept = _kept_run(tmp_path)
    newest = kept.folders()[-1] / "checkpoint.pt"
    os.truncate(newest, 1000)
    chosen = kept.newest_loadable()
    assert chosen == kept.folders()[-2] / "checkpoint.pt"
    assert load_checkpoint(chosen)["state"]["timestamp"]["batch"] == 1
    [warning] = capsys.readouterr().err.splitlines()
    assert warning.startswith(f"warning: skipping checkpoint {newest}: Cannot read checkpoint")


def test_m8_no_loadable_checkpoint_is_one_clear_error(tmp_path, capsys):
    kept = _kept_run(tmp_path, count=2)
    for folder in kept.folders():
        (folder / "checkpoint.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError) as raised:
        kept.newest_loadable()
    message = str(raised.value)
    assert "none of the 2 kept checkpoints" in message and f"delete {kept.folder}" in message
    assert "\n" not in message
    assert len(capsys.readouterr().err.splitlines()) == 2  # one warning per skipped file
    assert KeptCheckpoints(tmp_path / "nothing").newest_loadable() is None  # no checkpoint: start from scratch


def test_a_kept_checkpoint_copy_that_fails_midway_leaves_no_half_copied_folder(tmp_path):
    """The copy into the run folder stops after some files (here a dangling link, as an interrupt would):
    neither the staging folder nor a ``checkpoint_*`` is left, and the earlier checkpoint stays the newest."""
    import shutil

    kept = KeptCheckpoints(tmp_path / "run")
    whole = tmp_path / "whole"
    whole.mkdir()
    (whole / "checkpoint.pt").write_bytes(b"weights")
    first = kept.add(whole)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "checkpoint.pt").write_bytes(b"weights")
    (broken / "missing").symlink_to(tmp_path / "nowhere")
    with pytest.raises(shutil.Error):
        kept.add(broken)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [first.name]


def test_an_interrupt_landing_in_a_checkpoints_write_stays_an_interrupt():
    """SIGTERM (turned into Ctrl-C) landing in one of ``torch.save``'s writes: torch's zip writer raised its own
    RuntimeError ("unexpected pos") over the KeyboardInterrupt, and `python -m raycomp.train` exited 1, failed,
    instead of 130 (CI, test_run_folder.py's M7 test). Here the third write is interrupted, as the signal was."""

    class InterruptedAtThirdWrite(io.RawIOBase):
        def __init__(self) -> None:
            self.writes = 0

        def writable(self) -> bool:
            return True

        def write(self, data) -> int:
            self.writes += 1
            if self.writes == 3:
                raise KeyboardInterrupt
            return len(data)

    with pytest.raises(KeyboardInterrupt):
        torch_save({"weights": torch.zeros(10_000)}, InterruptedAtThirdWrite())
    with pytest.raises(RuntimeError):  # what torch.save itself raises there (so the test above can fail)
        torch.save({"weights": torch.zeros(10_000)}, InterruptedAtThirdWrite())
