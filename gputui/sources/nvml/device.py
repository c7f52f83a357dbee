"""What a GPU is, read once when it is opened: its static facts, what it answers (field
ids, process functions, GPM), and where it sits (NUMA node, CPUs, PCIe paths, NVLinks)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pynvml

from gputui.core.model import DeviceInfo
from gputui.sources.nvml import bindings as b
from gputui.sources.nvml.policy import Gpu, GpuLost, Query
from gputui.sources.nvml.processes import ENTRY_R535, ENTRY_V1, ENTRY_V2, PROCESS_KINDS
from gputui.sources.nvml.sample import alloc_gpm, field_values, memory_info, mig_layout

_ACOUSTIC_CURR = b.constant("NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_CURR", 5)  # the target


def device_info(q: Query, gpu: Gpu, driver: Any, cuda: Any) -> DeviceInfo:
    h = gpu.handle
    name = q.ask(gpu, "name", pynvml.nvmlDeviceGetName, h)
    uuid = q.ask(gpu, "uuid", pynvml.nvmlDeviceGetUUID, h)
    pci = q.ask(gpu, "pci", pynvml.nvmlDeviceGetPciInfo, h)
    arch = q.ask(gpu, "arch", pynvml.nvmlDeviceGetArchitecture, h)
    cc = q.ask(gpu, "cc", pynvml.nvmlDeviceGetCudaComputeCapability, h)
    memory = memory_info(q, gpu, h, "memory")
    constraints = q.ask(gpu, "constraints", pynvml.nvmlDeviceGetPowerManagementLimitConstraints, h)
    mig = q.ask(gpu, "mig_mode", pynvml.nvmlDeviceGetMigMode, h)
    ecc = q.ask(gpu, "ecc_mode", pynvml.nvmlDeviceGetEccMode, h)
    persistence = q.ask(gpu, "persistence", pynvml.nvmlDeviceGetPersistenceMode, h)
    compute_mode = q.ask(gpu, "compute_mode", pynvml.nvmlDeviceGetComputeMode, h)
    gpm = q.ask(gpu, "gpm_support", b.function("nvmlGpmQueryDeviceSupport"), h)
    gpu.gpm = bool(gpm is not None and gpm.isSupportedDevice)
    gpu.mig = bool(mig is not None and mig[0])
    gpu.memory_total = int(memory.total) if memory is not None else None
    gpu.max_link = _max_link(q, gpu)

    return DeviceInfo(
        index=gpu.index,
        name=b.text(name) if name is not None else f"GPU {gpu.index}",
        uuid=b.text(uuid) if uuid is not None else None,
        pci_bus_id=b.text(pci.busId) if pci is not None else None,
        architecture=b.ARCHITECTURES.get(arch) if arch is not None else None,
        compute_capability=f"{cc[0]}.{cc[1]}" if cc is not None else None,
        memory_total=gpu.memory_total,
        max_sm_clock_mhz=_clock(q, gpu, pynvml.NVML_CLOCK_SM),
        max_mem_clock_mhz=_clock(q, gpu, pynvml.NVML_CLOCK_MEM),
        max_graphics_clock_mhz=_clock(q, gpu, pynvml.NVML_CLOCK_GRAPHICS),
        default_app_sm_clock_mhz=_default_app(q, gpu, pynvml.NVML_CLOCK_SM),
        default_app_mem_clock_mhz=_default_app(q, gpu, pynvml.NVML_CLOCK_MEM),
        temp_slowdown_c=_threshold(q, gpu, pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
        temp_shutdown_c=_threshold(q, gpu, pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN),
        temp_gpu_max_c=_threshold(q, gpu, pynvml.NVML_TEMPERATURE_THRESHOLD_GPU_MAX),
        temp_mem_max_c=_threshold(q, gpu, pynvml.NVML_TEMPERATURE_THRESHOLD_MEM_MAX),
        temp_target_c=_threshold(q, gpu, _ACOUSTIC_CURR),
        power_limit_w=_watts(q, gpu, "limit", pynvml.nvmlDeviceGetEnforcedPowerLimit),
        power_default_limit_w=_watts(
            q, gpu, "default_limit", pynvml.nvmlDeviceGetPowerManagementDefaultLimit
        ),
        power_min_limit_w=constraints[0] / 1000.0 if constraints else None,
        power_max_limit_w=constraints[1] / 1000.0 if constraints else None,
        pcie_max_gen=gpu.max_link[0],
        pcie_max_width=gpu.max_link[1],
        pcie_gpu_max_gen=b.clean(
            q.ask(gpu, "gpu_max_gen", b.function("nvmlDeviceGetGpuMaxPcieLinkGeneration"), h)
        ),
        persistence_mode=bool(persistence) if persistence is not None else None,
        compute_mode=b.COMPUTE_MODES.get(compute_mode) if compute_mode is not None else None,
        mig_mode=gpu.mig if mig is not None else None,
        ecc_enabled=bool(ecc[0]) if ecc is not None else None,
        driver_version=b.text(driver) if driver is not None else None,
        cuda_driver_version=b.cuda_version(cuda),
        gpm_supported=gpu.gpm,
        ecc_pending=bool(ecc[1]) if ecc is not None else None,
        mig_pending=bool(mig[1]) if mig is not None else None,
        minor_number=b.clean(q.ask(gpu, "minor", pynvml.nvmlDeviceGetMinorNumber, h)),
        p0_max_graphics_mhz=_p0_ceiling(q, gpu),
    )


def _p0_ceiling(q: Query, gpu: Gpu) -> int | None:
    """The highest graphics clock P0 allows now: below the board's maximum while its clocks
    are locked (nvidia-smi -lgc)."""
    found = q.ask(gpu, "p0_clock", b.pstate_clock_range, gpu.handle, pynvml.NVML_CLOCK_GRAPHICS, 0)
    return b.clean(found[1]) if found is not None and found[1] else None


def _clock(q: Query, gpu: Gpu, kind: int) -> int | None:
    fn = pynvml.nvmlDeviceGetMaxClockInfo
    return b.clean(q.ask(gpu, f"max_clock{kind}", fn, gpu.handle, kind))


def _default_app(q: Query, gpu: Gpu, kind: int) -> int | None:
    fn = pynvml.nvmlDeviceGetDefaultApplicationsClock
    return b.clean(q.ask(gpu, f"default_app{kind}", fn, gpu.handle, kind))


def _threshold(q: Query, gpu: Gpu, kind: int) -> float | None:
    fn = pynvml.nvmlDeviceGetTemperatureThreshold
    value = b.clean(q.ask(gpu, f"threshold{kind}", fn, gpu.handle, kind))
    return float(value) if value else None


def _watts(q: Query, gpu: Gpu, key: str, fn: Callable[..., int]) -> float | None:
    value = b.clean(q.ask(gpu, key, fn, gpu.handle))
    return value / 1000.0 if value else None


def _max_link(q: Query, gpu: Gpu) -> tuple[int | None, int | None]:
    return (
        b.clean(q.ask(gpu, "max_gen", pynvml.nvmlDeviceGetMaxPcieLinkGeneration, gpu.handle)),
        b.clean(q.ask(gpu, "max_width", pynvml.nvmlDeviceGetMaxPcieLinkWidth, gpu.handle)),
    )


def resolve(q: Query, gpu: Gpu, r535: bool) -> None:
    """What this GPU answers, found once: field ids, process functions, GPM samples."""
    answered = field_values(q, gpu, b.CANDIDATE_FIELDS, probe=True)
    gpu.fields = tuple(f for f in b.CANDIDATE_FIELDS if f in answered)
    # Counters only where both really answered: a retry-type error at open (-1) is no
    # counter, and the sampled throughput windows must stay in use.
    gpu.counters = answered.get(b.FI_PCIE_TX_BYTES, -1) >= 0 and (
        answered.get(b.FI_PCIE_RX_BYTES, -1) >= 0
    )
    for kind, what in PROCESS_KINDS:
        candidates = []
        for suffix, size in (
            ("_v3", ENTRY_R535 if r535 else ENTRY_V2),
            ("_v2", ENTRY_V2),
            ("", ENTRY_V1),
        ):
            symbol = f"nvmlDeviceGet{what}{suffix}"
            if b.has_symbol(symbol):
                candidates.append((symbol, size))
        gpu.process_fns[kind] = candidates
    if gpu.gpm and not alloc_gpm(q, gpu.gpm_samples):
        gpu.gpm = False
    if gpu.mig:
        gpu.migs = mig_layout(q, gpu)
        gpu.read_at["mig_layout"] = q.now


def topology(
    q: Query, gpus: Sequence[Gpu], devices: list[DeviceInfo], sysfs: Path
) -> list[DeviceInfo]:
    """NUMA node, CPU affinity, the PCIe path to every other GPU and the NVLinks of each
    GPU: static, read once (no root, nothing changed)."""
    count = len(gpus)
    levels: dict[tuple[int, int], str] = {}
    common = pynvml.nvmlDeviceGetTopologyCommonAncestor
    for a in gpus:
        for other in gpus[a.index + 1 :]:
            if a.lost or other.lost:
                continue
            try:
                level = q.ask(a, f"topology{other.index}", common, a.handle, other.handle)
            except GpuLost:
                a.lost = True
                break
            if level is not None:
                levels[(a.index, other.index)] = levels[(other.index, a.index)] = (
                    b.TOPOLOGY_LEVELS.get(int(level), "")
                )
    # the PCIe paths are offered unless the driver said "not supported" and gave none
    topology_offered = (
        bool(levels)
        or count == 1
        or not any(f"topology{other.index}" in a.stopped for a in gpus for other in gpus)
    )
    out = []
    for gpu, device in zip(gpus, devices, strict=True):
        if gpu.lost or gpu.handle is None:
            out.append(device)
            continue
        try:
            nvlink_remote, nvlink_version = _nvlink_layout(q, gpu)
            numa, numa_offered = _numa_node(q, gpu, device.pci_bus_id, sysfs)
            out.append(
                dataclasses.replace(
                    device,
                    numa_node=numa,
                    cpu_affinity=_cpu_affinity(q, gpu),
                    pcie_topology=(
                        tuple(
                            "X" if j == gpu.index else levels.get((gpu.index, j), "")
                            for j in range(count)
                        )
                        if levels or count == 1
                        else None
                    ),
                    nvlink_remote=nvlink_remote,
                    nvlink_version=nvlink_version,
                    unsupported=_not_offered(gpu, numa_offered, topology_offered),
                )
            )
        except GpuLost:
            gpu.lost = True
            out.append(device)
    return out


#: nvmlGpuP2PStatus_t as `nvidia-smi topo -p2p` abbreviates it ("DIS": disabled by the
#: driver's registry key, which nvidia-smi does not name)
P2P_STATUS = {0: "OK", 1: "CNS", 2: "GNS", 3: "TNS", 4: "DIS", 5: "NS", 6: "U"}
_P2P_READ, _P2P_WRITE = 0, 1  # NVML_P2P_CAPS_INDEX_READ, _WRITE


def peer_status(q: Query, gpus: Sequence[Gpu], devices: list[DeviceInfo]) -> list[DeviceInfo]:
    """Whether each GPU can read and write every other one's memory directly (PCIe or
    NVLink peer-to-peer, nvmlDeviceGetP2PStatus): read once at open, no root needed."""
    fn = b.function("nvmlDeviceGetP2PStatus")
    if len(gpus) < 2:
        return devices
    out = []
    for gpu, device in zip(gpus, devices, strict=True):
        if gpu.lost or gpu.handle is None:
            out.append(device)
            continue
        rows: dict[int, list[str]] = {_P2P_READ: [], _P2P_WRITE: []}
        for other in gpus:
            for kind, row in rows.items():
                if other is gpu:
                    row.append("X")
                    continue
                key = f"p2p{other.index}.{kind}"
                found = None if other.lost else q.ask(gpu, key, fn, gpu.handle, other.handle, kind)
                row.append(P2P_STATUS.get(int(found), "U") if found is not None else "")
        offered = fn is not None and any(c not in ("", "X") for c in rows[_P2P_READ])
        stopped = fn is None or all(
            f"p2p{o.index}.{_P2P_READ}" in gpu.stopped for o in gpus if o is not gpu
        )
        out.append(
            dataclasses.replace(
                device,
                p2p_read=tuple(rows[_P2P_READ]) if offered else None,
                p2p_write=tuple(rows[_P2P_WRITE]) if offered else None,
                unsupported=(*device.unsupported, "p2p_read", "p2p_write")
                if stopped and not offered
                else device.unsupported,
            )
        )
    return out


def _numa_node(q: Query, gpu: Gpu, bus_id: str | None, sysfs: Path) -> tuple[int | None, bool]:
    """The GPU's NUMA node, and whether the machine offers one at all: a kernel that says
    -1 (one node, or a VM that hides them), or NVML without the call and no word from the
    kernel, offers none; NVML refusing (no permission) with no word from the kernel is an
    unknown node on a machine that has them."""
    node = q.ask(gpu, "numa_node", b.function("nvmlDeviceGetNumaNodeId"), gpu.handle)
    if node is None and bus_id:
        # the kernel's view: /sys/bus/pci/devices/0000:18:00.0/numa_node
        name = bus_id.lower()[-12:]
        try:
            text = (sysfs / "bus" / "pci" / "devices" / name / "numa_node").read_text()
            node = int(text.strip())
        except (OSError, ValueError):
            return None, "numa_node" not in gpu.stopped
    if node is not None and 0 <= int(node) < 4096:
        return int(node), True
    return None, False


# Static facts read at open, by the query keys that read them: a key the policy stopped
# asking (not supported) makes the fact "unsupported" for the rules.
_FACTS_OF: dict[str, str] = {
    "cpu_affinity": "cpu_affinity",
    "default_limit": "power_default_limit_w",
    "limit": "power_limit_w",
    "persistence": "persistence_mode",
    "compute_mode": "compute_mode",
    "mig_mode": "mig_mode",
    "ecc_mode": "ecc_enabled",
    "max_gen": "pcie_max_gen",
    "max_width": "pcie_max_width",
    "gpu_max_gen": "pcie_gpu_max_gen",
    f"max_clock{pynvml.NVML_CLOCK_SM}": "max_sm_clock_mhz",
    f"max_clock{pynvml.NVML_CLOCK_MEM}": "max_mem_clock_mhz",
    f"default_app{pynvml.NVML_CLOCK_SM}": "default_app_sm_clock_mhz",
    f"threshold{pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN}": "temp_slowdown_c",
    f"threshold{pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN}": "temp_shutdown_c",
    f"threshold{pynvml.NVML_TEMPERATURE_THRESHOLD_GPU_MAX}": "temp_gpu_max_c",
    f"threshold{pynvml.NVML_TEMPERATURE_THRESHOLD_MEM_MAX}": "temp_mem_max_c",
    f"threshold{_ACOUSTIC_CURR}": "temp_target_c",
    "nvlink0.state": "nvlink_remote",
    "minor": "minor_number",
    "p0_clock": "p0_max_graphics_mhz",
}


def _not_offered(gpu: Gpu, numa_offered: bool, topology_offered: bool) -> tuple[str, ...]:
    names = {name for key, name in _FACTS_OF.items() if key in gpu.stopped}
    if not numa_offered:
        names.add("numa_node")
    if not topology_offered:
        names.add("pcie_topology")
    return tuple(sorted(names))


def _cpu_affinity(q: Query, gpu: Gpu) -> str | None:
    words = max(16, ((os.cpu_count() or 0) + 63) // 64)  # room for 1024 CPUs at least
    mask = q.ask_first(
        gpu,
        "cpu_affinity",
        [
            (
                b.function("nvmlDeviceGetCpuAffinityWithinScope"),
                (gpu.handle, words, b.AFFINITY_SCOPE_NODE),
            ),
            (b.function("nvmlDeviceGetCpuAffinity"), (gpu.handle, words)),
        ],
    )
    if mask is None:
        return None
    cpus = [w * 64 + bit for w in range(words) for bit in range(64) if int(mask[w]) >> bit & 1]
    return cpu_list(cpus) or None


def _nvlink_layout(q: Query, gpu: Gpu) -> tuple[tuple[str, ...] | None, int | None]:
    """The GPU's NVLinks: which exist, where each goes, their version."""
    remote: list[str] = []
    version: int | None = None
    limit = b.constant("NVML_NVLINK_MAX_LINKS", 18)
    for link in range(limit):
        key = f"nvlink{link}"
        state = q.ask(gpu, key + ".state", pynvml.nvmlDeviceGetNvLinkState, gpu.handle, link)
        if state is None:
            if key + ".state" in gpu.stopped or link > 0:
                break  # no such link (or none at all): the links end here
            return None, None  # not readable now: unknown
        where = ""
        if state:
            info = q.ask(
                gpu, key + ".remote", pynvml.nvmlDeviceGetNvLinkRemotePciInfo, gpu.handle, link
            )
            where = b.text(info.busId) if info is not None else ""
            found = q.ask(
                gpu, key + ".version", pynvml.nvmlDeviceGetNvLinkVersion, gpu.handle, link
            )
            version = version or (b.clean(found) if found else None)
        remote.append(where)
    gpu.nvlinks = len(remote)
    return tuple(remote), version


def cpu_list(cpus: Sequence[int]) -> str:
    """CPU numbers in Linux list format: [0, 1, 2, 5] -> "0-2,5"."""
    parts: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)
