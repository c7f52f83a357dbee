"""``gputui.watch`` in a plain training loop, no framework: the GPUs read on a background
thread over the NVML test double (one throttling through the middle of the run), the step
line naming the throttled GPU for the slow steps, the report at the end; without any
framework installed; without a driver."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import gputui
from gputui.api import Log
from tests.training_kit import SAMPLE_EVERY_S, Throttle

ROOT = Path(__file__).resolve().parents[2]


def test_a_plain_loop_gets_its_step_line_findings_and_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    throttle = Throttle(first=100, last=260)
    throttle.install(monkeypatch)
    logs: list[Log] = []
    report = tmp_path / "runs" / "gputui.html"
    with gputui.watch(
        "all", log_every=20, on_log=logs.append, report=report, **throttle.options
    ) as w:
        for _ in range(320):
            throttle.step()
            w.step()
    assert w.steps == 320 and len(logs) == 16
    slow = [log for log in logs if log.steps.causes]
    assert slow and all(
        c.gpu == 1 and c.rule == "thermal-throttle" for log in slow for c in log.steps.causes
    )
    assert max(c.share_pct for log in slow for c in log.steps.causes) > 80
    assert any("thermal-throttle on GPU 1" in log.text for log in logs)
    told = [f for log in logs for f in log.new_findings]
    assert [(f.rule, f.gpu) for f in told] == [("thermal-throttle", 1)]  # said once
    assert any(log.scalars.get("gputui/finding/thermal-throttle/gpu1") == 1.0 for log in logs)
    assert logs[-1].scalars["gputui/gpu1/throttled_s"] == 0.0
    assert "Thermal throttling" in report.read_text()


def test_the_plain_loop_needs_no_framework(tmp_path: Path) -> None:
    script = f"""
import sys
for name in ("torch", "lightning", "pytorch_lightning", "transformers", "tensorboard", "keras"):
    sys.modules[name] = None  # import fails, as where none is installed
import pytest, gputui
from tests.training_kit import Throttle
throttle = Throttle(first=0, last=0)
throttle.install(pytest.MonkeyPatch())
with gputui.watch(log_every=10, on_log=lambda log: print(log.text.splitlines()[0]),
                  report={str(tmp_path / "r.html")!r}, **throttle.options) as w:
    for _ in range(30):
        throttle.step()
        w.step()
print("reads", w.steps, w.unavailable)
"""
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    assert out.count("steps: 10 at ") == 3 and "reads 30 None" in out
    assert (tmp_path / "r.html").exists()


def test_without_a_driver_the_steps_are_still_timed(no_driver: None, tmp_path: Path) -> None:
    logs: list[Log] = []
    with gputui.watch(
        log_every=5, on_log=logs.append, report=tmp_path / "r.html", sample_every_s=SAMPLE_EVERY_S
    ) as w:
        for _ in range(10):
            w.step()
    assert w.unavailable is not None and "No NVIDIA driver" in w.unavailable
    assert "gputui watches no GPU" in logs[0].text and "gputui watches" not in logs[1].text
    assert logs[1].steps.steps == 5 and not (tmp_path / "r.html").exists()
