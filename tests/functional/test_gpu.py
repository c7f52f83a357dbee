"""Checks on a real NVIDIA GPU (marked `gpu`; skipped where NVML cannot start)."""

from __future__ import annotations

import json

import pytest

from gputui.cli import main
from gputui.sources.base import SourceUnavailable
from gputui.sources.host import HostReader
from gputui.sources.nvml import NvmlSource

pytestmark = pytest.mark.gpu


@pytest.fixture
def source() -> NvmlSource:
    nvml = NvmlSource(host=HostReader())
    try:
        nvml.open()
    except SourceUnavailable as exc:
        pytest.skip(f"no real GPU here: {exc}")
    return nvml


def test_real_devices_and_readings(source: NvmlSource) -> None:
    try:
        first = source.read()
        second = source.read()
    finally:
        source.close()
    assert second.gpus and not any(s.lost for s in second.gpus)
    for sample in second.gpus:
        assert sample.util_gpu is None or 0 <= sample.util_gpu <= 100
        assert sample.mem_total and sample.mem_used is not None
        assert sample.mem_used <= sample.mem_total
        assert sample.temp_c is None or 10 <= sample.temp_c <= 110
        assert sample.sm_clock_mhz is None or 100 <= sample.sm_clock_mhz <= 4000
        assert sample.pcie_gen is None or 1 <= sample.pcie_gen <= 6
    assert second.time > first.time


def test_real_snapshot_and_doctor(capsys: pytest.CaptureFixture[str]) -> None:
    probe = NvmlSource()
    try:
        probe.open()
    except SourceUnavailable as exc:
        pytest.skip(f"no real GPU here: {exc}")
    probe.close()
    assert main(["snapshot", "--samples", "2"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["source"]["label"] == "NVML" and document["devices"]
    assert main(["doctor", "--duration", "3"]) in (0, 1, 2)
