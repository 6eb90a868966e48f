"""`python -m raycomp.tune`'s own lines: the resume command after any interruption (defect 15)."""

from __future__ import annotations

import pytest
import yaml

from raycomp.base.remedies import PYTHON
from raycomp.cli import tune
from raycomp.launch.sweep import command
from raycomp.launch.sweep.command import SweepOptions


def test_the_resume_hint_keeps_every_flag_and_no_password():
    uri = "tracking.tracking_uri=http://alice:pw@host:5000"
    args = tune.parse_args(["my exp.yaml", "--set", uri, "--no-report", "--address", "10.0.0.1:6379"])
    options = SweepOptions(args.experiment, tuple(args.overrides), report=not args.no_report, address=args.address)
    hint = options.resume_hint()
    command = (
        "python -m raycomp.tune 'my exp.yaml' --set tracking.tracking_uri=http://alice:***@host:5000 --no-report "
        "--address 10.0.0.1:6379 --resume"
    )
    assert hint.splitlines() == ["continue it with:", f"  {command}"]


def test_from_python_the_resume_hint_is_the_call_with_resume_true():
    options = SweepOptions("sb.yaml", ("name=x",), report=False, remedies=PYTHON, program="raycomp.api.sweep")
    assert options.resume_hint().splitlines()[1] == (
        "  raycomp.api.sweep('sb.yaml', overrides=['name=x'], report=False, resume=True)"
    )


def test_a_second_ctrl_c_still_prints_the_resume_command_and_ends_the_sweep_run_killed(tmp_path, monkeypatch, capsys):
    """The second Ctrl-C lands outside Tune's handler: before, it printed `interrupted` and no way on."""
    from mlflow import MlflowClient

    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"name": "twice", "storage_path": str(tmp_path / "runs"), "sweep": {}}))

    def interrupted_twice(*args, **kwargs):
        raise KeyboardInterrupt  # what the second Ctrl-C raises while Tune saves the sweep

    monkeypatch.setattr(command, "_sweep", interrupted_twice)
    assert tune.main([str(path), "--no-report"]) == 130
    err = capsys.readouterr().err
    assert f"python -m raycomp.tune {path} --no-report --resume" in err and err.rstrip().endswith("interrupted")
    client = MlflowClient(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("twice").experiment_id])
    assert run.info.status == "KILLED"


def test_a_half_life_longer_than_the_run_is_a_warning_before_the_sweep_starts(tmp_path, monkeypatch, capsys):
    """Issue 55: EMA's default 1000-batch half-life on a 4-batch run evaluates nearly the initial weights."""
    experiment = {
        "name": "short",
        "storage_path": str(tmp_path / "runs"),
        "data": {"num_train": 64, "batch_size": 16},
        "max_duration": "1ep",
        "algorithms": {"ema": {}},
        "tracking": {"enabled": False},
        "sweep": {"repeats": 1},
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(experiment))
    started = []
    monkeypatch.setattr(command, "_sweep", lambda *args: started.append(capsys.readouterr().out) or 0)
    assert tune.main([str(path), "--no-report"]) == 0
    assert "warning: algorithms.ema.half_life: 1000ba (its default) is longer than the run (1ep, 4ba)" in started[0]


@pytest.mark.parametrize("damage", [b"", b"not a pickle"])
def test_a_damaged_saved_sweep_state_is_one_line(tmp_path, local_ray, damage):
    """Defect 12: a damaged tuner.pkl gave a raw traceback and exit 1."""
    from raycomp.base.errors import RunConflict
    from raycomp.config import ExperimentConfig
    from raycomp.launch.sweep.tuner import restore_tuner

    folder = tmp_path / "sweep"
    folder.mkdir()
    (folder / "tuner.pkl").write_bytes(damage)
    config = ExperimentConfig.from_dict({"name": "sweep", "storage_path": str(tmp_path), "sweep": {}})
    with pytest.raises(RunConflict, match=r"saved state in .*sweep cannot be read .*another name"):
        restore_tuner(config, str(folder))
