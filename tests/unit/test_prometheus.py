"""The Prometheus exporter: dcgm-exporter's names, parseable, never a fake value."""

from __future__ import annotations

from dataclasses import replace

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from gputui.core.model import GpuSample
from gputui.exporters.prometheus import GputuiCollector
from gputui.sampling.monitor import Monitor
from tests.factories import demo_monitor


def scrape(monitor: Monitor) -> dict[str, list[tuple[dict[str, str], float]]]:
    registry = CollectorRegistry()
    registry.register(GputuiCollector(monitor, hostname="node-7"))
    text = generate_latest(registry).decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def test_dcgm_names_labels_and_units() -> None:
    monitor = demo_monitor()
    metrics = scrape(monitor)
    for name in (
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_PROF_SM_ACTIVE",
    ):
        assert name in metrics, name
    labels, temp = metrics["DCGM_FI_DEV_GPU_TEMP"][1]
    assert labels == {
        "gpu": "1",
        "UUID": monitor.devices[1].uuid,
        "pci_bus_id": monitor.devices[1].pci_bus_id,
        "device": "nvidia1",
        "modelName": "NVIDIA H100 80GB HBM3",
        "Hostname": "node-7",
        "DCGM_FI_DRIVER_VERSION": "550.54.15",
    }
    assert temp == monitor.latest.gpus[1].temp_c  # type: ignore[union-attr]
    fb = dict((lab["gpu"], v) for lab, v in metrics["DCGM_FI_DEV_FB_USED"])
    assert fb["0"] == monitor.latest.gpus[0].mem_used / 1024**2  # type: ignore[union-attr, operator]
    reasons = dict((lab["gpu"], v) for lab, v in metrics["DCGM_FI_DEV_CLOCKS_EVENT_REASONS"])
    assert int(reasons["1"]) & 0x60  # the thermal GPU


def test_findings_are_exported() -> None:
    metrics = scrape(demo_monitor())
    found = {(lab["rule"], lab["gpu"], lab["severity"]) for lab, _ in metrics["gputui_finding"]}
    assert ("thermal-throttle", "1", "critical") in found
    assert ("vram-pressure", "2", "critical") in found


def test_unsupported_readings_are_absent_not_zero() -> None:
    monitor = demo_monitor(seconds=10)
    frame = monitor.latest
    assert frame is not None
    gpus = (GpuSample(index=0, temp_c=None), *frame.gpus[1:])
    monitor.history.latest = replace(frame, gpus=gpus)
    metrics = scrape(monitor)
    assert "0" not in {lab["gpu"] for lab, _ in metrics["DCGM_FI_DEV_GPU_TEMP"]}
    assert "DCGM_FI_DEV_FAN_SPEED" not in metrics  # data-centre cards have no fan reading
