"""Configuration of the node and its GPUs: peer-to-peer paths between the GPUs of a job,
compute mode, mode changes that wait for a reset, locked clocks, the CPU frequency
governor, transparent huge pages, automatic NUMA balancing."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from gputui.advisor.context import Context, smi_target
from gputui.advisor.finding import Candidate
from gputui.advisor.jobs import env_holders
from gputui.advisor.rule import Rule
from gputui.advisor.topology import bus_key
from gputui.core.model import DeviceInfo
from gputui.core.names import ConfigArea, RuleId, Severity

CAUSE = "3 configuration"
#: paths on which peer-to-peer should work: one switch, several, one host bridge
NEAR = ("PIX", "PXB", "PHB")
P2P_WORDS = {
    "CNS": "the chipset does not support it",
    "GNS": "the GPU does not support it",
    "TNS": "the PCIe topology does not allow it",
    "DIS": "disabled by the driver's settings",
    "NS": "not supported",
    "U": "unknown",
}


def nvlinked(a: DeviceInfo, b: DeviceInfo) -> bool:
    """Whether an NVLink of ``a`` ends at ``b`` (directly, not through an NVSwitch)."""
    return bool(b.pci_bus_id) and any(
        r and bus_key(r) == bus_key(b.pci_bus_id or "") for r in a.nvlink_remote or ()
    )


def p2p(a: DeviceInfo, b: DeviceInfo) -> tuple[str, str] | None:
    """(read, write) peer-to-peer status from ``a`` to ``b``; None where not read."""
    if a.p2p_read is None or a.p2p_write is None or b.index >= len(a.p2p_read):
        return None
    read, write = a.p2p_read[b.index], a.p2p_write[b.index]
    return (read, write) if read and write else None


def path(a: DeviceInfo, b: DeviceInfo) -> str:
    """The PCIe path between two GPUs as `nvidia-smi topo -m` names it, "" unknown."""
    topo = a.pcie_topology or ()
    return topo[b.index] if b.index < len(topo) else ""


def job_gpu_sets(ctx: Context) -> list[tuple[int, ...]]:
    """The sets of GPUs that work together: each launcher job's ranks (or one process on
    several GPUs), and the GPUs gputui's own environment makes visible."""
    groups = {h.peers for h in env_holders(ctx) if len(h.peers) > 1}
    return sorted(groups)


def direct_pairs(ctx: Context, gpus: Sequence[int]) -> list[tuple[int, int, str]]:
    """Pairs of ``gpus`` that can reach each other's memory directly, and how."""
    out = []
    for i, j in itertools.combinations(gpus, 2):
        a, b = ctx.devices.get(i), ctx.devices.get(j)
        if a is None or b is None:
            continue
        if nvlinked(a, b):
            out.append((i, j, "NVLink"))
        elif p2p(a, b) == ("OK", "OK"):
            out.append((i, j, f"PCIe {path(a, b) or 'P2P'}"))
    return out


# -- p2p-unavailable ----------------------------------------------------------------------
def p2p_unavailable(ctx: Context) -> Iterator[Candidate]:
    if ctx.frame.settings is None:
        return  # a source that reads no configuration (simulated, remote, recorded)
    for gpus in job_gpu_sets(ctx):
        for i, j in itertools.combinations(gpus, 2):
            a, b = ctx.devices.get(i), ctx.devices.get(j)
            if a is None or b is None:
                continue
            status = p2p(a, b)
            linked, route = nvlinked(a, b), path(a, b)
            if status is None:
                if "p2p_read" not in a.unsupported and (linked or route in NEAR):
                    ctx.cannot_judge(RuleId.P2P_UNAVAILABLE, i, f"P2P status to GPU {j} not read")
                continue
            if status == ("OK", "OK") or not (linked or route in NEAR):
                continue
            where = (
                "an NVLink joins them" if linked else f"they sit behind {_route(route)} ({route})"
            )
            read, write = status
            code = read if read != "OK" else write
            lines = (
                f"GPU {i} -> GPU {j}: peer-to-peer read {read}, write {write} "
                f"({P2P_WORDS.get(code, 'not available')}), though {where}",
                "they work in one job: NCCL and CUDA copies between them go through host "
                "memory instead (two PCIe crossings, and the CPU's memory bandwidth)",
            )
            # GNS: the board has none (GeForce since Ada): no switch, BIOS or IOMMU setting
            # gives it one, so nothing to fix on this node, only to know
            board = code == "GNS"
            for gpu in (i, j):
                yield Candidate(
                    RuleId.P2P_UNAVAILABLE,
                    Severity.INFO if board else Severity.WARNING,
                    gpu,
                    f"No peer-to-peer between GPU {i} and GPU {j}: their copies detour "
                    "through the host" + (" (the board has none)" if board else ""),
                    lines,
                    _BOARD_REMEDIES if board else _P2P_REMEDIES,
                )


