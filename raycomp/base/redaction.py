"""One redaction for every message raycomp prints or writes: no password from a URI reaches a screen or a file.

A tracking URI may carry credentials (``http://alice:pw@host``, ``?token=...``). raycomp shows every URI
through ``redacted_uri``, passes every message it prints or writes (errors, warnings, the lock file, the
resume hint) through ``redacted``, and hands MLflow a URI without its userinfo (``without_credentials``),
the credentials going by MLflow's own environment variables, so MLflow's exception texts, which quote the
URI, and Ray's worker logs, which hold what trials print, never carry them.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

HIDDEN = "***"
# Query parameters whose values are secrets (a token in a server's URI); matched case-insensitively.
_SECRET_QUERY = re.compile(r"token|secret|password|passwd|key|auth|signature|credential", re.IGNORECASE)
_URI_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")


def redacted_uri(uri: str) -> str:
    """``uri`` as it may be printed, logged as a param or written to an artifact: a password in its
    userinfo and secret-looking query values replaced by ``***`` (``http://alice:***@host``).

    The real URI stays in ``RunRef`` and the config, where the clients need it; only what is shown changes.
    """
    try:
        parts = urlsplit(uri)
    except ValueError:  # not a URI after all (an unbalanced "[" in a host): hide everything before the host
        return re.sub(r"://[^@/\s]*@", f"://{HIDDEN}@", uri)
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


def redacted(text: str) -> str:
    """``text`` with every URI in it shown by ``redacted_uri``: for messages that may quote one."""
    if "://" not in text:
        return text
    return _URI_IN_TEXT.sub(lambda match: redacted_uri(match.group(0)), text)


def without_credentials(uri: str) -> tuple[str, str | None, str | None]:
    """``uri`` without the userinfo of its host, and the user name and password that were in it (or None)."""
    parts = urlsplit(uri)
    if "@" not in parts.netloc:
        return uri, None, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    bare = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return bare, unquote(user) or None, unquote(password) if password else None
