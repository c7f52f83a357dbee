"""Topology readings of the NVML source over the fake driver: NUMA node, CPU affinity, the
PCIe path between GPUs, NVLinks and their counters, the NVSwitch fabric state."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.core.manual_clock import ManualClock
from gputui.sources.nvml import NvmlSource
from gputui.sources.nvml.bindings import function
from gputui.sources.nvml.device import cpu_list
from gputui.sources.nvml.sample import NVLINK_PERIOD_S
from tests.nvml_double import (
    GPU_IS_LOST,
    NO_PERMISSION,
    NOT_SUPPORTED,
    FakeGpu,
    FakeNvmlLib,
    driver,
    hgx,
    install,
)

HAS_NUMA_WRAPPER = function("nvmlDeviceGetNumaNodeId") is not None


def _source(
    monkeypatch: pytest.MonkeyPatch, lib: FakeNvmlLib, sysfs: Path | None = None
) -> tuple[NvmlSource, ManualClock]:
    install(monkeypatch, lib)
    mono = ManualClock(1000.0)
    source = NvmlSource(
        host=None,
        clock=ManualClock(1_700_000_000.0),
        monotonic=mono,
        sysfs=sysfs or Path("/nonexistent"),
    )
    return source, mono


def test_cpu_list_in_linux_format() -> None:
    assert cpu_list([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert cpu_list([]) == ""


@pytest.mark.skipif(not HAS_NUMA_WRAPPER, reason="bindings without nvmlDeviceGetNumaNodeId")
def test_hgx_topology_read_at_open(monkeypatch: pytest.MonkeyPatch) -> None:
    source, _ = _source(monkeypatch, driver(570, hgx()))
    devices = source.open()
    assert [d.numa_node for d in devices] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert devices[0].cpu_affinity == "0-55" and devices[7].cpu_affinity == "56-111"
    assert devices[0].pcie_topology == ("X", "PIX", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS")
    assert devices[5].pcie_topology == ("SYS", "SYS", "SYS", "SYS", "PIX", "X", "NODE", "NODE")
    assert devices[0].nvlink_remote is not None and len(devices[0].nvlink_remote) == 18
    assert devices[0].nvlink_remote[0] == "00000000:05:00.0"
    assert devices[0].nvlink_version == 4
    source.close()


def test_numa_node_from_sysfs_when_nvml_has_none(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gpus = hgx(2)
    for gpu in gpus:
        gpu.numa_node = None  # nvmlDeviceGetNumaNodeId: not supported
    for bus, node in (("0000:18:00.0", "1"), ("0000:2a:00.0", "-1")):
        folder = tmp_path / "bus" / "pci" / "devices" / bus
        folder.mkdir(parents=True)
        (folder / "numa_node").write_text(node + "\n")
    source, _ = _source(monkeypatch, driver(570, gpus), sysfs=tmp_path)
    devices = source.open()
    assert devices[0].numa_node == 1
    assert devices[1].numa_node is None  # -1: the kernel knows no node
    source.close()


def test_no_nvlink_and_no_fabric_on_a_pcie_card(monkeypatch: pytest.MonkeyPatch) -> None:
    source, _ = _source(monkeypatch, driver(570, [FakeGpu(), FakeGpu(bus_id="00000000:2A:00.0")]))
    devices = source.open()
    assert devices[0].nvlink_remote == () and devices[0].numa_node is None
    assert devices[0].cpu_affinity is None
    sample = source.read().gpus[0]
    assert sample.nvlinks == () and sample.nvlink_errors is None
    assert sample.fabric_state is None
    source.close()


def test_nvlink_not_readable_is_unknown_not_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = hgx(2)
    gpus[0].errors["nvmlDeviceGetNvLinkState"] = NO_PERMISSION
    source, _ = _source(monkeypatch, driver(570, gpus))
    devices = source.open()
    assert devices[0].nvlink_remote is None
    assert devices[1].nvlink_remote is not None and len(devices[1].nvlink_remote) == 18
    source.close()


def test_nvlink_counters_rates_and_states(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = hgx(2, links=4)
    source, mono = _source(monkeypatch, driver(570, gpus))
    source.open()
    first = source.read().gpus[0]
    assert [n.active for n in first.nvlinks] == [True] * 4
    assert first.nvlinks[0].rx_bps is None  # one reading: no rate yet
    assert first.nvlink_errors == 0
    link = gpus[0].nvlinks[1]
    link.rx_kib += 10_000_000  # 10 GB in 10 s
    link.crc += 7
    link.replay += 2
    gpus[0].nvlinks[3].active = False
    mono.advance(NVLINK_PERIOD_S)
    later = source.read().gpus[0]
    assert later.nvlinks[1].rx_bps == pytest.approx(10_000_000 * 1024 / NVLINK_PERIOD_S)
    assert later.nvlinks[0].rx_bps == 0.0
    assert later.nvlinks[1].crc_errors == 7 and later.nvlinks[1].replay_errors == 2
    assert later.nvlink_errors == 9
    assert later.nvlinks[3].active is False
    source.close()


def test_nvlink_counters_on_a_slow_cadence(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = driver(570, hgx(2))
    source, mono = _source(monkeypatch, lib)
    source.open()
    before = lib.calls.get("nvmlDeviceGetFieldValues", 0)
    for _ in range(10):
        source.read()
        mono.advance(1.0)
    # one per-tick batch per GPU per tick, and one NVLink batch per GPU per 10 s
    assert lib.calls["nvmlDeviceGetFieldValues"] - before == 2 * 10 + 2
    source.close()


@pytest.mark.parametrize(
    ("state", "status", "expected"),
    [
        (3, 0, "completed"),
        (1, 0, "not-started"),
        (2, 0, "in-progress"),
        (3, 24, "failed"),
        (0, 0, "none"),
    ],
)
def test_fabric_states(
    monkeypatch: pytest.MonkeyPatch, state: int, status: int, expected: str
) -> None:
    gpus = hgx(1)
    gpus[0].fabric_state, gpus[0].fabric_status = state, status
    source, _ = _source(monkeypatch, driver(570, gpus))
    source.open()
    assert source.read().gpus[0].fabric_state == expected
    source.close()


def test_fabric_from_the_first_call_where_the_versioned_one_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpus = hgx(1)
    gpus[0].fabric_state = 1
    lib = driver(535, gpus, missing={"nvmlDeviceGetGpuFabricInfoV"})
    source, _ = _source(monkeypatch, lib)
    source.open()
    assert source.read().gpus[0].fabric_state == "not-started"
    assert lib.calls.get("nvmlDeviceGetGpuFabricInfo") == 1
    source.close()


def test_topology_not_supported_leaves_it_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = hgx(2)
    for gpu in gpus:
        gpu.errors["nvmlDeviceGetTopologyCommonAncestor"] = NOT_SUPPORTED
    source, _ = _source(monkeypatch, driver(570, gpus))
    devices = source.open()
    assert devices[0].pcie_topology is None
    source.close()


def test_lost_during_topology_keeps_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = hgx(3)
    gpus[1].errors["nvmlDeviceGetNvLinkState"] = GPU_IS_LOST
    source, _ = _source(monkeypatch, driver(570, gpus))
    devices = source.open()
    frame = source.read()
    assert frame.gpus[1].lost and not frame.gpus[0].lost and not frame.gpus[2].lost
    assert devices[2].numa_node == 1 or not HAS_NUMA_WRAPPER
    source.close()
