"""dcgm-exporter pages as real exporters write them, built from public facts.

Sources of the facts (each test names the one it relies on):
- dcgm-exporter's etc/default-counters.csv (3.x, 4.x): the default field set; the energy,
  PCIe replay counters declared ``counter``; XID_ERRORS, FB_* and DCP (PROF_*) fields as
  gauges; no clock-event reasons, PCIe link generation or limits.
- dcgm-exporter's label set: gpu, UUID, pci_bus_id, device, modelName, Hostname,
  DCGM_FI_DRIVER_VERSION; MIG series add GPU_I_PROFILE and GPU_I_ID (NVIDIA/dcgm-exporter
  issues #369, #544); the Kubernetes pod mapping adds pod, namespace, container.
- DCGM's dcgm_structs.h DCGM_BLANK_VALUES: DCGM_INT32_BLANK 0x7ffffff0, DCGM_INT64_BLANK
  0x7ffffffffffffff0, DCGM_FP64_BLANK 2**47, each followed by NOT_FOUND, NOT_SUPPORTED,
  NOT_PERMISSIONED (+1..+3).
- DCGM 3.3 renamed DCGM_FI_DEV_CLOCK_THROTTLE_REASONS to DCGM_FI_DEV_CLOCKS_EVENT_REASONS.
- dcgm-exporter 1.x (gpu-monitoring-tools) used a lowercase dcgm_* namespace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

MODEL = "NVIDIA H100 80GB HBM3"


def labels(host: str, gpu: int, model: str = MODEL, **extra: str) -> dict[str, str]:
    out = {
        "gpu": str(gpu),
        "UUID": f"GPU-0b1c8d6e-aaaa-bbbb-cccc-00000000000{gpu}",
        "pci_bus_id": f"00000000:{0x18 + gpu:02X}:00.0",
        "device": f"nvidia{gpu}",
        "modelName": model,
        "Hostname": host,
        "DCGM_FI_DRIVER_VERSION": "550.54.15",
    }
    out.update(extra)
    return out


def family(
    name: str,
    kind: str,
    help_text: str,
    series: Iterable[tuple[Mapping[str, str], float | int]],
) -> str:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
    for lab, value in series:
        body = ",".join(f'{k}="{v}"' for k, v in lab.items())
        lines.append(f"{name}{{{body}}} {value}")
    return "\n".join(lines) + "\n"


def default_page(
    host: str = "node-a",
    gpus: int = 2,
    values: Mapping[str, float | int] | None = None,
    drop: tuple[str, ...] = (),
) -> str:
    """dcgm-exporter 3.3 / 4.x with its default counters CSV, on H100s."""
    v: dict[str, float | int] = {
        "DCGM_FI_DEV_SM_CLOCK": 1980,
        "DCGM_FI_DEV_MEM_CLOCK": 2619,
        "DCGM_FI_DEV_MEMORY_TEMP": 45,
        "DCGM_FI_DEV_GPU_TEMP": 52,
        "DCGM_FI_DEV_POWER_USAGE": 412.5,
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 4_400_000_000,  # int64 mJ above 2**31
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 3,
        "DCGM_FI_DEV_GPU_UTIL": 97,
        "DCGM_FI_DEV_MEM_COPY_UTIL": 40,
        "DCGM_FI_DEV_XID_ERRORS": 0,
        "DCGM_FI_DEV_FB_FREE": 1000,
        "DCGM_FI_DEV_FB_USED": 79000,
        "DCGM_FI_DEV_FB_RESERVED": 559,
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.95,
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.41,
        "DCGM_FI_PROF_PCIE_TX_BYTES": 3_000_000_000,  # int64 bytes/s above 2**31
        "DCGM_FI_PROF_PCIE_RX_BYTES": 2_147_483_648,
    }
    v.update(values or {})
    for name in drop:
        del v[name]
    counters = {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"}
    return "".join(
        family(
            name,
            "counter" if name in counters else "gauge",
            f"{name} help.",
            [(labels(host, g), value) for g in range(gpus)],
        )
        for name, value in v.items()
    )
