"""Fixtures shared by every test folder: the one app factory, and the fake driver's absence."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gputui.launch import make_demo_app
from gputui.ui.app import GpuTuiApp
from tests.nvml_double import install

# The screen shows the host's clock and recorded moments in local time: one zone for all.
os.environ["TZ"] = "UTC"
time.tzset()

#: ``demo_app(scenario=None, gpus=4, **options)``: the demo app on a fixed clock, exactly as
#: the CLI and the screenshots build it; its snapshots go to the test's own directory.
DemoApp = Callable[..., GpuTuiApp]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tier is marked by where it lives: everything outside tests/unit starts an
    app, a process, a server or a pty (``pytest -m "not slow"`` is the unit tier)."""
    for item in items:
        if "unit" not in item.path.parent.parts[-1:]:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def demo_app(tmp_path: Path) -> DemoApp:
    def make(scenario: str | None = None, gpus: int = 4, **options: Any) -> GpuTuiApp:
        options.setdefault("snapshot_dir", tmp_path)
        options.setdefault("ascii", False)  # the same glyphs whatever the locale here
        return make_demo_app(scenario, gpus, **options)

    return make


@pytest.fixture
def no_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine without NVIDIA's driver: loading libnvidia-ml fails."""
    install(monkeypatch, None)
