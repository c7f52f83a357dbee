"""`gputui export` as a scraper meets it: a real process serving real HTTP on loopback."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def test_export_command_serves_on_loopback() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gputui",
            "export",
            "--demo",
            "--gpus",
            "2",
            "--listen",
            "127.0.0.1:0",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"http://(127\.0\.0\.1:\d+)/metrics", line)
        assert match, line
        url = f"http://{match.group(1)}/metrics"
        body = ""
        for _ in range(50):
            body = urllib.request.urlopen(url, timeout=5).read().decode()
            if "DCGM_FI_DEV_GPU_TEMP{" in body:
                break
            time.sleep(0.1)
        families = {f.name for f in text_string_to_metric_families(body)}
        assert {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_SM_CLOCK", "gputui_finding"} <= families
    finally:
        proc.terminate()
        proc.wait(timeout=10)
