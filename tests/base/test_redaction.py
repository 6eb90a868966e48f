"""One redaction for every message (defect 5): no password from a URI in what raycomp prints or writes."""

from __future__ import annotations

import os

import pytest

from raycomp.base.errors import one_line
from raycomp.base.redaction import redacted, without_credentials

SECRET = "s3cretPW"


def test_every_uri_in_a_message_loses_its_password_and_secret_query_values():
    text = (
        f"API request to http://alice:{SECRET}@127.0.0.1:5055/api/2.0/mlflow/runs/create failed "
        f"(see https://{SECRET}@host/x?api_token={SECRET}&page=2), and sqlite:////tmp/mlflow.db"
    )
    shown = redacted(text)
    assert SECRET not in shown
    assert "http://alice:***@127.0.0.1:5055/api/2.0/mlflow/runs/create" in shown
    assert "https://***@host/x?api_token=***&page=2" in shown and "sqlite:////tmp/mlflow.db" in shown
    assert redacted("no uri here: a:b@c") == "no uri here: a:b@c"


def test_one_line_errors_carry_no_password():
    error = ConnectionError(f"HTTPConnectionPool: url http://alice:{SECRET}@127.0.0.1:1/api failed")
    assert SECRET not in one_line(error) and "alice:***@" in one_line(error)


def test_mlflow_gets_the_uri_without_credentials_and_the_credentials_by_its_variables(monkeypatch):
    pytest.importorskip("mlflow")
    from raycomp.tracking.store import client_uri

    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD", raising=False)
    assert without_credentials("http://127.0.0.1:5000") == ("http://127.0.0.1:5000", None, None)
    bare = client_uri(f"http://alice:{SECRET}%21@127.0.0.1:5055/mlflow")
    assert bare == "http://127.0.0.1:5055/mlflow"
    assert os.environ["MLFLOW_TRACKING_USERNAME"] == "alice" and os.environ["MLFLOW_TRACKING_PASSWORD"] == SECRET + "!"
