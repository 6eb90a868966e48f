"""`python -m raycomp.train`: bad configs stop before anything starts; runs resume from their checkpoints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from raycomp.cli.train import main

REPO = Path(__file__).parents[2]


def experiment(tmp_path: Path, **changes) -> dict:
    data = {
        "name": "one",
        "data": {"num_train": 256, "num_test": 128, "batch_size": 32},
        "max_duration": "2ep",
        "schedule": {"name": "constant"},  # a one-cycle schedule cannot be extended past its end
        "algorithms": {"selective_backprop": {"start": 0.0, "end": 1.0, "keep": 0.5, "interrupt": 0}},
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "1ep"},
        "storage_path": str(tmp_path / "runs"),
    }
    data.update(changes)
    return data


def write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.spawns
@pytest.mark.parametrize("cli", ["raycomp.train", "raycomp.tune"])
def test_bad_config_exits_2_naming_file_line_key_and_nothing_starts(tmp_path, cli):
    path = tmp_path / "bad.yaml"
    path.write_text(
        "name: bad\n"
        "algorithms:\n"
        "  selective_backprop: {keep: 1.5, start: 0.9, end: 0.5}\n"
        "scaling:\n"
        "  num_workers: 0\n"
        "  workers: 2\n"
        f"storage_path: {tmp_path / 'runs'}\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", cli, str(path), "--set", "model.name=resnet7"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    err = result.stderr
    assert f"{path}:3: algorithms.selective_backprop.keep" in err
    assert f"{path}:6: scaling.workers" in err
    assert "model.name" in err and "resnet7" in err
    assert "Traceback" not in err
    assert not (tmp_path / "runs").exists()  # nothing was started or written
    assert "ray" not in result.stdout.lower()


def test_local_run_trains_reports_and_resumes_from_its_latest_checkpoint(tmp_path, capsys):
    path = write(tmp_path / "one.yaml", experiment(tmp_path))
    assert main([str(path)]) == 0
    first = capsys.readouterr().out
    assert '"epoch": 2' in first and '"finished": true' in first
    folder = tmp_path / "runs" / "one"
    assert len(list(folder.glob("checkpoint_*/checkpoint.pt"))) == 2

    # Same name, longer run: resumes at epoch 2 and trains the third epoch only.
    assert main([str(path), "--set", "max_duration=3ep"]) == 0
    second = capsys.readouterr().out
    assert "resuming from" in second and '"resumed_from_step": 16' in second and '"epoch": 3' in second
    assert len(list(folder.glob("checkpoint_*"))) == 2  # num_to_keep


def test_d12_a_diverged_run_is_flagged_and_its_printed_block_is_json_with_null_not_nan(tmp_path, capsys):
    """Defect D12: ``raycomp.train`` printed a bare ``NaN`` (not JSON) and no word of the divergence the sweep flags."""
    diverging = experiment(tmp_path, optimizer={"lr": 1e6}, tracking={"enabled": False})
    assert main([str(write(tmp_path / "one.yaml", diverging))]) == 0
    out = capsys.readouterr().out
    block = out[out.index("{\n") : out.index("\n}\n") + 2]
    shown = json.loads(block, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert shown["diverged"] is True and shown["train/loss"] is None and shown["epoch"] == 2
    assert "\nwarning: training diverged (a loss became NaN or infinite, or 10x its first value)" in out
    assert len((tmp_path / "runs" / "one" / "history.jsonl").read_text().splitlines()) == 2  # each evaluation
