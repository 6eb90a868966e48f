"""A sweep's MLflow credentials kept out of what Tune saves: Tune pickles its callbacks and the trials' config into
``tuner.pkl`` and Ray's session folder, readable by whoever reads those folders (reliability notes, D11)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path

from raycomp.base.layout import is_uri
from raycomp.base.redaction import redacted_uri, without_credentials, without_secret_query
from raycomp.config import ExperimentConfig
from raycomp.tracking.ref import RunRef

# MLflow's own variables for a tracking server's credentials (``tracking.store.client_uri`` sets the first two
# from the URI's host part).
CREDENTIAL_VARIABLES = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN")


def ref_without_credentials(parent: RunRef | None) -> RunRef | None:
    """``parent`` as MLflow is given it (``store.client_uri``): without the user name and password of its host,
    which every process that talks to MLflow reads from ``CREDENTIAL_VARIABLES`` instead, nor a server's secret
    query values. Tune pickles what it is given: its callbacks into ``tuner.pkl``, readable by anyone who can
    read the sweep's folder, and into Ray's session folder."""
    if parent is None:
        return None
    return dataclasses.replace(parent, tracking_uri=without_credentials(without_secret_query(parent.tracking_uri))[0])


def config_without_credentials(config: ExperimentConfig) -> ExperimentConfig:
    """``config`` with its tracking URI as it is shown (``alice:***@host``): trials log it as a param and track
    through the parent run's reference, never through this URI."""
    uri = config.tracking.tracking_uri
    if not uri or redacted_uri(uri) == uri:
        return config
    tracking = config.tracking.model_copy(update={"tracking_uri": redacted_uri(uri)})
    return config.model_copy(update={"tracking": tracking})


def tracking_credentials() -> dict[str, str]:
    """The MLflow credentials of this process, for the trials: handed to them by Ray in memory
    (``tune.with_parameters``), never written, on a cluster as on a private Ray."""
    return {name: os.environ[name] for name in CREDENTIAL_VARIABLES if os.environ.get(name)}


def keep_saved_state_private(folder: str, parent: RunRef | None) -> None:
    """``tuner.pkl`` readable by its owner only when what it holds still carries a secret (a database URI's
    query, which its driver reads: no MLflow variable carries it instead). Local storage only."""
    if parent is None or is_uri(folder):
        return
    uri = ref_without_credentials(parent).tracking_uri  # type: ignore[union-attr]
    if redacted_uri(uri) != uri:
        with contextlib.suppress(OSError):
            (Path(folder) / "tuner.pkl").chmod(0o600)
