"""A training run's GPUs for the integration tests: the NVML test double with one GPU that
throttles (heat) through part of the run, a clock that runs faster than the wall's so the
advisor's real windows and holds pass in seconds, and the readers of what a logger wrote
(CSV, TensorBoard event files). A framework a test needs is skipped when absent, except in
CI (CI=true), where .ci/run installs it and its absence is a failure."""

from __future__ import annotations

import csv
import importlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.nvml_double import FakeGpu, FakeNvmlLib, hgx, install

#: frame-time seconds that pass in one real second: the advisor's 30 s window in 1.5 s
SPEED = 20.0
#: the real seconds between two readings (one second of frame time)
SAMPLE_EVERY_S = 1.0 / SPEED
SM_CLOCK = 1  # nvml.h's NVML_CLOCK_SM, the fake GPU's clocks key
THERMAL_REASONS = 0x20 | 0x40  # SW and HW thermal slowdown


def need(module: str) -> ModuleType:
    """``module`` imported, or the test skipped (failed in CI, which installs it)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must have {module} (.ci/run installs it): {exc}")
        pytest.skip(f"{module} is not installed (pip install 'gputui[lightning,transformers]')")


@dataclass
class Throttle:
    """Two GPUs; GPU ``hot`` throttles (90 °C, thermal reasons, its SM clock down) for the
    steps from ``first`` to ``last``, and each step takes ``slow_s`` then, ``fast_s``
    otherwise, as a data-parallel job's steps do while one GPU holds everyone back."""

    first: int
    last: int
    hot: int = 1
    fast_s: float = 0.010
    slow_s: float = 0.016
    gpus: list[FakeGpu] = field(default_factory=lambda: hgx(2))
    steps: int = 0
    start: float = field(default_factory=time.time)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        install(monkeypatch, FakeNvmlLib(self.gpus))

    def clock(self) -> float:
        return self.start + (time.time() - self.start) * SPEED

    def step(self) -> None:
        """One training step's work, the GPU's state as the step count says."""
        gpu = self.gpus[self.hot]
        hot = self.first <= self.steps < self.last
        gpu.reasons = THERMAL_REASONS if hot else 0
        gpu.temperature = 90 if hot else 71
        gpu.margin = -1 if hot else 18
        gpu.clocks[SM_CLOCK] = 1200 if hot else 1755
        self.steps += 1
        time.sleep(self.slow_s if hot else self.fast_s)

    @property
    def options(self) -> dict[str, Any]:
        """A callback's options for this clock."""
        return {"clock": self.clock, "sample_every_s": SAMPLE_EVERY_S, "history_s": 600.0}


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def event_scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in the TensorBoard event files under ``folder``: tag -> (step, value)."""
    out: dict[str, list[tuple[int, float]]] = {}
    for run in _runs(folder):
        for tag in run.Tags()["scalars"]:
            out.setdefault(tag, []).extend((e.step, e.value) for e in run.Scalars(tag))
    return out


def event_texts(folder: Path) -> dict[str, list[str]]:
    """Every text summary in the TensorBoard event files under ``folder``: tag -> texts."""
    out: dict[str, list[str]] = {}
    for run in _runs(folder):
        for tag in run.Tags()["tensors"]:
            texts = out.setdefault(tag.removesuffix("/text_summary"), [])
            for event in run.Tensors(tag):
                texts.extend(v.decode() for v in event.tensor_proto.string_val)
    return out


def _runs(folder: Path) -> list[Any]:
    """Each event file's run under ``folder``, read (a logger may write several)."""
    events = need("tensorboard.backend.event_processing.event_multiplexer")
    multiplexer = events.EventMultiplexer(size_guidance={"scalars": 0, "tensors": 0})
    multiplexer.AddRunsFromDirectory(str(folder))
    multiplexer.Reload()
    runs = [multiplexer.GetAccumulator(name) for name in multiplexer.Runs()]
    assert runs, f"no TensorBoard event files under {folder}"
    return runs
