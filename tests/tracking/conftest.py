"""A real `mlflow server` on 127.0.0.1 with a temporary SQLite backend and artifact folder."""

from __future__ import annotations

import pytest
from helpers import MlflowServer


@pytest.fixture
def mlflow_server(tmp_path):
    server = MlflowServer(tmp_path / "server")
    yield server
    server.stop()
