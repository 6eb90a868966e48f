"""One redaction for every message (defect 5): no password from a URI in what raycomp prints or writes."""

from __future__ import annotations

import os

import pytest

from raycomp.base.errors import one_line
from raycomp.base.redaction import redacted, redacted_uri, without_credentials

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


def test_a_query_with_no_secret_is_shown_as_written():
    """A bucket's ``storage_path`` as the user wrote it (its ``:`` not quoted as ``%3A``), in every message."""
    bucket = "s3://raycomp/jobs/results.csv?endpoint_override=127.0.0.1:9000&scheme=http"
    assert redacted_uri(bucket) == bucket and redacted(f"copied: {bucket}, done") == f"copied: {bucket}, done"
    assert redacted_uri(f"{bucket}&secret_key={SECRET}") == f"{bucket}&secret_key=***"


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


def test_d10_a_secret_query_pair_is_hidden_where_urllib3_quotes_it_without_its_uri():
    """Defect D10: urllib3 quotes the request's path and query alone (``url: /?token=...``): no URI to match."""
    text = (
        "API request to http://127.0.0.1:5079/?token=*** failed with exception HTTPConnectionPool(host='127.0.0.1', "
        f"port=5079): Max retries exceeded with url: /?token={SECRET}/api/2.0/mlflow/experiments/get-by-name"
        f"&experiment_name=j10&Password={SECRET} (Caused by NewConnectionError(...))"
    )
    shown = redacted(text)
    assert SECRET not in shown
    assert "with url: /?token=***&experiment_name=j10&Password=*** (Caused by" in shown
    printed = "python -m raycomp.tune x.yaml --set data.init_args.key_column=label --set model.tokenizer=bytes"
    assert redacted(printed) == printed  # a --set is no query: a printed command stays pasteable


def test_d10_a_uri_in_a_message_ends_before_the_punctuation_that_closes_its_phrase():
    """Defect D10: the match took the ``);`` after a URI with a query into the query, which lost them."""
    assert redacted(f"failed (at http://alice:{SECRET}@host/x?token={SECRET});") == (
        "failed (at http://alice:***@host/x?token=***);"
    )
    assert redacted(f"see http://{SECRET}@host/a, http://host/b?api_key={SECRET}. Then") == (
        "see http://***@host/a, http://host/b?api_key=***. Then"
    )
    assert redacted(f"http://alice:pa;{SECRET}@host/x), then") == "http://alice:***@host/x), then"  # ; in a password


def test_d10_mlflow_gets_a_servers_uri_without_its_secret_query_values(monkeypatch):
    """MLflow appends its API paths to the whole URI (``/?token=T/api/2.0/...``): the query never worked, and
    leaked through MLflow's error texts."""
    pytest.importorskip("mlflow")
    from raycomp.tracking.store import client_uri

    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD", raising=False)
    assert client_uri(f"http://alice:pw@127.0.0.1:5055/?token={SECRET}") == "http://127.0.0.1:5055/"
    assert client_uri(f"https://host/mlflow?api_key={SECRET}&x=1") == "https://host/mlflow?x=1"
    database = f"postgresql://db/mlflow?sslpassword={SECRET}&sslmode=require"
    assert client_uri(database) == database  # a database driver reads its query
