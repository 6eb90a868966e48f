"""A real `mlflow server` on 127.0.0.1 with a temporary SQLite backend and artifact folder."""

from __future__ import annotations

import pytest
from helpers import MlflowServer


@pytest.fixture
def mlflow_server(tmp_path):
    server = MlflowServer(tmp_path / "server")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def shared_mlflow_server(tmp_path_factory):
    """One server for the tests that only write to it, each to an experiment of its own name: a start costs
    about 8 CPU-s (the server and its uvicorn). Tests that stop or break their server take ``mlflow_server``."""
    server = MlflowServer(tmp_path_factory.mktemp("shared-server"))
    yield server
    server.stop()
