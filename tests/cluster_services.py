"""The services a team's cluster shares, started for real on 127.0.0.1: an S3-compatible endpoint (moto's
standalone server, which raycomp reaches through pyarrow and boto3 exactly as it reaches AWS, configured by the
standard AWS variables) and an MLflow server on PostgreSQL with its artifacts in that bucket.

Nothing in raycomp knows these are local: the endpoint comes from ``AWS_ENDPOINT_URL_S3`` or from the storage
path's ``?endpoint_override=`` (``S3Endpoint.uri_with_endpoint``; the multi-node tests), as it would for MinIO or
any other S3-compatible store.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from helpers import terminate
from ray_nodes import free_ports

POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")  # Debian's PostgreSQL 15 (.ci/run installs it where missing)
START_TIMEOUT_S = 90


def _wait_for(url: str, process: subprocess.Popen, log: Path, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"{what} did not start (exit {process.returncode}):\n{log.read_text()[-3000:]}")
        time.sleep(0.3)


class S3Endpoint:
    """moto's S3 server on a free port, with one bucket; ``env`` is what a client (pyarrow, boto3, MLflow)
    needs to reach it, as it would need for AWS."""

    def __init__(self, folder: Path, bucket: str = "raycomp"):
        self.bucket = bucket
        self.port = free_ports(1)[0]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = folder / "s3.log"
        command = [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(self.port)]
        with self.log.open("w") as output:
            self.process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        _wait_for(f"{self.url}/moto-api/", self.process, self.log, "the S3 endpoint")
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
        terminate(self.process, timeout=10)


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
    PostgreSQL refuses) and an ``mlflow server`` on it, its artifacts in a bucket (``s3``) or in ``folder``."""

    def __init__(self, folder: Path, s3: S3Endpoint | None = None):
        self.folder = Path(tempfile.mkdtemp(prefix="rcpg-"))  # short: PostgreSQL's socket path lives under it
        self.db_port, self.port = free_ports(2)
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_user:
            shutil.chown(self.folder, "postgres")
        data = self.folder / "data"
        initdb = [str(POSTGRES_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "mlflow", "--no-sync"]
        subprocess.run([*self.as_user, *initdb, "-E", "UTF8"], check=True, capture_output=True, timeout=120)
        options = f"-h 127.0.0.1 -p {self.db_port} -k {self.folder} -F"
        start = [str(POSTGRES_BIN / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(self.folder / "pg.log")]
        subprocess.run([*self.as_user, *start, "-w", "start"], check=True, capture_output=True, timeout=120)
        self.pg_ctl = [*self.as_user, str(POSTGRES_BIN / "pg_ctl"), "-D", str(data)]
        create = ["psql", "-h", "127.0.0.1", "-p", str(self.db_port), "-U", "mlflow", "-d", "postgres"]
        subprocess.run([*create, "-c", "CREATE DATABASE mlflow"], check=True, capture_output=True, timeout=60)
        self.backend = f"postgresql+psycopg2://mlflow@127.0.0.1:{self.db_port}/mlflow"
        self.uri = f"http://127.0.0.1:{self.port}"
        self.log = folder / "mlflow-server.log"
        command = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(self.port)]
        command += ["--workers", "1", "--backend-store-uri", self.backend]
        command += ["--artifacts-destination", s3.uri("mlflow-artifacts") if s3 else str(folder / "artifacts")]
        env = {**os.environ, **(s3.env if s3 else {}), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        with self.log.open("w") as output:
            self.process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env)
        _wait_for(f"{self.uri}/health", self.process, self.log, "mlflow server")

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
        terminate(self.process)
        subprocess.run([*self.pg_ctl, "-m", "immediate", "stop"], capture_output=True, timeout=60, check=False)
        shutil.rmtree(self.folder, ignore_errors=True)
