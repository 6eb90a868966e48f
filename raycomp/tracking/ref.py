"""``RunRef``: one MLflow run as plain data, free of mlflow, so it crosses process boundaries as itself.

Ray pickles it into Train workers and Tune trials; each process builds its own client from it
(``raycomp.tracking.store.make_client``), so no process-global active run is ever used.
"""

from __future__ import annotations

import dataclasses

from raycomp.base.redaction import HIDDEN, redacted_uri

__all__ = ["HIDDEN", "RunRef", "redacted_uri"]


@dataclasses.dataclass(frozen=True)
class RunRef:
    """Where one MLflow run lives: the store's URI, its experiment and its id."""

    tracking_uri: str
    experiment_id: str
    run_id: str
