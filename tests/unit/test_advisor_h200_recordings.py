"""The advisor over real recordings of an NVIDIA H200 (driver 580.159.04, a Firecracker VM
without NUMA information): five training-shaped loads from benchmarks/real_workloads.py,
30 s each, recorded by ``gputui record`` while ``gputui doctor`` judged them live. The
verdicts below are the ones doctor gave on the machine; replayed, the rules must give them
again."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.advisor import judgement_of, make_monitor, point_in_time_findings
from gputui.core.config import Config
from gputui.core.judgement import Undecided
from gputui.core.model import Finding, SourceInfo
from gputui.core.names import SourceKind
from gputui.exporters.doctor import exit_status
from gputui.formats.recording import read_recording
from gputui.sampling.monitor import Monitor

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "h200"


def replayed(name: str) -> Monitor:
    recording = read_recording(FIXTURES / f"{name}.jsonl.gz")
    monitor = make_monitor(
        recording.header.devices, Config(), SourceInfo("REPLAY", SourceKind.REPLAY)
    )
    for tick in recording.ticks:
        monitor.ingest(tick.frame)
    return monitor


def verdict(name: str) -> tuple[int, tuple[Finding, ...]]:
    monitor = replayed(name)
    findings = point_in_time_findings(monitor)
    return exit_status(findings, judgement_of(monitor)), findings


def test_an_idle_h200_holding_memory_for_30_s_is_watched_not_all_clear() -> None:
    """Doctor exited 0 here on the machine: an abandoned allocation needs 5 minutes of
    idling to be called, and 30 s of it is no all-clear (issue 46): watching, exit 4."""
    monitor = replayed("idle")
    findings = point_in_time_findings(monitor)
    judgement = judgement_of(monitor)
    assert exit_status(findings, judgement) == 4 and not findings
    assert [i.rule for i in judgement.watching] == ["idle-allocated"]
    assert not judgement.not_judged and not judgement.gathering


@pytest.mark.parametrize("name", ["heavy", "fed"])
def test_healthy_h200_loads_exit_0_without_numa_or_topology(name: str) -> None:
    monitor = replayed(name)
    findings = point_in_time_findings(monitor)
    judgement = judgement_of(monitor)
    assert exit_status(findings, judgement) == 0, [f.title for f in findings]
    assert judgement.complete and not judgement.not_judged
    # the VM gives no NUMA node: the NUMA rule does not apply, calmly
    assert all(i.kind is not Undecided.UNREADABLE for i in judgement.undecided)


def test_h200_at_its_700_w_default_limit_is_info_with_the_figures() -> None:
    _status, findings = verdict("heavy")
    (cap,) = findings
    assert cap.rule == "power-cap" and cap.severity == "info"
    assert any("of the 700 W enforced limit" in e for e in cap.evidence)
    assert any("SM clock 14" in e and "/ 1980 MHz max" in e for e in cap.evidence)


def test_h200_starved_by_four_saturated_workers_names_the_workers() -> None:
    status, findings = verdict("starved-workers")
    assert status == 1
    (f,) = findings
    assert f.rule == "input-starved" and "data-loader workers cannot keep up" in f.title
    assert any("4 data-loader workers at 100 % of a core each" in e for e in f.evidence)
    assert any("0 of them idle" in e for e in f.evidence)  # never idle, yet starved
    assert f.remedies[0].startswith("Raise DataLoader num_workers (now 4)")


def test_h200_starved_by_a_main_process_without_workers_names_num_workers_0() -> None:
    status, findings = verdict("starved-main")
    assert status == 1
    (f,) = findings
    assert f.rule == "input-starved" and "loads every batch itself" in f.title
    assert any("no data-loader workers (num_workers=0)" in e for e in f.evidence)
    assert f.remedies[0].startswith("Load in worker processes")


def test_a_healthy_8_gpu_node_without_topology_or_numa_exits_0(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """What doctor does, over the fake driver of an 8-GPU node in a VM: NVML answers
    NotSupported for the NUMA node and the PCIe paths, and the kernel says -1."""
    from gputui.core.manual_clock import ManualClock
    from gputui.core.model import HostSample
    from gputui.sources.host import HostReader
    from gputui.sources.nvml import NvmlSource
    from tests.advisor_kit import HOST
    from tests.nvml_double import NOT_SUPPORTED, FakeGpu, FakeProcess, driver, install

    vm = {"nvmlDeviceGetTopologyCommonAncestor": NOT_SUPPORTED}
    gpus = [
        FakeGpu(
            bus_id=f"00000000:{0x18 + i:02X}:00.0",
            errors=dict(vm),
            processes=[FakeProcess(4242 + i, 40000 * 1024**2)],
        )
        for i in range(8)
    ]
    for gpu in gpus:
        node = tmp_path / "bus" / "pci" / "devices" / gpu.bus_id.lower()[-12:]
        node.mkdir(parents=True)
        (node / "numa_node").write_text("-1\n")

    class QuietHost(HostReader):
        """This machine's processes, a host reading that does not depend on how fast the
        test runs (a CPU share needs time between two reads)."""

        def read_host(self, cpu: bool = True) -> HostSample:
            return HOST

    install(monkeypatch, driver(580, gpus))
    clock, mono = ManualClock(1_700_000_000.0), ManualClock(1000.0)
    source = NvmlSource(host=QuietHost(), clock=clock, monotonic=mono, sysfs=tmp_path)
    devices = source.open()
    assert all({"numa_node", "pcie_topology"} <= set(d.unsupported) for d in devices)
    monitor = make_monitor(devices, Config(), SourceInfo("NVML", SourceKind.LIVE))
    try:
        for _ in range(31):  # doctor's 30 s: 31 readings a second apart
            monitor.ingest(source.read())
            clock.advance(1.0)
            mono.advance(1.0)
    finally:
        source.close()
    findings = point_in_time_findings(monitor)
    judgement = judgement_of(monitor)
    assert exit_status(findings, judgement) == 0, (findings, judgement.not_judged)