def _route(route: str) -> str:
    return {"PIX": "one PCIe switch", "PXB": "PCIe switches", "PHB": "one host bridge"}.get(
        route, "a short path"
    )


_BOARD_REMEDIES = (
    "Nothing to set on this node: these boards have no peer-to-peer (NVIDIA leaves it out of "
    "GeForce boards); NCCL goes through host memory, as it must",
    "For jobs that exchange much between GPUs: boards with peer-to-peer or NVLink, or fewer, "
    "larger GPUs per job",
)
_P2P_REMEDIES = (
    "Check ACS on the PCIe switches: lspci -vvv | grep ACSCtl (SrcValid+ sends peer traffic "
    "up to the root complex); turn ACS off in the BIOS for bare-metal training nodes",
    "Check the IOMMU: dmesg | grep -i -e DMAR -e IOMMU; iommu=pt on the kernel command line",
    "In a VM, peer-to-peer needs the hypervisor to pass the switch through; confirm with "
    "nvidia-smi topo -p2p r and NCCL_DEBUG=INFO (P2P/IPC against SHM in its channel lines)",
)


# -- compute-mode -------------------------------------------------------------------------
def compute_mode(ctx: Context) -> Iterator[Candidate]:
    settings = ctx.frame.settings
    for sample, device in ctx.samples():
        mode = device.compute_mode
        where, number = smi_target(device, sample.index)
        if mode == "Prohibited":
            yield Candidate(
                RuleId.COMPUTE_MODE,
                Severity.INFO,
                sample.index,
                "Compute mode Prohibited: no CUDA program can use this GPU",
                ("compute mode Prohibited (nvidia-smi -q -d COMPUTE)",),
                (f"{where}If it should run jobs: sudo nvidia-smi -i {number} -c DEFAULT",),
            )
            continue
        if mode not in ("Exclusive_Process", "Exclusive_Thread") or settings is None:
            continue
        waiting = [w for w in settings.waiters if w.minor == device.minor_number]
        why = settings.unread(ConfigArea.DEVICES)
        if not waiting:
            if why is not None:
                ctx.cannot_judge(RuleId.COMPUTE_MODE, sample.index, f"who waits for it: {why}")
            continue
        holders = ", ".join(str(p.pid) for p in ctx.processes(sample.index)) or "another process"
        names = ", ".join(f"pid {w.pid}" + (f" ({w.name})" if w.name else "") for w in waiting[:4])
        yield Candidate(
            RuleId.COMPUTE_MODE,
            Severity.WARNING,
            sample.index,
            f"Compute mode {mode.replace('_', ' ')}: a second process cannot get the GPU",
            (
                f"GPU {sample.index} admits one process at a time (compute mode {mode}); "
                f"pid {holders} holds it",
                f"{names} opened /dev/nvidia{device.minor_number} and loaded the CUDA driver "
                "but has no context on any GPU: it waits for this GPU or failed to get it "
                "('all CUDA-capable devices are busy or unavailable')",
            ),
            (
                "Give each process its own GPU (CUDA_VISIBLE_DEVICES per rank), or keep CUDA out "
                "of DataLoader workers and helper processes",
                f"{where}If sharing is intended: sudo nvidia-smi -i {number} -c DEFAULT (root), "
                "or MPS for cooperative sharing",
            ),
        )


# -- mode-pending -------------------------------------------------------------------------
def mode_pending(ctx: Context) -> Iterator[Candidate]:
    for sample, device in ctx.samples():
        lines, severity = [], Severity.INFO
        mig, mig_next = device.mig_mode, device.mig_pending
        if mig is not None and mig_next is not None and mig != mig_next:
            lines.append(
                f"MIG mode {_on(mig)} now, {_on(mig_next)} after the next GPU reset: until "
                "then the GPU is not partitioned as set"
            )
            severity = Severity.WARNING
        ecc, ecc_next = device.ecc_enabled, device.ecc_pending
        if ecc is not None and ecc_next is not None and ecc != ecc_next:
            lines.append(
                f"ECC {_on(ecc)} now, {_on(ecc_next)} after the next GPU reset (ECC on costs a "
                "few % of memory capacity and bandwidth)"
            )
        if not lines:
            continue
        where, number = smi_target(device, sample.index)
        yield Candidate(
            RuleId.MODE_PENDING,
            severity,
            sample.index,
            "A mode change waits for a GPU reset",
            tuple(lines),
            (
                f"{where}Reset the GPU while it is idle: sudo nvidia-smi -i {number} -r (or "
                "reboot); or set the mode back if the change was a mistake",
            ),
        )


