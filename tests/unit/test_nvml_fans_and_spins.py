"""Fans through the NVML source, over the fake driver: the speed the driver asks for and the
tachometer come through nvidia-ml-py as a real driver gives them."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gputui.advisor import make_advisor
from gputui.core.manual_clock import ManualClock
from gputui.core.model import DeviceInfo, Finding, Frame
from gputui.sampling.history import History
from gputui.sources.nvml import NvmlSource
from tests.nvml_double import FakeGpu, FakeNvmlLib, install


class Run:
    """A source over the fake driver, its frames judged by the advisor each second."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, lib: FakeNvmlLib) -> None:
        install(monkeypatch, lib)
        self.lib = lib
        self.mono = ManualClock(1000.0)
        self.wall = ManualClock(1_700_000_000.0)
        self.source = NvmlSource(host=None, clock=self.wall, monotonic=self.mono)
        self.devices: Sequence[DeviceInfo] = self.source.open()
        self.history = History(4000)
        self.advisor = make_advisor(self.devices)
        self.frames: list[Frame] = []

    def seconds(self, n: int, each: object = None) -> tuple[Finding, ...]:
        for i in range(n):
            if callable(each):
                each(i)
            frame = self.source.read()
            self.source.wait_windows()
            self.frames.append(frame)
            self.history.add(frame)
            self.advisor.update(self.history)
            self.mono.advance(1.0)
            self.wall.advance(1.0)
        return self.advisor.findings

    def close(self) -> None:
        self.source.close()


def test_a_passive_board_has_no_fan_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = FakeNvmlLib([FakeGpu(temperature=84)])  # an H100: no fan, the chassis cools it
    run = Run(monkeypatch, lib)
    run.seconds(40)
    sample = run.frames[-1].gpus[0]
    assert sample.fan_pct is None and sample.fan_rpm is None
    assert {"fan_pct", "fan_rpm"} <= set(sample.unsupported)
    assert "nvmlDeviceGetFanSpeedRPM" not in lib.calls  # no fan, no tachometer to ask
    run.close()


def test_a_driver_without_the_rpm_call_still_gives_the_asked_speed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lib = FakeNvmlLib([FakeGpu(fan=40, fan_rpm=1500)], missing={"nvmlDeviceGetFanSpeedRPM"})
    run = Run(monkeypatch, lib)
    run.seconds(25)
    sample = run.frames[-1].gpus[0]
    assert sample.fan_pct == 40.0 and sample.fan_rpm is None
    assert "fan_rpm" in sample.unsupported and "fan_pct" not in sample.unsupported
    run.close()


def test_the_rpm_call_is_made_with_its_versioned_struct(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lib = FakeNvmlLib([FakeGpu(fan=40, fan_rpm=1500)])
    run = Run(monkeypatch, lib)
    run.seconds(25)
    assert run.frames[-1].gpus[0].fan_rpm == 1500.0
    # the double answers a wrong version with ARGUMENT_VERSION_MISMATCH, as drivers do
    assert lib.calls["nvmlDeviceGetFanSpeedRPM"] <= 3  # with the slow readings, every 10 s
    run.close()
