"""One redaction for every message raycomp prints or writes: no password from a URI reaches a screen or a file.

A tracking URI may carry credentials (``http://alice:pw@host``, ``?token=...``). raycomp shows every URI
through ``redacted_uri``, passes every message it prints or writes (errors, warnings, the lock file, the
resume hint) through ``redacted``, and hands MLflow a URI without its userinfo (``without_credentials``),
the credentials going by MLflow's own environment variables, and without an HTTP URI's secret query values
(``without_secret_query``), so MLflow's exception texts, which quote the URI or the request (urllib3:
``url: /?token=...``), and Ray's worker logs, which hold what trials print, never carry them.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

HIDDEN = "***"
# Query parameters whose values are secrets (a token in a server's URI); matched case-insensitively.
_SECRET_WORDS = r"token|secret|password|passwd|key|auth|signature|credential"
_SECRET_QUERY = re.compile(_SECRET_WORDS, re.IGNORECASE)
# A URI in a message ends before white space or a quote, and before the punctuation that closes a phrase
# around it ("(see http://host/x?a=1);"): ``)``, ``;``, ``,`` or ``.`` followed by the end of the word.
_URI_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+?(?=[),;.]*(?:[\s'\"<>`]|$))")
# A secret query pair (after ``?`` or ``&``) wherever it stands: urllib3 quotes a request's path and query
# alone ("url: /?token=..."), which is no URI to ``_URI_IN_TEXT``. Its value runs to the next ``&`` or the
# word's end. A bare ``name=value`` (a ``--set`` in a printed command) is not a query and is left as it is.
_SECRET_PAIR = re.compile(
    rf"([?&][\w.-]*(?:{_SECRET_WORDS})[\w.-]*=)[^&\s'\"<>`]+?(?=[),;.]*(?:[&\s'\"<>`]|$))", re.IGNORECASE
)


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
    # Each pair as the user wrote it (``endpoint_override=127.0.0.1:9000`` stays unquoted), a secret's value hidden.
    query = "&".join(
        f"{pair.partition('=')[0]}={HIDDEN}" if _SECRET_QUERY.search(unquote(pair.partition("=")[0])) else pair
        for pair in parts.query.split("&")
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redacted(text: str) -> str:
    """``text`` with every URI in it shown by ``redacted_uri``, and the value of every secret-looking query
    pair (``?token=``, ``&password=``, ``&api_key=``, ...) hidden wherever it stands: for messages that may
    quote a URI, or a piece of one."""
    if "://" in text:
        text = _URI_IN_TEXT.sub(lambda match: redacted_uri(match.group(0)), text)
    if "=" in text:
        text = _SECRET_PAIR.sub(lambda match: f"{match.group(1)}{HIDDEN}", text)
    return text


def without_credentials(uri: str) -> tuple[str, str | None, str | None]:
    """``uri`` without the userinfo of its host, and the user name and password that were in it (or None)."""
    parts = urlsplit(uri)
    if "@" not in parts.netloc:
        return uri, None, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    bare = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return bare, unquote(user) or None, unquote(password) if password else None


def without_secret_query(uri: str) -> str:
    """An HTTP(S) ``uri`` without its secret-looking query pairs (``?token=...``); any other URI as it is.

    MLflow appends its API paths to the whole tracking URI (``http://host/?token=T/api/2.0/mlflow/...``), so
    a query never reaches an HTTP server as one: it only reaches MLflow's error texts, which quote the request
    (a token goes by ``MLFLOW_TRACKING_TOKEN``). A database URI keeps its query, which its driver reads.
    """
    parts = urlsplit(uri)
    if parts.scheme.lower() not in ("http", "https") or not parts.query:
        return uri
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _SECRET_QUERY.search(k)]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(kept), parts.fragment))
