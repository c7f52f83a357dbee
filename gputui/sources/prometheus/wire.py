"""Talking to a Prometheus-compatible server: its credentials, one bounded call, and its
answers decoded and checked before anything else reads them.

Credentials come from the environment, a file, or the URL's ``user:password@`` (sent as
basic auth, never shown: every text that names the server shows the URL masked). The
token file is read only if it is a regular file, at most ``MAX_TOKEN_BYTES``, and never
waited on (a FIFO is refused, not read). An answer is JSON of at most ``MAX_SERIES``
series whose label values are non-blank strings; a point is a finite time inside the
window asked for and a number; an error answer is shown with its ``errorType`` and
``error``.
"""

from __future__ import annotations

import base64
import json
import math
import os
import stat
import threading
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

from gputui.core.records import frozen
from gputui.core.sanitize import MASK, clean
from gputui.core.source import SourceUnavailable
from gputui.sources.fetching import HttpError, ScrapeError, TooLarge

TOKEN_ENV = "GPUTUI_PROMETHEUS_TOKEN"
TOKEN_FILE_ENV = "GPUTUI_PROMETHEUS_TOKEN_FILE"
USER_ENV = "GPUTUI_PROMETHEUS_USER"
PASSWORD_ENV = "GPUTUI_PROMETHEUS_PASSWORD"
MAX_TOKEN_BYTES = 16 * 1024  # a Kubernetes service-account token is about 1 KB
MAX_SERIES = 200_000  # series in one answer
MAX_LABELS = 64  # labels on one series (dcgm-exporter writes about 12)

Fetcher = Callable[[str, float, dict[str, str]], str]


@frozen
class Server:
    """Where the server is (``base``: the URL without credentials), how it is shown
    (``shown``: credentials masked) and what every request carries."""

    base: str
    shown: str
    headers: Mapping[str, str]


def server_of(url: str, env: Mapping[str, str] | None = None) -> Server:
    """The server a ``--prometheus`` URL names, with its credentials: the URL's own
    ``user:password@`` (basic auth) or the environment's, not both."""
    raw = url.strip() if "://" in url else f"http://{url.strip()}"
    parts = urllib.parse.urlsplit(raw)
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError as exc:
        raise SourceUnavailable(f"the --prometheus URL has no valid port: {mask_url(raw)}") from exc
    if parts.scheme not in ("http", "https") or not host:
        raise SourceUnavailable(f"the --prometheus URL is not http(s)://host: {mask_url(raw)}")
    netloc = f"[{host}]" if ":" in host else host
    netloc += f":{port}" if port is not None else ""
    base = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    env = dict(os.environ) if env is None else env
    headers = auth_headers(env)
    if parts.username is not None or parts.password is not None:
        if headers:
            raise SourceUnavailable(
                "credentials are both in the --prometheus URL and in "
                f"{TOKEN_ENV}/{TOKEN_FILE_ENV}/{USER_ENV}: give them one way"
            )
        user = urllib.parse.unquote(parts.username or "")
        password = urllib.parse.unquote(parts.password or "")
        pair = f"{user}:{password}".encode()
        headers = {"Authorization": "Basic " + base64.b64encode(pair).decode()}
    shown = mask_url(raw).rstrip("/")
    return Server(base=base, shown=shown, headers=headers)


def mask_url(url: str) -> str:
    """``url`` with any ``user:password@`` shown as ``***@`` (the user too: in a URL it is
    as often a token), cleaned for the screen."""
    head, sep, rest = url.partition("://")
    if not sep:
        return clean(url)
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = MASK + "@" + authority.rpartition("@")[2]
    return clean(head + sep + authority + slash + path)


