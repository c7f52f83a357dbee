"""One bounded HTTP GET, for every page and API answer gputui reads from another machine.

The whole request (connect, headers, body) within a deadline, the body at most MAX_BYTES
once decompressed (gzip is asked for and accepted: a cluster's answer shrinks twentyfold
on the wire), redirects followed only within the same scheme, host and port, and an error
answer's own words kept (bounded) for the caller to show.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
import urllib.parse
import zlib

from gputui.core.records import frozen

# What one answer may cost, whatever the other side sends (docs/security.md):
MAX_BYTES = 10 * 1024 * 1024  # the body, once decompressed (and on the wire)
#: of an error answer's body, what is kept to show (Prometheus says why in it)
MAX_ERROR_BYTES = 64 * 1024
#: redirects followed (within the same scheme, host and port) before the answer is due
MAX_REDIRECTS = 2


class ScrapeError(Exception):
    pass


class TooLarge(ScrapeError):
    """An answer past the byte cap: asked for less (fewer nodes), it may fit."""


class HttpError(ScrapeError):
    """A status other than 200, with the start of the answer's body (an API's reason)."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body


def _cut(holder: list[socket.socket]) -> None:
    """The deadline passed: unblock whatever the fetching thread waits for. The socket is
    held from the moment it connected: an HTTP/1.0 answer takes it off the connection."""
    for sock in holder:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def fetch(url: str, timeout: float, headers: dict[str, str] | None = None) -> str:
    """The page at ``url``, or ScrapeError. ``timeout`` bounds the whole request (connect,
    headers, body: a server that drips a byte a second is cut there), the body is at most
    MAX_BYTES once decompressed (gzip is asked for: a cluster's answer shrinks twentyfold),
    and a redirect is followed only within the same scheme, host and port."""
    deadline = time.monotonic() + timeout
    for _hop in range(MAX_REDIRECTS + 1):
        parts = urllib.parse.urlsplit(url)
        try:
            port = parts.port
        except ValueError as exc:
            raise ScrapeError(f"not a port number in {url}") from exc
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ScrapeError(f"not an http(s) URL: {url}")
        if deadline - time.monotonic() <= 0:
            raise ScrapeError(f"no complete answer within {timeout:g} s")
        got = _get(url, parts, port, deadline, timeout, headers or {})
        if isinstance(got, str):
            return got
        url = got.target
    # not a timeout: the server sent a redirect where an answer was due (a loop, say)
    raise ScrapeError(f"redirected more than {MAX_REDIRECTS} times (a loop?): not followed")


@frozen
class _Redirect:
    target: str


def _get(
    url: str,
    parts: urllib.parse.SplitResult,
    port: int | None,
    deadline: float,
    timeout: float,
    headers: dict[str, str],
) -> str | _Redirect:
    """One GET within the deadline: the text, or where a same-host redirect points."""
    left = deadline - time.monotonic()
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname or "", port, timeout=left)
    held: list[socket.socket] = []
    watchdog = threading.Timer(left, _cut, (held,))
    watchdog.daemon = True
    watchdog.start()
    try:
        connection.connect()
        if connection.sock is not None:
            held.append(connection.sock)
        if time.monotonic() >= deadline:  # the watchdog may have fired before it was held
            raise OSError("deadline passed while connecting")
        path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
        connection.request(
            "GET", path, headers={"Accept": "text/plain", "Accept-Encoding": "gzip", **headers}
        )
        response = connection.getresponse()
        if response.status in (301, 302, 303, 307, 308):
            target = urllib.parse.urljoin(url, response.getheader("Location") or "")
            there = urllib.parse.urlsplit(target)
            if (there.scheme, there.hostname, there.port) != (
                parts.scheme,
                parts.hostname,
                parts.port,
            ):
                raise ScrapeError(f"redirected to another host or port ({target}): not followed")
            return _Redirect(target)
        if response.status != 200:
            raise HttpError(response.status, _error_body(response))
        body = _body(response)
        if time.monotonic() >= deadline:  # cut by the watchdog: what came is not all
            raise OSError("deadline passed while reading")
    except ScrapeError:
        raise
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if time.monotonic() >= deadline - 0.01:
            raise ScrapeError(f"no complete answer within {timeout:g} s") from exc
        # Never the text of a ValueError: http.client quotes the offending header in it,
        # and a header can hold a credential.
        reason = type(exc).__name__ if isinstance(exc, ValueError) else exc
        reason = getattr(exc, "reason", None) or reason
        raise ScrapeError(f"unreachable ({reason})") from exc
    finally:
        watchdog.cancel()
        connection.close()
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScrapeError("answer is not text") from exc


def _error_body(response: http.client.HTTPResponse) -> str:
    """The start of an error answer, as text: what the server says was wrong, at most
    MAX_ERROR_BYTES read and (gzip) decompressed."""
    encoding = (response.getheader("Content-Encoding") or "identity").strip().lower()
    try:
        head = response.read(MAX_ERROR_BYTES)
        if encoding == "gzip":
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, MAX_ERROR_BYTES)
        elif encoding != "identity":
            return ""
    except (OSError, http.client.HTTPException, zlib.error):
        return ""
    return head.decode("utf-8", "replace")


def _body(response: http.client.HTTPResponse) -> bytes:
    """The answer's bytes, decompressed as it arrives and cut at MAX_BYTES: what is capped
    is what the parser would hold, not what crossed the wire (a small gzip bomb is refused
    as soon as it grows past the cap)."""
    encoding = (response.getheader("Content-Encoding") or "identity").strip().lower()
    if encoding not in ("identity", "gzip"):
        raise ScrapeError(f"a {encoding}-compressed answer, not asked for: refused")
    declared = response.getheader("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BYTES:
        raise TooLarge("answer larger than 10 MB")
    gunzip = zlib.decompressobj(16 + zlib.MAX_WBITS) if encoding == "gzip" else None
    body = bytearray()
    wire = 0
    while chunk := response.read(65536):
        wire += len(chunk)
        if wire > MAX_BYTES:
            raise TooLarge("answer larger than 10 MB")
        if gunzip is not None:
            chunk = gunzip.decompress(chunk, MAX_BYTES + 1 - len(body))
            if gunzip.unconsumed_tail:
                raise TooLarge("answer larger than 10 MB once decompressed")
        body += chunk
        if len(body) > MAX_BYTES:
            raise TooLarge(
                "answer larger than 10 MB once decompressed"
                if gunzip
                else "answer larger than 10 MB"
            )
    if gunzip is not None:
        body += gunzip.flush(MAX_BYTES + 1 - len(body))
        if len(body) > MAX_BYTES:
            raise TooLarge("answer larger than 10 MB once decompressed")
    return bytes(body)
