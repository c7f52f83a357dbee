"""Prometheus exposition of the readings and findings, under dcgm-exporter's names.

Existing Grafana dashboards built for dcgm-exporter work unchanged: the metric names,
units and labels (gpu, UUID, pci_bus_id, device, modelName, Hostname) are dcgm-exporter's
where one exists. What dcgm-exporter lacks is exported as ``gputui_*``, the advisor's
findings among it. A scrape reads the monitor's latest state; it never calls NVML.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gputui.model import DeviceInfo, GpuSample
from gputui.monitor import Monitor

MIB = 1024**2
LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION")


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    help: str
    value: Callable[[GpuSample, DeviceInfo], float | int | None]


def _ratio(value: float | None) -> float | None:
    return None if value is None else value / 100.0


FIELDS: tuple[Field, ...] = (
    Field("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", lambda s, d: s.util_gpu),
    Field("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", lambda s, d: s.util_mem),
    Field("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", lambda s, d: s.sm_clock_mhz),
    Field(
        "DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", lambda s, d: s.mem_clock_mhz
    ),
    Field("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", lambda s, d: s.temp_c),
    Field("DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C).", lambda s, d: s.mem_temp_c),
    Field("DCGM_FI_DEV_FAN_SPEED", "Fan speed (in %).", lambda s, d: s.fan_pct),
    Field("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", lambda s, d: s.power_w),
    Field(
        "DCGM_FI_DEV_POWER_MGMT_LIMIT",
        "Enforced power limit (in W).",
        lambda s, d: s.power_limit_w,
    ),
    Field(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "Total energy consumption since boot (in mJ).",
        lambda s, d: None if s.energy_j is None else s.energy_j * 1000.0,
    ),
    Field(
        "DCGM_FI_DEV_FB_USED",
        "Framebuffer memory used (in MiB).",
        lambda s, d: None if s.mem_used is None else s.mem_used / MIB,
    ),
    Field(
        "DCGM_FI_DEV_FB_FREE",
        "Framebuffer memory free (in MiB).",
        lambda s, d: None if s.mem_free is None else s.mem_free / MIB,
    ),
    Field(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        "Current clock event reasons (bitmask).",
        lambda s, d: s.clock_reasons,
    ),
    Field(
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "Total number of PCIe retries.",
        lambda s, d: s.pcie_replay_count,
    ),
    Field("DCGM_FI_DEV_PCIE_LINK_GEN", "PCIe current link generation.", lambda s, d: s.pcie_gen),
    Field("DCGM_FI_DEV_PCIE_LINK_WIDTH", "PCIe current link width.", lambda s, d: s.pcie_width),
    Field(
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "Total number of single-bit volatile ECC errors.",
        lambda s, d: s.ecc_volatile_corrected,
    ),
    Field(
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "Total number of double-bit volatile ECC errors.",
        lambda s, d: s.ecc_volatile_uncorrected,
    ),
    Field(
        "DCGM_FI_PROF_SM_ACTIVE",
        "The ratio of cycles an SM has at least 1 warp assigned.",
        lambda s, d: _ratio(s.sm_activity),
    ),
    Field(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "Ratio of cycles the tensor (HMMA) pipe is active.",
        lambda s, d: _ratio(s.tensor_activity),
    ),
    Field(
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "The rate of data transmitted over the PCIe bus, in bytes per second.",
        lambda s, d: s.pcie_tx_bps,
    ),
    Field(
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "The rate of data received over the PCIe bus, in bytes per second.",
        lambda s, d: s.pcie_rx_bps,
    ),
    # What dcgm-exporter does not export: the limits the advisor compares against.
    Field(
        "gputui_temp_slowdown_celsius",
        "Temperature at which the GPU slows down.",
        lambda s, d: d.temp_slowdown_c,
    ),
    Field(
        "gputui_temp_shutdown_celsius",
        "Temperature at which the GPU shuts down.",
        lambda s, d: d.temp_shutdown_c,
    ),
    Field(
        "gputui_power_default_limit_watts",
        "The card's default power limit.",
        lambda s, d: d.power_default_limit_w,
    ),
    Field("gputui_sm_clock_max_mhz", "Maximum SM clock.", lambda s, d: d.max_sm_clock_mhz),
    Field(
        "gputui_pcie_max_gen",
        "Maximum PCIe generation of GPU and slot.",
        lambda s, d: d.pcie_max_gen,
    ),
    Field("gputui_pcie_max_width", "Maximum PCIe link width.", lambda s, d: d.pcie_max_width),
)


class GputuiCollector(Collector):
    """Builds the exposition from the monitor's latest frame and findings at scrape time."""

    def __init__(self, monitor: Monitor, hostname: str | None = None) -> None:
        self._monitor = monitor
        self._hostname = hostname or socket.gethostname()

    def _labels(self, device: DeviceInfo) -> list[str]:
        return [
            str(device.index),
            device.uuid or "",
            device.pci_bus_id or "",
            f"nvidia{device.index}",
            device.name,
            self._hostname,
            device.driver_version or "",
        ]

    def collect(self) -> Iterator[Metric]:
        monitor = self._monitor
        frame = monitor.latest  # one immutable frame: a consistent scrape
        findings = monitor.findings
        devices = monitor.devices
        samples = {s.index: s for s in frame.gpus} if frame is not None else {}
        lost = GaugeMetricFamily(
            "gputui_gpu_lost", "1 when the GPU fell off the bus.", labels=LABELS
        )
        for field in FIELDS:
            # All gauges, counters too: prometheus-client would rename a counter to
            # NAME_total, and dashboards query dcgm-exporter's exact names.
            family = GaugeMetricFamily(field.name, field.help, labels=LABELS)
            for device in devices:
                sample = samples.get(device.index)
                if sample is None or sample.lost:
                    continue
                value = field.value(sample, device)
                if value is not None:  # unsupported: no sample, never a fake 0
                    family.add_metric(self._labels(device), float(value))
            yield family
        for device in devices:
            sample = samples.get(device.index)
            lost.add_metric(
                self._labels(device), 1.0 if sample is not None and sample.lost else 0.0
            )
        yield lost
        finding = GaugeMetricFamily(
            "gputui_finding",
            "An active finding of gputui's advisor (1), by rule, severity and GPU.",
            labels=("rule", "severity", "gpu", "Hostname"),
        )
        for f in findings:
            finding.add_metric(
                [f.rule, f.severity, "" if f.gpu is None else str(f.gpu), self._hostname], 1.0
            )
        yield finding
        age = GaugeMetricFamily(
            "gputui_last_frame_timestamp_seconds",
            "Time of the newest reading (Unix seconds); stale when it stops moving.",
            labels=("Hostname",),
        )
        if frame is not None:
            age.add_metric([self._hostname], frame.time)
        yield age
