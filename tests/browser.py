"""Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
JSON messages ending in a NUL byte, the browser reads fd 3 and writes fd 4), from the
standard library alone.

``open_page`` loads a file with the network switched off (offline emulation on top of a
browser started without background networking), and returns what the page did: every
request it made, every console error and uncaught exception, what a script evaluated in
it said, and a PNG screenshot.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
)


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class PageResult:
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    screenshot: bytes = b""


class _Pipe:
    def __init__(self, binary: str, profile: str, width: int, height: int) -> None:
        import fcntl

        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # Out of the way of 3 and 4 first, so that placing one cannot overwrite the other;
        # the copies close on exec, the browser keeps only its 3 and 4.
        high_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD_CLOEXEC, 10)
        high_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_browser_r)
        os.close(from_browser_w)

        def place() -> None:  # in the child, before exec
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        try:
            self.process = subprocess.Popen(
                [binary, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"],
                close_fds=False,
                preexec_fn=place,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        finally:
            os.close(high_r)
            os.close(high_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._read(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return event

    def _read(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the browser did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise RuntimeError("the browser closed its pipe")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return dict(json.loads(raw))

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.send("Browser.close", timeout=5)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to_browser, self._from_browser):
            os.close(fd)


def open_page(
    path: Path, checks: dict[str, str], width: int = 1300, height: int = 2000, settle_s: float = 1.0
) -> PageResult:
    """Load ``path`` offline, evaluate each of ``checks`` (name -> JavaScript expression),
    and take a screenshot of ``width`` x ``height``."""
    binary = chromium()
    if binary is None:
        raise FileNotFoundError("no chromium")
    result = PageResult()
    with tempfile.TemporaryDirectory(prefix="gputui-chromium-") as profile:
        pipe = _Pipe(binary, profile, width, height)
        try:
            target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
                "sessionId"
            ]
            for domain in ("Network", "Runtime", "Log", "Page"):
                pipe.send(f"{domain}.enable", session=session)
            pipe.send(
                "Network.emulateNetworkConditions",
                {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
                session=session,
            )
            pipe.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
            pipe.events.clear()
            pipe.send("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
            pipe.wait_for("Page.loadEventFired", timeout=30)
            time.sleep(settle_s)
            for name, expression in checks.items():
                answer = pipe.send(
                    "Runtime.evaluate",
                    {"expression": expression, "returnByValue": True},
                    session=session,
                )
                result.values[name] = answer.get("result", {}).get("value")
            shot = pipe.send("Page.captureScreenshot", {"format": "png"}, session=session)
            result.screenshot = base64.b64decode(shot["data"])
            _events(pipe.events, path, result)
        finally:
            pipe.close()
    return result


def _events(events: list[dict[str, Any]], path: Path, result: PageResult) -> None:
    page = path.resolve().as_uri()
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Network.requestWillBeSent":
            url = params.get("request", {}).get("url", "")
            if url != page:
                result.requests.append(url)
        elif method == "Runtime.exceptionThrown":
            result.errors.append(json.dumps(params.get("exceptionDetails", {}))[:500])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            result.errors.append(json.dumps(params.get("args", []))[:500])
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            result.errors.append(str(params["entry"].get("text", ""))[:500])