def auth_headers(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Credentials from the environment or a file, never the command line (``ps`` shows it)."""
    env = dict(os.environ) if env is None else env
    token = (env.get(TOKEN_ENV) or "").strip()  # a secret from a file or k8s: a newline
    if not token and env.get(TOKEN_FILE_ENV):
        token = read_token_file(env[TOKEN_FILE_ENV])
    if token:
        return {"Authorization": f"Bearer {token}"}
    if env.get(USER_ENV):
        pair = f"{env[USER_ENV]}:{env.get(PASSWORD_ENV, '')}".encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode()}
    return {}


def read_token_file(path: str) -> str:
    """The token in ``path``: a regular file (a Kubernetes secret's symbolic link to one is
    fine) of at most MAX_TOKEN_BYTES. /dev/zero, a FIFO or a directory is refused before a
    byte is read; opened without waiting, so a FIFO swapped in after the check is too."""
    where = f"the token file named by {TOKEN_FILE_ENV} ({clean(path)})"
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise SourceUnavailable(f"{where} is not a regular file")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise SourceUnavailable(f"cannot read {where}: {exc.strerror or exc}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SourceUnavailable(f"{where} is not a regular file")
        if info.st_size > MAX_TOKEN_BYTES:
            raise SourceUnavailable(f"{where} is larger than {MAX_TOKEN_BYTES // 1024} KB")
        data = os.read(fd, MAX_TOKEN_BYTES + 1)
    except OSError as exc:
        raise SourceUnavailable(f"cannot read {where}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    if len(data) > MAX_TOKEN_BYTES:
        raise SourceUnavailable(f"{where} is larger than {MAX_TOKEN_BYTES // 1024} KB")
    try:
        token = data.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise SourceUnavailable(f"{where} is not text") from exc
    if not token or any(ord(c) < 0x21 or ord(c) == 0x7F for c in token):
        raise SourceUnavailable(f"{where} holds no token (empty, or more than one line)")
    return token


# -- one call -----------------------------------------------------------------------------
def bounded(fetcher: Fetcher, url: str, timeout: float, headers: dict[str, str]) -> str:
    """``fetcher`` on a daemon thread, waited for at most ``timeout`` and a grace second:
    the fetch bounds connect, headers and body itself, but not the host name's lookup,
    which a slow resolver can hold for as long as it likes."""
    done: list[str | BaseException] = []
    worker = threading.Thread(
        target=lambda: done.append(_call(fetcher, url, timeout, headers)),
        name="gputui-prometheus",
        daemon=True,
    )
    worker.start()
    worker.join(timeout + 1.0)
    if not done:
        raise ScrapeError(f"no answer within {timeout:g} s (the host name's lookup?)")
    if isinstance(done[0], BaseException):
        raise done[0]
    return done[0]


def _call(
    fetcher: Fetcher, url: str, timeout: float, headers: dict[str, str]
) -> str | BaseException:
    try:
        return fetcher(url, timeout, headers)
    except HttpError as exc:  # the server's own words: errorType and error
        return ScrapeError(refusal(exc))
    except Exception as exc:  # raised again on the caller's thread
        return exc


def refusal(exc: HttpError) -> str:
    """'HTTP 400: the server refused the query (bad_data: parse error ...)', or the status
    alone when the answer says nothing in the API's words."""
    try:
        document = json.loads(exc.body) if exc.body else None
    except (ValueError, RecursionError):
        document = None
    if isinstance(document, dict) and document.get("status") == "error":
        return f"HTTP {exc.status}: {_refused(document)}"
    return f"HTTP {exc.status}"


def _refused(document: Mapping[str, Any]) -> str:
    kind = document.get("errorType")
    message = document.get("error")
    kind_text = clean(kind, 64) if isinstance(kind, str) and kind.strip() else "error"
    text = clean(message, 512) if isinstance(message, str) and message.strip() else "no message"
    return f"the server refused the query ({kind_text}: {text})"


# -- answers ------------------------------------------------------------------------------
def decode(text: str, kind: str) -> list[dict[str, Any]]:
    """The result list of an API answer of ``kind`` ("vector", "matrix"; "alerts": the
    active alerts /api/v1/alerts lists), or ScrapeError saying what is wrong with it (the
    server's own error with its errorType)."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ScrapeError("the answer is not JSON: not a Prometheus API") from exc
    if not isinstance(document, dict):
        raise ScrapeError("the answer is not a Prometheus API object")
    if document.get("status") != "success":
        raise ScrapeError(_refused(document))
    data = document.get("data")
    if kind == "alerts" and isinstance(data, dict):  # /api/v1/alerts: the alerts active
        data = {"result": data.get("alerts")}
    elif not isinstance(data, dict) or data.get("resultType") != kind:
        raise ScrapeError(f"the server did not answer a {kind}")
    result = data.get("result")
    if not isinstance(result, list):
        raise ScrapeError("the server's result is not a list")
    if len(result) > MAX_SERIES:
        raise TooLarge(f"more than {MAX_SERIES:,} series in one answer: refused")
    return [r for r in result if isinstance(r, dict)]


def labels_of(series: Mapping[str, Any]) -> dict[str, str] | None:
    """A series' labels, or None when they are not what the API promises: an object of
    at most MAX_LABELS names, each value a non-blank string (a null, a number, an object
    or "" is no label value; such a series is refused whole, never half-read)."""
    metric = series.get("metric")
    if not isinstance(metric, dict) or len(metric) > MAX_LABELS:
        return None
    out: dict[str, str] = {}
    for key, value in metric.items():
        if not isinstance(value, str) or not value.strip() or not key:
            return None
        out[key] = value
    return out


def point(pair: Any, start: float, end: float) -> tuple[float, float] | None:
    """A ``[time, "value"]`` pair whose time is finite and inside [start, end] (a point
    from elsewhere is no reading of this window), or None."""
    if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[1], str):
        return None
    try:
        when, value = float(pair[0]), float(pair[1])
    except (TypeError, ValueError, OverflowError):
        return None
    if not math.isfinite(when) or not start <= when <= end:
        return None
    return when, value
