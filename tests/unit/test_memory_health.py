"""The memory's health as the driver keeps it, read through the real nvidia-ml-py code over
the fake driver and judged with DCGM health's meaning: state the board carries from before
gputui started counts, not only what changes while it watches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from gputui.advisor import make_monitor, point_in_time_findings
from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import Finding, GpuSample, SourceInfo
from gputui.core.names import SourceKind
from gputui.sources.nvml import NvmlSource
from tests.advisor_kit import BUSY, Sim
from tests.nvml_double import FakeGpu, FakeNvmlLib, install


def judged(monkeypatch: pytest.MonkeyPatch, gpu: FakeGpu, seconds: int = 12) -> list[Finding]:
    """``seconds`` of readings of one fake GPU, through NVML, into the full advisor."""
    install(monkeypatch, FakeNvmlLib([gpu]))
    clock, mono = ManualClock(1_700_000_000.0), ManualClock(1000.0)
    source = NvmlSource(host=None, clock=clock, monotonic=mono)
    devices = source.open()
    monitor = make_monitor(devices, Config(), SourceInfo("NVML", SourceKind.LIVE))
    try:
        for _ in range(seconds):
            monitor.ingest(source.read())
            clock.advance(1.0)
            mono.advance(1.0)
    finally:
        source.close()
    return [f for f in point_in_time_findings(monitor) if f.rule == "memory-health"]


def test_a_remap_failure_read_through_the_driver_is_critical(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (f,) = judged(monkeypatch, FakeGpu(remapped_failure=1, remapped_uncorrected=512))
    assert f.severity == "critical"
    assert any("a row remap failed" in e for e in f.evidence)
    assert any("rows remapped so far: 512 for uncorrectable" in e for e in f.evidence)
    assert any("RMA" in r for r in f.remedies)


def test_a_pending_remap_is_a_warning_to_reset_when_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    (f,) = judged(monkeypatch, FakeGpu(remapped_pending=1, remapped_corrected=3))
    assert f.severity == "warning"
    assert any("row remap is pending" in e for e in f.evidence)
    assert f.remedies[0].startswith("Reset the GPU when it is idle (sudo nvidia-smi -r -i 0)")


def test_uncorrectable_errors_since_the_driver_loaded_are_critical_though_unchanged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the counter stands at 2 from the first reading: state, not a change seen while watching
    (f,) = judged(monkeypatch, FakeGpu(ecc_dbe=2, ecc_dbe_aggregate=2))
    assert f.severity == "critical"
    assert any("2 uncorrectable ECC error(s) since the driver loaded" in e for e in f.evidence)


def test_uncorrectable_errors_earlier_in_the_boards_life_repaired_since_are_no_finding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rows were remapped and nothing is pending: the board repaired itself, and the
    lifetime counter never goes down (DCGM's memory health fails on volatile errors, warns
    on a pending repair, and says nothing of this)."""
    assert judged(monkeypatch, FakeGpu(ecc_dbe_aggregate=3, remapped_uncorrected=3)) == []
    # a repair still waiting for a reset: the warning, with the board's history beside it
    (f,) = judged(
        monkeypatch, FakeGpu(ecc_dbe_aggregate=3, remapped_uncorrected=3, remapped_pending=1)
    )
    assert f.severity == "warning"
    assert any("3 uncorrectable ECC error(s) over the board's life" in e for e in f.evidence)


def test_rows_remapped_successfully_are_no_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    assert judged(monkeypatch, FakeGpu(remapped_corrected=12, remapped_uncorrected=0)) == []


def test_a_board_before_ampere_with_a_retirement_pending_warns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    volta = FakeGpu(name="Tesla V100-SXM2-32GB", retired_sbe=2, retired_dbe=1, retired_pending=1)
    (f,) = judged(monkeypatch, volta)
    assert f.severity == "warning"
    assert any("page retirement is pending" in e for e in f.evidence)
    assert any("3 memory page(s) retired so far" in e for e in f.evidence)


def test_retired_pages_at_dcgms_limit_fail_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    (f,) = judged(monkeypatch, FakeGpu(retired_sbe=4, retired_dbe=60, retired_pending=0))
    assert f.severity == "critical"
    assert any("64 memory pages retired, at DCGM's limit of 64" in e for e in f.evidence)


def test_hopper_without_page_retirement_says_so_rather_than_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    install(monkeypatch, FakeNvmlLib([FakeGpu()]))  # retirement fields: NOT_SUPPORTED
    source = NvmlSource(host=None)
    source.open()
    try:
        sample = source.read().gpus[0]
    finally:
        source.close()
    assert sample.retired_pages_pending is None and sample.remapped_rows_failure is False
    assert {"retired_pages_sbe", "retired_pages_dbe", "retired_pages_pending"} <= set(
        sample.unsupported
    )
    assert "remapped_rows_failure" not in sample.unsupported


def _corrected(rate_per_s: int) -> Callable[[int], GpuSample]:
    return lambda i: replace(BUSY, ecc_volatile_corrected=1000 + rate_per_s * i)


def test_a_corrected_ecc_storm_warns_and_a_trickle_does_not() -> None:
    storm = Sim()
    storm.run(40, _corrected(40))  # 2,400 a minute
    (f,) = [f for f in storm.findings if f.rule == "memory-health"]
    assert f.severity == "warning"
    assert any("a minute): the memory is wearing" in e for e in f.evidence)
    trickle = Sim()
    trickle.run(40, _corrected(1))
    assert "memory-health" not in trickle.rules()
