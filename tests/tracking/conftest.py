"""Real `mlflow server`s on 127.0.0.1: on a temporary SQLite store (a laptop's, or a small team's), and on
PostgreSQL (a shared server's, as README's cluster section sets one up), each with an artifact folder."""

from __future__ import annotations

import pytest
from cluster_services import PostgresMlflow, postgres_available
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


@pytest.fixture(scope="session")
def postgres_mlflow_server(tmp_path_factory):
    """One MLflow server on PostgreSQL 15 (.ci/run installs it where missing), shared as the SQLite one is."""
    if not postgres_available():
        pytest.skip("PostgreSQL 15 is not installed (.ci/run installs it)")
    server = PostgresMlflow(tmp_path_factory.mktemp("postgres-server"))
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def tracking_server(request):
    """The shared server on each backend: the tests of what a sweep leaves on a server run against both."""
    return request.getfixturevalue("shared_mlflow_server" if request.param == "sqlite" else "postgres_mlflow_server")
