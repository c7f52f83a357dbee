"""Debian's Alertmanager (`prometheus-alertmanager`) on 127.0.0.1 for the engine's tests,
sending every alert to a webhook receiver the test holds.

Alertmanager facts relied on: a webhook receiver gets a POST of JSON whose ``alerts`` list
holds each alert's ``status``, ``labels`` and ``annotations``; ``group_wait`` is how long a
new group waits before its first notification; ``--cluster.listen-address=`` (empty) turns
the gossip cluster off (it would take port 9094 otherwise).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.servers import free_port

BINARY = "prometheus-alertmanager"


class Webhook:
    """An HTTP receiver that keeps every alert Alertmanager sends, with when it came."""

    def __init__(self) -> None:
        self.alerts: list[tuple[float, dict[str, Any]]] = []
        self._lock = threading.Lock()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with hook._lock:
                    hook.alerts += [(time.monotonic(), a) for a in body.get("alerts", [])]
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/"

    def received(self) -> list[tuple[float, dict[str, Any]]]:
        with self._lock:
            return list(self.alerts)

    def shutdown(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_alertmanager(work: Path, webhook: str) -> tuple[str, subprocess.Popen[bytes]]:
    """Alertmanager routing every alert, one group an alert and GPU, to ``webhook`` after a
    second's group_wait: its HOST:PORT and its process."""
    binary = shutil.which(BINARY)
    if binary is None:
        raise FileNotFoundError(BINARY)
    config = work / "alertmanager.yml"
    config.write_text(
        json.dumps(
            {
                "route": {
                    "receiver": "hook",
                    "group_by": ["alertname", "gputui_node", "gpu"],
                    "group_wait": "1s",
                    "group_interval": "5s",
                    "repeat_interval": "1h",
                },
                "receivers": [
                    {"name": "hook", "webhook_configs": [{"url": webhook, "send_resolved": False}]}
                ],
            }
        )
    )
    port = free_port()
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.path={work / 'alertmanager'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return f"127.0.0.1:{port}", process