def _on(flag: bool) -> str:
    return "on" if flag else "off"


# -- clocks-locked ------------------------------------------------------------------------
def clocks_locked(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    if ctx.frame.settings is None:
        return  # a source that reads no configuration (simulated, remote, recorded)
    for sample, device in ctx.samples():
        ceiling, top = device.p0_max_graphics_mhz, device.max_graphics_clock_mhz
        if ceiling is None or not top:
            if top and "p0_max_graphics_mhz" not in device.unsupported:
                ctx.cannot_judge(RuleId.CLOCKS_LOCKED, sample.index, "P0 clock range not read")
            continue
        if ceiling >= t.clocks_locked_share * top:
            continue
        lines = [
            f"the P0 state allows graphics clocks up to {ceiling} MHz of the board's {top} MHz "
            f"({100 * ceiling / top:.0f} %): the clocks are locked below their maximum"
        ]
        if sample.graphics_clock_mhz is not None:
            lines.append(f"graphics clock now {sample.graphics_clock_mhz} MHz")
        where, number = smi_target(device, sample.index)
        yield Candidate(
            RuleId.CLOCKS_LOCKED,
            Severity.WARNING,
            sample.index,
            "GPU clocks locked below the maximum",
            tuple(lines),
            (
                f"{where}Unlock them (root): sudo nvidia-smi -i {number} -rgc",
                "Look for what locks them: a benchmark's setup script, a DCGM or "
                "datacenter power policy, a profiler that pinned clocks",
            ),
        )


# -- cpu-governor, thp-defrag, numa-balancing ---------------------------------------------
#: drivers whose "powersave" pins the lowest frequency (acpi-cpufreq, the passive pstates);
#: intel_pstate and amd-pstate-epp in active mode scale with load under "powersave"
_ACTIVE = ("intel_pstate", "amd-pstate-epp")


def cpu_governor(ctx: Context) -> Iterator[Candidate]:
    settings = ctx.frame.settings
    if settings is None or settings.governor is None:
        return
    driver = settings.cpufreq_driver or "?"
    where = f"{settings.governor_cpus} of {settings.cpufreq_cpus} CPUs"
    lines = [f"{where} use the {settings.governor} governor ({driver})"]
    if settings.cpu_mhz is not None and settings.cpu_max_mhz:
        lines.append(f"mean clock {settings.cpu_mhz:.0f} MHz of {settings.cpu_max_mhz:.0f} MHz")
    if settings.governor == "powersave" and driver not in _ACTIVE:
        severity = Severity.WARNING
        lines.append("with this driver powersave holds the lowest frequency: loaders starve")
    elif settings.energy_preference == "power":
        severity = Severity.INFO
        lines.append("energy_performance_preference 'power': the cores rise to speed slowly")
    else:
        return
    lines.append("set in /sys/devices/system/cpu/cpufreq/policy*/scaling_governor")
    yield Candidate(
        RuleId.CPU_GOVERNOR,
        severity,
        None,
        "CPU frequency governor holds the cores slow",
        tuple(lines),
        (
            "sudo cpupower frequency-set -g performance (or tuned-adm profile "
            "throughput-performance); the BIOS power profile 'maximum performance'",
        ),
    )


def thp_defrag(ctx: Context) -> Iterator[Candidate]:
    settings = ctx.frame.settings
    if settings is None or settings.thp_defrag != "always" or settings.thp_enabled == "never":
        return
    yield Candidate(
        RuleId.THP_DEFRAG,
        Severity.INFO,
        None,
        "Transparent huge pages compact memory on every fault",
        (
            f"THP enabled {settings.thp_enabled}, defrag always "
            "(/sys/kernel/mm/transparent_hugepage/defrag): an allocation that finds no free "
            "huge page stalls while the kernel compacts memory",
        ),
        (
            "echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/defrag (the default "
            "of most distributions); persist with transparent_hugepage= on the kernel command line",
        ),
    )


def numa_balancing(ctx: Context) -> Iterator[Candidate]:
    settings = ctx.frame.settings
    if settings is None or not settings.numa_balancing or (settings.numa_nodes or 0) < 2:
        return
    if not ctx.frame.processes and not any(j.own for j in ctx.frame.jobs):
        return  # no job to disturb
    lines = [
        f"kernel.numa_balancing = 1 on {settings.numa_nodes} NUMA nodes "
        "(/proc/sys/kernel/numa_balancing): the kernel unmaps pages to see who uses them "
        "and moves them"
    ]
    if settings.numa_pages_migrated is not None:
        lines.append(f"{settings.numa_pages_migrated} pages migrated since boot (/proc/vmstat)")
    lines.append("pinned buffers for GPU copies and the loaders' memory take the faults")
    yield Candidate(
        RuleId.NUMA_BALANCING,
        Severity.INFO,
        None,
        "Automatic NUMA balancing moves the job's memory",
        tuple(lines),
        (
            "sudo sysctl kernel.numa_balancing=0 (persist in /etc/sysctl.d), and bind each "
            "rank to its GPU's node instead (numactl, Slurm --cpu-bind)",
        ),
    )


RULES = (
    Rule(
        RuleId.P2P_UNAVAILABLE,
        CAUSE,
        "peer-to-peer read and write status between the GPUs of one job "
        "(nvmlDeviceGetP2PStatus), their PCIe path and NVLinks",
        "GPUs of one job behind one PCIe switch, several or one host bridge (PIX, PXB, PHB), "
        "or joined by an NVLink, cannot read or write each other's memory",
        "ACS and IOMMU settings, the hypervisor's passthrough; nvidia-smi topo -p2p r",
        p2p_unavailable,
        needs_history="",
        never_claims="anything between GPUs across sockets or host bridges (NODE, SYS), where "
        "many platforms offer no peer-to-peer by design",
    ),
    Rule(
        RuleId.COMPUTE_MODE,
        CAUSE,
        "compute mode; the processes that hold the GPU's device file with the CUDA driver "
        "loaded and no context on any GPU (/proc/PID/fd, /proc/PID/maps)",
        "EXCLUSIVE_PROCESS with such a second process (warning); Prohibited (info)",
        "a GPU per process, or nvidia-smi -c DEFAULT",
        compute_mode,
        needs_history="",
        never_claims="that EXCLUSIVE_PROCESS alone is wrong: clusters set it on purpose",
    ),
    Rule(
        RuleId.MODE_PENDING,
        CAUSE,
        "current and pending MIG and ECC modes (nvmlDeviceGetMigMode, nvmlDeviceGetEccMode)",
        "a MIG mode change waits for a reset (warning), an ECC one (info)",
        "reset the GPU when idle (nvidia-smi -r), or undo the change",
        mode_pending,
        needs_history="",
    ),
    Rule(
        RuleId.CLOCKS_LOCKED,
        CAUSE,
        "the graphics clock range of P0 (nvmlDeviceGetMinMaxClockOfPState), the maximum clock",
        "P0's ceiling below {t.clocks_locked_share:share} of the board's maximum",
        "nvidia-smi -rgc (root)",
        clocks_locked,
        needs_history="",
    ),
    Rule(
        RuleId.CPU_GOVERNOR,
        CAUSE,
        "the CPU frequency policies (/sys/devices/system/cpu/cpufreq/policy*: "
        "scaling_governor, scaling_driver, energy_performance_preference, frequencies)",
        "most CPUs on powersave with a driver that pins the lowest frequency (acpi-cpufreq, "
        "passive pstate) (warning); energy preference 'power' (info)",
        "cpupower frequency-set -g performance, tuned-adm, the BIOS power profile",
        cpu_governor,
        needs_history="",
        never_claims="a problem with powersave under intel_pstate or amd-pstate-epp in active "
        "mode, which scale with load",
    ),
    Rule(
        RuleId.THP_DEFRAG,
        CAUSE,
        "/sys/kernel/mm/transparent_hugepage/enabled and defrag",
        "info: defrag 'always' with huge pages enabled",
        "defrag madvise",
        thp_defrag,
        needs_history="",
    ),
    Rule(
        RuleId.NUMA_BALANCING,
        CAUSE,
        "/proc/sys/kernel/numa_balancing, the NUMA nodes, numa_pages_migrated (/proc/vmstat)",
        "info: automatic NUMA balancing on a host with 2+ nodes while a job runs",
        "sysctl kernel.numa_balancing=0 and explicit binding",
        numa_balancing,
        needs_history="",
    ),
)
