"""Where runs are tracked, and the one-line refusal when the store does not answer."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from helpers import free_port

from raycomp.base.errors import TrackingUnavailable
from raycomp.config import ExperimentConfig
from raycomp.tracking import tracking_uri
from raycomp.tracking.store import open_experiment


def config(tmp_path, **tracking) -> ExperimentConfig:
    return ExperimentConfig.from_dict({"name": "exp", "storage_path": str(tmp_path / "runs"), "tracking": tracking})


def test_the_default_store_is_sqlite_beside_the_experiment_output(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking_uri(config(tmp_path)) == f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}"
    client, experiment_id = open_experiment(config(tmp_path))
    assert (tmp_path / "runs" / "mlflow.db").is_file()
    experiment = client.get_experiment(experiment_id)
    assert experiment.name == "exp" and experiment.artifact_location == (tmp_path / "runs" / "mlartifacts").as_uri()
    assert open_experiment(config(tmp_path))[1] == experiment_id  # found again, not created twice


def test_the_config_wins_over_the_environment_which_wins_over_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:1")
    assert tracking_uri(config(tmp_path)) == "http://127.0.0.1:1"
    assert tracking_uri(config(tmp_path, tracking_uri="sqlite:///x.db")) == "sqlite:///x.db"
    named = config(tmp_path, experiment_name="shared", tracking_uri=f"sqlite:///{tmp_path / 'other.db'}")
    client, experiment_id = open_experiment(named)
    assert client.get_experiment(experiment_id).name == "shared"


def test_an_unreachable_server_is_one_line_naming_the_uri(tmp_path):
    uri = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(TrackingUnavailable) as raised:
        open_experiment(config(tmp_path, tracking_uri=uri))
    message = str(raised.value)
    assert uri in message and "not reachable" in message and "\n" not in message
    assert raised.value.exit_code == 3


@pytest.mark.parametrize("cli", ["raycomp.train", "raycomp.tune"])
def test_the_clis_exit_3_before_training_when_the_server_is_down(tmp_path, capsys, cli):
    import importlib

    experiment = {
        "name": "down",
        "max_duration": "1ep",
        "data": {"num_train": 64, "num_test": 32, "batch_size": 32},
        "scaling": {"num_workers": 0},
        "storage_path": str(tmp_path / "runs"),
        "tracking": {"tracking_uri": f"http://127.0.0.1:{free_port()}"},
    }
    path = tmp_path / "down.yaml"
    path.write_text(yaml.safe_dump(experiment))
    try:
        code = importlib.import_module(cli).main([str(path)])
    except SystemExit as exited:
        code = exited.code
    assert code == 3
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not reachable" in err and "tracking.enabled: false" in err
    # no training started, no checkpoint written (the folder holds only the command's claim on it: lock, config)
    assert not list((tmp_path / "runs" / "down").glob("**/checkpoint*"))


@pytest.mark.spawns
def test_d10_a_token_in_the_uri_of_a_server_that_is_down_is_in_no_output_of_the_cli(tmp_path):
    """Defect D10: the exit-3 line quoted urllib3's ``url: /?token=...`` with the token in it."""
    token = "T0KENabc"
    experiment = {
        "name": "down",
        "max_duration": "1ep",
        "data": {"num_train": 64, "num_test": 32, "batch_size": 32},
        "scaling": {"num_workers": 0},
        "storage_path": str(tmp_path / "runs"),
        "tracking": {"tracking_uri": f"http://alice:pw@127.0.0.1:{free_port()}/?token={token}"},
    }
    path = tmp_path / "down.yaml"
    path.write_text(yaml.safe_dump(experiment))
    command = [sys.executable, "-m", "raycomp.train", str(path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert token not in result.stdout + result.stderr and "alice:pw" not in result.stdout + result.stderr
    assert "/?token=*** is not reachable" in result.stderr
