"""Tracking under faults and awkward input (issue 14; reproductions in the reliability notes): each test is
named after the defect it guards against."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from mlflow import MlflowClient

from raycomp.errors import ConfigError
from raycomp.tracking.ref import redacted_uri
from raycomp.tracking.search import quoted, tag_filter
from raycomp.train import main


def experiment(storage: Path, name: str = "one", **changes) -> dict:
    data = {
        "name": name,
        "data": {"num_train": 64, "num_test": 32, "batch_size": 32},
        "max_duration": "1ep",
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "1ep", "num_to_keep": 1},
        "storage_path": str(storage),
    }
    data.update(changes)
    return data


def write(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_m2_an_apostrophe_in_the_storage_path_tracks_and_reopens_the_run(tmp_path, capsys):
    storage = tmp_path / "O'Neil" / "runs"
    path = write(tmp_path / "one.yaml", experiment(storage))
    assert main([str(path)]) == 0
    assert main([str(path), "--set", "max_duration=2ep"]) == 0  # finds its run and checkpoint again by tag
    client = MlflowClient(f"sqlite:///{storage / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("one").experiment_id])
    assert len(runs) == 2 and {run.info.status for run in runs} == {"FINISHED"}
    assert "Invalid clause" not in capsys.readouterr().err


def test_m2_filters_quote_apostrophes_and_refuse_what_mlflow_cannot_express():
    assert quoted("plain") == "'plain'" and quoted("O'Neil") == '"O\'Neil"'
    assert tag_filter({"a": "x", "b": "y'z"}) == "tags.`a` = 'x' and tags.`b` = \"y'z\""
    with pytest.raises(ConfigError, match="both"):
        quoted("""it's "odd\"""")


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        ("http://alice:s3cretPW@127.0.0.1:5055", "http://alice:***@127.0.0.1:5055"),
        ("https://s3cretPW@host/mlflow?api_token=s3cretPW&x=1", "https://***@host/mlflow?api_token=***&x=1"),
        ("sqlite:////tmp/mlflow.db", "sqlite:////tmp/mlflow.db"),
        ("http://127.0.0.1:5000", "http://127.0.0.1:5000"),
    ],
)
def test_m3_a_uri_is_shown_without_its_credentials(uri, shown):
    assert redacted_uri(uri) == shown


def test_m3_credentials_in_the_tracking_uri_are_not_published(tmp_path, mlflow_server, capsys):
    secret = "s3cretPW"
    uri = mlflow_server.uri.replace("http://", f"http://alice:{secret}@")
    path = write(tmp_path / "one.yaml", experiment(tmp_path / "runs", tracking={"tracking_uri": uri}))
    assert main([str(path)]) == 0
    out, err = capsys.readouterr()
    assert secret not in out + err and "alice:***@" in out
    client = MlflowClient(mlflow_server.uri)
    (run,) = client.search_runs([client.get_experiment_by_name("one").experiment_id])
    assert run.data.params["tracking.tracking_uri"] == redacted_uri(uri)
    assert secret not in "".join(run.data.params.values()) + "".join(run.data.tags.values())
    config = client.download_artifacts(run.info.run_id, "config.yaml", str(tmp_path))
    assert secret not in Path(config).read_text()
