"""``RunRef``: one MLflow run as plain data, free of mlflow, so it crosses process boundaries as itself.

Ray pickles it into Train workers and Tune trials; each process builds its own client from it
(``raycomp.tracking.store.make_client``), so no process-global active run is ever used.
"""

from __future__ import annotations

import dataclasses
import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# Query parameters whose values are secrets (a token in a server's URI); matched case-insensitively.
_SECRET_QUERY = re.compile(r"token|secret|password|passwd|key|auth|signature|credential", re.IGNORECASE)
HIDDEN = "***"


@dataclasses.dataclass(frozen=True)
class RunRef:
    """Where one MLflow run lives: the store's URI, its experiment and its id."""

    tracking_uri: str
    experiment_id: str
    run_id: str


def redacted_uri(uri: str) -> str:
    """``uri`` as it may be printed, logged as a param or written to an artifact: a password in its
    userinfo and secret-looking query values replaced by ``***`` (``http://alice:***@host``).

    The real URI stays in ``RunRef`` and the config, where the clients need it; only what is shown changes.
    """
    parts = urlsplit(uri)
    if not parts.netloc and not parts.query:
        return uri
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{HIDDEN}@{host}" if ":" in userinfo else f"{HIDDEN}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, HIDDEN if _SECRET_QUERY.search(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
