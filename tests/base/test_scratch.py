import shutil
from pathlib import Path

import pytest

from raycomp.base import scratch
from raycomp.base.scratch import scratch_folder


def test_the_folder_is_in_tmpdir_and_gone_after_the_block(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # tempfile caches TMPDIR on first use
    with scratch_folder("raycomp-test-") as folder:
        (folder / "sub").mkdir()
        (folder / "sub" / "file").write_bytes(b"x" * 1000)
        assert folder.parent == tmp_path and folder.name.startswith("raycomp-test-")
    assert list(tmp_path.iterdir()) == []


def test_an_interrupt_inside_the_block_removes_the_folder_and_goes_on(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    with pytest.raises(KeyboardInterrupt), scratch_folder("raycomp-test-") as folder:
        (folder / "file").write_text("partial checkpoint")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_an_interrupt_landing_during_the_removal_still_removes_everything_then_is_raised(tmp_path, monkeypatch):
    """The leak CI once caught: SIGTERM (made a KeyboardInterrupt) while ``rmtree`` removed a checkpoint."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    real_rmtree, calls = shutil.rmtree, []

    def interrupted_once(path, ignore_errors=False):
        calls.append(path)
        if len(calls) == 1:  # remove part of the tree, then the signal lands
            real_rmtree(Path(path) / "first", ignore_errors=ignore_errors)
            raise KeyboardInterrupt
        real_rmtree(path, ignore_errors=ignore_errors)

    monkeypatch.setattr(scratch.shutil, "rmtree", interrupted_once)
    with pytest.raises(KeyboardInterrupt), scratch_folder("raycomp-test-") as folder:
        for name in ("first", "second"):
            (folder / name).mkdir()
            (folder / name / "weights").write_bytes(b"x" * 1000)
    assert len(calls) == 2
    assert list(tmp_path.iterdir()) == []


def test_folders_left_by_a_process_killed_outright_are_removed_by_the_next_command(tmp_path):
    """Defect 11: SIGKILL mid-report left raycomp-ckpt-* folders in TMPDIR, and nothing ever removed them."""
    import os
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = int(dead.stdout)
    abandoned = tmp_path / f"raycomp-ckpt-{gone}-{'a' * 32}"
    recent = tmp_path / f"raycomp-ckpt-{gone}-{'b' * 32}"
    running = tmp_path / f"raycomp-ckpt-{os.getpid()}-{'c' * 32}"
    other = tmp_path / "someone-elses"
    ray_of_the_dead = tmp_path / f"raycomp-ray-{gone}"  # a private Ray's sessions (reliability notes, D14)
    ray_running = tmp_path / f"raycomp-ray-{os.getpid()}"
    for folder in (abandoned, recent, running, other, ray_of_the_dead, ray_running):
        (folder / "sub").mkdir(parents=True)
    old = os.stat(abandoned).st_mtime - 3600
    for folder in (abandoned, running, other, ray_of_the_dead, ray_running):
        os.utime(folder, (old, old))
    assert scratch.remove_abandoned(tmp_path) == 2
    kept = (recent, running, other, ray_running)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in kept)
