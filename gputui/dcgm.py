"""DCGM's field names as Prometheus metrics, once for the whole project.

dcgm-exporter names each metric after its DCGM field (``DCGM_FI_DEV_GPU_TEMP``) in DCGM's
own units (MiB, mJ, ratios 0-1). ``gputui export`` writes these names and ``--source`` reads
them back, both from this table; the ``gputui_*`` fields are the limits dcgm-exporter does
not export, which gputui adds so that a remote gputui can judge as a local one does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

MIB: Final = 1024**2


@dataclass(frozen=True, slots=True)
class DcgmField:
    name: str
    #: the model field it carries: a GpuSample field ("sample") or a DeviceInfo one ("device")
    attr: str
    on: Literal["sample", "device"]
    help: str
    #: model value = exposition value * scale (MiB -> bytes, mJ -> J, ratio -> %)
    scale: float = 1.0
    integer: bool = False
    #: older names of the same field, read but never written
    aliases: tuple[str, ...] = ()

    def to_model(self, value: float) -> float | int:
        scaled = value * self.scale
        return int(scaled) if self.integer else scaled

    def to_exposition(self, value: float | int) -> float:
        return float(value) / self.scale


FIELDS: Final[tuple[DcgmField, ...]] = (
    DcgmField("DCGM_FI_DEV_GPU_UTIL", "util_gpu", "sample", "GPU utilization (in %)."),
    DcgmField("DCGM_FI_DEV_MEM_COPY_UTIL", "util_mem", "sample", "Memory utilization (in %)."),
    DcgmField(
        "DCGM_FI_DEV_SM_CLOCK",
        "sm_clock_mhz",
        "sample",
        "SM clock frequency (in MHz).",
        integer=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_MEM_CLOCK",
        "mem_clock_mhz",
        "sample",
        "Memory clock frequency (in MHz).",
        integer=True,
    ),
    DcgmField("DCGM_FI_DEV_GPU_TEMP", "temp_c", "sample", "GPU temperature (in C)."),
    DcgmField("DCGM_FI_DEV_MEMORY_TEMP", "mem_temp_c", "sample", "Memory temperature (in C)."),
    DcgmField("DCGM_FI_DEV_FAN_SPEED", "fan_pct", "sample", "Fan speed (in %)."),
    DcgmField("DCGM_FI_DEV_POWER_USAGE", "power_w", "sample", "Power draw (in W)."),
    DcgmField(
        "DCGM_FI_DEV_POWER_MGMT_LIMIT", "power_limit_w", "sample", "Enforced power limit (in W)."
    ),
    DcgmField(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "energy_j",
        "sample",
        "Total energy consumption since boot (in mJ).",
        scale=1e-3,
    ),
    DcgmField(
        "DCGM_FI_DEV_FB_USED",
        "mem_used",
        "sample",
        "Framebuffer memory used (in MiB).",
        scale=MIB,
        integer=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_FB_FREE",
        "mem_free",
        "sample",
        "Framebuffer memory free (in MiB).",
        scale=MIB,
        integer=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        "clock_reasons",
        "sample",
        "Current clock event reasons (bitmask).",
        integer=True,
        aliases=("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",),  # its name before DCGM 3.3
    ),
    DcgmField(
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "pcie_replay_count",
        "sample",
        "Total number of PCIe retries.",
        integer=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_PCIE_LINK_GEN",
        "pcie_gen",
        "sample",
        "PCIe current link generation.",
        integer=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_PCIE_LINK_WIDTH",
        "pcie_width",
        "sample",
        "PCIe current link width.",
        integer=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "ecc_volatile_corrected",
        "sample",
        "Total number of single-bit volatile ECC errors.",
        integer=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "ecc_volatile_uncorrected",
        "sample",
        "Total number of double-bit volatile ECC errors.",
        integer=True,
    ),
    DcgmField(
        "DCGM_FI_PROF_SM_ACTIVE",
        "sm_activity",
        "sample",
        "The ratio of cycles an SM has at least 1 warp assigned.",
        scale=100.0,
    ),
    DcgmField(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "tensor_activity",
        "sample",
        "Ratio of cycles the tensor (HMMA) pipe is active.",
        scale=100.0,
    ),
    DcgmField(
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "pcie_tx_bps",
        "sample",
        "The rate of data transmitted over the PCIe bus, in bytes per second.",
    ),
    DcgmField(
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "pcie_rx_bps",
        "sample",
        "The rate of data received over the PCIe bus, in bytes per second.",
    ),
    # The limits the advisor compares against: DCGM has fields for them, which
    # dcgm-exporter's default counters leave out; gputui exports its own names.
    DcgmField(
        "gputui_temp_slowdown_celsius",
        "temp_slowdown_c",
        "device",
        "Temperature at which the GPU slows down.",
        aliases=("DCGM_FI_DEV_SLOWDOWN_TEMP",),
    ),
    DcgmField(
        "gputui_temp_shutdown_celsius",
        "temp_shutdown_c",
        "device",
        "Temperature at which the GPU shuts down.",
        aliases=("DCGM_FI_DEV_SHUTDOWN_TEMP",),
    ),
    DcgmField(
        "gputui_power_default_limit_watts",
        "power_default_limit_w",
        "device",
        "The card's default power limit.",
        aliases=("DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF",),
    ),
    DcgmField(
        "gputui_sm_clock_max_mhz",
        "max_sm_clock_mhz",
        "device",
        "Maximum SM clock.",
        integer=True,
        aliases=("DCGM_FI_DEV_MAX_SM_CLOCK",),
    ),
    DcgmField(
        "gputui_mem_clock_max_mhz",
        "max_mem_clock_mhz",
        "device",
        "Maximum memory clock.",
        integer=True,
        aliases=("DCGM_FI_DEV_MAX_MEM_CLOCK",),
    ),
    DcgmField(
        "gputui_pcie_max_gen",
        "pcie_max_gen",
        "device",
        "Maximum PCIe generation of GPU and slot.",
        integer=True,
        aliases=("DCGM_FI_DEV_PCIE_MAX_LINK_GEN",),
    ),
    DcgmField(
        "gputui_pcie_max_width",
        "pcie_max_width",
        "device",
        "Maximum PCIe link width.",
        integer=True,
        aliases=("DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH",),
    ),
)

#: every name a reader accepts (current names and aliases) -> its field
BY_NAME: Final[dict[str, DcgmField]] = {name: f for f in FIELDS for name in (f.name, *f.aliases)}
