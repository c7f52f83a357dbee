"""Small HTTP servers on 127.0.0.1 for the remote-source and exporter tests."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

FIXTURE = (Path(__file__).parent / "fixtures" / "dcgm_exporter.txt").read_text()


def dcgm_payload(host: str, lowercase: bool = False) -> bytes:
    text = FIXTURE.replace("{HOST}", host)
    if lowercase:  # the GPU operator on Kubernetes labels it so, with pod labels beside
        text = text.replace('Hostname="', 'container="train",namespace="ml",hostname="')
    return text.encode()


def serve(handler: Callable[[BaseHTTPRequestHandler], None]) -> tuple[str, ThreadingHTTPServer]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            handler(self)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    # A short poll: shutdown() waits for it, once per server per test.
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}/metrics", server


def answer(body: bytes) -> Callable[[BaseHTTPRequestHandler], None]:
    def handle(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "text/plain; version=0.0.4")
        request.end_headers()
        request.wfile.write(body)

    return handle


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def needed_binary(name: str) -> str:
    """The path of a Debian program a test needs, or the test skips (in CI, where .ci/run
    installs it, fails)."""
    binary = shutil.which(name)
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must have the {name} binary (.ci/run installs Debian's)")
        pytest.skip(f"no {name} binary (apt-get install {name}); CI runs this test")
    return binary


def prometheus_binary() -> str:
    """Debian's prometheus, or the test skips (CI, where .ci/run installs it, fails)."""
    return needed_binary("prometheus")


def start_prometheus(
    binary: str, work: Path, job: str, targets: Sequence[str]
) -> tuple[str, subprocess.Popen[bytes]]:
    """A Prometheus scraping ``targets`` every second under ``job``: its URL and process."""
    config = work / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"scrape_configs:\n  - job_name: {job}\n    static_configs:\n"
        f"      - targets: {json.dumps(list(targets))}\n"
    )
    port = free_port()
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={work / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return f"http://127.0.0.1:{port}", process
