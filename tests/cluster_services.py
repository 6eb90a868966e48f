"""The services a team's cluster shares, started for real on 127.0.0.1: an S3-compatible endpoint (moto's
standalone server, which raycomp reaches through pyarrow and boto3 exactly as it reaches AWS, configured by the
standard AWS variables) and an MLflow server on PostgreSQL with its artifacts in that bucket.

Nothing in raycomp knows these are local: the endpoint comes from ``AWS_ENDPOINT_URL_S3`` or from the storage
path's ``?endpoint_override=`` (``S3Endpoint.uri_with_endpoint``; the multi-node tests), as it would for MinIO or
any other S3-compatible store.

``Cluster`` is these and Ray nodes (tests/ray_nodes.py) as a team's cluster has them: tests/launch/test_multinode.py's
fixture, and bench/bench_fixture_restarts.py's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from helpers import start_mlflow_server
from processes import (
    START_LIMIT_S,
    StartFailed,
    answers,
    free_port,
    on_free_ports,
    read_from,
    run_step,
    start_server,
    stopped_on_error,
)
from ray_nodes import RayNode, head_env, start_node

POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")  # Debian's PostgreSQL 15 (.ci/run installs it where missing)


class S3Endpoint:
    """moto's S3 server on a free port, with one bucket; ``env`` is what a client (pyarrow, boto3, MLflow)
    needs to reach it, as it would need for AWS."""

    def __init__(self, folder: Path, bucket: str = "raycomp"):
        self.bucket = bucket
        self.log = folder / "s3.log"
        self.stops = contextlib.ExitStack()
        moto = str(Path(sys.executable).parent / "moto_server")
        with stopped_on_error(self.stops):
            self.process, self.port = start_server(
                lambda port: [moto, "-H", "127.0.0.1", "-p", str(port)],
                lambda port: answers(f"http://127.0.0.1:{port}/moto-api/"),
                self.log,
                "the S3 endpoint",
                self.stops,
            )
            self.url = f"http://127.0.0.1:{self.port}"
            self.env = {
                "AWS_ACCESS_KEY_ID": "raycomp-test",
                "AWS_SECRET_ACCESS_KEY": "raycomp-test-secret",
                "AWS_REGION": "us-east-1",
                "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_ENDPOINT_URL_S3": self.url,
                "MLFLOW_S3_ENDPOINT_URL": self.url,  # MLflow's own name for it (its artifact repository)
            }
            self.client().create_bucket(Bucket=bucket)

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.url, **_credentials(self.env))

    def uri(self, *parts: str) -> str:
        return "/".join([f"s3://{self.bucket}", *parts])

    def uri_with_endpoint(self, *parts: str) -> str:
        """``uri(*parts)`` naming its endpoint in the query, as a user of MinIO or another S3 store writes a
        ``storage_path`` (pyarrow's ``endpoint_override``): for processes whose environment names none."""
        return f"{self.uri(*parts)}?endpoint_override=127.0.0.1:{self.port}&scheme=http"

    def object_keys(self, prefix: str = "") -> list[str]:
        """Every object key under ``prefix`` in the bucket."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]

    def stop(self) -> None:
        self.stops.close()


def _credentials(env: dict[str, str]) -> dict[str, str]:
    return {
        "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
        "region_name": env["AWS_REGION"],
    }


def postgres_available() -> bool:
    return (POSTGRES_BIN / "initdb").is_file() and (POSTGRES_BIN / "pg_ctl").is_file()


class PostgresMlflow:
    """A PostgreSQL cluster in a temporary folder (run as the ``postgres`` user when this is root, which
    PostgreSQL refuses) and an ``mlflow server`` on it, its artifacts in a bucket (``s3``) or in ``folder``.

    ``pg_ctl`` daemonizes PostgreSQL (it is no child of this process), so its stop is registered before its start."""

    def __init__(self, folder: Path, s3: S3Endpoint | None = None):
        self.stops = contextlib.ExitStack()
        with stopped_on_error(self.stops):
            self.folder = Path(tempfile.mkdtemp(prefix="rcpg-"))  # short: PostgreSQL's socket path lives under it
            self.stops.callback(shutil.rmtree, self.folder, ignore_errors=True)
            self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
            if self.as_user:
                shutil.chown(self.folder, "postgres")
            data = self.folder / "data"
            initdb = [str(POSTGRES_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "mlflow", "--no-sync"]
            run_step([*self.as_user, *initdb, "-E", "UTF8"], "initdb")
            self.pg_ctl = [*self.as_user, str(POSTGRES_BIN / "pg_ctl"), "-D", str(data)]
            stop = [*self.pg_ctl, "-m", "immediate", "stop"]
            self.stops.callback(subprocess.run, stop, capture_output=True, timeout=60, check=False)
            self.db_port = on_free_ports(self._start_postgres)
            create = ["psql", "-h", "127.0.0.1", "-p", str(self.db_port), "-U", "mlflow", "-d", "postgres"]
            run_step([*create, "-c", "CREATE DATABASE mlflow"], "CREATE DATABASE")
            self.backend = f"postgresql+psycopg2://mlflow@127.0.0.1:{self.db_port}/mlflow"
            self.log = folder / "mlflow-server.log"
            artifacts = s3.uri("mlflow-artifacts") if s3 else str(folder / "artifacts")
            env = {**os.environ, **(s3.env if s3 else {})}
            self.process, self.port = start_mlflow_server(self.backend, artifacts, self.log, self.stops, env)
            self.uri = f"http://127.0.0.1:{self.port}"

    def _start_postgres(self) -> int:
        """PostgreSQL on a free port once it accepts connections (``pg_ctl -w`` waits for it, and fails at once if it
        exits); returns the port."""
        log = self.folder / "pg.log"
        port = free_port()
        options = f"-h 127.0.0.1 -p {port} -k {self.folder} -F"
        since = log.stat().st_size if log.exists() else 0
        start = [*self.pg_ctl, "-o", options, "-l", str(log), "-w", "-t", str(START_LIMIT_S), "start"]
        try:
            run_step(start, "pg_ctl start", timeout=START_LIMIT_S + 30)
        except StartFailed as failed:  # pg_ctl says only "could not start server": what PostgreSQL said is in its log
            raise StartFailed(failed.message, failed.output + read_from(log, since)) from None
        return port

    def client(self):
        """An MLflow client of the PostgreSQL store itself (what the server wrote, not what it answers)."""
        from mlflow import MlflowClient

        return MlflowClient(self.backend)

    def runs(self, experiment: str) -> list:
        """The runs of ``experiment`` as the PostgreSQL store holds them."""
        client = self.client()
        found = client.get_experiment_by_name(experiment)
        return [] if found is None else client.search_runs([found.experiment_id], max_results=10_000)

    def stop(self) -> None:
        self.stops.close()


class Cluster:
    """The services and nodes, and the environment a node or a user's shell has on such a cluster: a head that
    offers trials no CPU (cluster.yaml's) and ``workers`` worker nodes of 2 CPUs. Every part's stop is registered as
    it starts, so a part that fails to start stops those before it."""

    def __init__(self, folder: Path, workers: int = 2):
        self.stops = contextlib.ExitStack()
        self.alive: list[str] = []  # processes a node's stop left alive (none)
        self.workers: list[RayNode] = []
        with stopped_on_error(self.stops):
            self.s3 = S3Endpoint(folder)
            self.stops.callback(self.s3.stop)
            self.mlflow = PostgresMlflow(folder, self.s3)
            self.stops.callback(self.mlflow.stop)
            # No AWS_ENDPOINT_URL_S3 on the nodes nor in the drivers' shells: raycomp and Ray reach the bucket only
            # through the storage path's ``?endpoint_override=`` (a user's MinIO); the credentials come from the
            # environment, as on AWS. (MLflow's server has its own variables: PostgresMlflow.)
            s3_env = {key: value for key, value in self.s3.env.items() if key != "AWS_ENDPOINT_URL_S3"}
            self.env = {**head_env(token=uuid.uuid4().hex), **s3_env}
            self.head = self._started(start_node(self.env, num_cpus=0, resources={"trial_slot": 4}))
            self.add_workers(workers)

    def add_workers(self, count: int) -> None:
        for _ in range(count):
            self.workers.append(self._started(start_node(self.env, num_cpus=2, head=self.head)))

    def _started(self, node: RayNode) -> RayNode:
        self.stops.callback(lambda: self.alive.extend(node.stop()))  # a lost node's (``kill``): nothing left to stop
        return node

    def stop(self) -> list[str]:
        """Stops every part, the nodes first, each even if another's stop raised; returns the nodes' processes still
        alive (none)."""
        self.stops.close()
        return self.alive
