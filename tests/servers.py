"""Small HTTP servers on 127.0.0.1 for the remote-source and exporter tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

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
