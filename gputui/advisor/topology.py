"""Topology: where the GPU sits. A process on the far socket, GPUs that share one PCIe
switch's uplink, NVLinks down or erroring, an NVSwitch fabric that never came up."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import cast

from gputui.advisor.context import Context, gb, smi_target
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.core.model import DeviceInfo, GpuSample, ProcessSample
from gputui.core.names import Metric, RuleId, Severity
from gputui.core.pcie import link_bandwidth
from gputui.core.units import fmt_duration

#: `nvidia-smi topo -m` cells that mean "behind a common PCIe switch"
SWITCHED = ("PIX", "PXB")


def bus_key(bus_id: str) -> str:
    """A PCI bus id compared the same however it is padded: '0000:18:00.0'."""
    return bus_id.strip().lower()[-12:]


def nvswitch_links(device: DeviceInfo, devices: Mapping[int, DeviceInfo]) -> int:
    """How many of the GPU's NVLinks end at something other than a GPU: an NVSwitch."""
    remote = device.nvlink_remote
    if not remote:
        return 0
    buses = tuple(d.pci_bus_id for d in devices.values())
    key = (remote, buses)
    found = _SWITCH_LINKS.get(key)
    if found is None:
        gpus = {bus_key(b) for b in buses if b}
        found = sum(1 for r in remote if r and bus_key(r) not in gpus)
        if len(_SWITCH_LINKS) > 1024:
            _SWITCH_LINKS.clear()
        _SWITCH_LINKS[key] = found
    return found


#: (a GPU's NVLink far ends, every GPU's bus id) -> its links to an NVSwitch: the same
#: question every judgement, of facts read once
_SWITCH_LINKS: dict[tuple[tuple[str | None, ...], tuple[str | None, ...]], int] = {}


# -- numa-mismatch ------------------------------------------------------------------------
def _far(process: ProcessSample, node: int, ctx: Context) -> list[str] | None:
    """Why ``process`` runs or keeps its memory away from ``node``; None: unreadable."""
    t = ctx.t
    if process.cpus_allowed is None and not process.numa_memory and not process.workers_nodes:
        return None
    lines = []
    who = f"pid {process.pid}" + (f" ({process.name})" if process.name else "")
    if process.cpu_nodes and node not in process.cpu_nodes:
        nodes = ",".join(str(n) for n in process.cpu_nodes)
        lines.append(
            f"{who} may only run on CPUs {process.cpus_allowed} (NUMA node {nodes}); "
            f"the GPU is on node {node}"
        )
    workers = process.workers_nodes
    away = [n for n in workers if n >= 0 and n != node]
    if workers and len(away) / len(workers) > t.numa_workers_share:
        lines.append(
            f"{len(away)} of {len(workers)} data-loader workers of {who} are pinned to "
            f"node {','.join(sorted({str(n) for n in away}))}"
        )
    total = sum(process.numa_memory)
    if total > 0:
        near = process.numa_memory[node] if node < len(process.numa_memory) else 0
        share = (total - near) / total
        if share >= t.numa_far_memory_share:
            lines.append(
                f"{100 * share:.0f} % of the memory of {who} sits on another NUMA node "
                f"than the GPU's ({(total - near) / 2**30:.1f} GiB)"
            )
    return lines


def numa_mismatch(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for sample, device in ctx.samples():
        processes = [p for p in ctx.processes(sample.index) if p.visible]
        if not processes:
            continue
        node = device.numa_node
        if node is None:
            ctx.lacks(
                RuleId.NUMA_MISMATCH, sample, device, "numa_node", "the GPU's NUMA node unknown"
            )
            continue
        spans = _nodes_driven(ctx)
        # a process that drives GPUs on several nodes (one process a host: JAX, DataParallel)
        # has no one node to bind to: binding it near these GPUs takes it from the others
        findings = [[] if len(spans.get(p.pid, ())) > 1 else _far(p, node, ctx) for p in processes]
        if all(f is None for f in findings):
            ctx.cannot_judge(
                RuleId.NUMA_MISMATCH, sample.index, "processes' CPU affinity not readable"
            )
            continue
        lines = [line for f in findings if f for line in f]
        if not lines:
            continue
        util = ctx.stats(sample.index, Metric.UTIL_GPU)
        rx = ctx.stats(sample.index, Metric.PCIE_RX_BPS)
        tx = ctx.stats(sample.index, Metric.PCIE_TX_BPS)
        copies = (rx.mean if rx else 0.0) + (tx.mean if tx else 0.0)
        if util is None and rx is None and tx is None:
            ctx.cannot_judge(
                RuleId.NUMA_MISMATCH, sample.index, "no utilisation or PCIe throughput"
            )
            continue
        waiting = util is not None and t.idle_util_pct < util.mean < t.numa_waiting_util_pct
        if not waiting and copies < t.numa_copy_bps:
            continue  # far, but the GPU neither waits nor copies: it costs nothing now
        if waiting and util is not None:
            lines.append(
                f"the GPU is busy only {util.mean:.0f} % over the last {fmt_duration(util.span_s)}"
            )
        if copies >= t.numa_copy_bps:
            lines.append(f"PCIe copies {gb(copies)} cross the socket interconnect")
        cpus = device.cpu_affinity or f"node {node}'s CPUs"
        yield Candidate(
            rule=RuleId.NUMA_MISMATCH,
            severity=Severity.WARNING,
            gpu=sample.index,
            title=f"Process runs away from the GPU's NUMA node {node}",
            evidence=tuple(lines),
            remedies=(
                f"Bind each rank to its GPU's node: numactl --cpunodebind={node} "
                f"--membind={node} <command>",
                "Under Slurm: srun --cpu-bind=cores --gpu-bind=closest (or --cpus-per-gpu)",
                f"Or pin the process and its workers: taskset -c {cpus} <command>",
            ),
            hold_s=t.window_s,  # a placement costs over time: a window of it before it shows
            end_s=t.window_s,
        )


def _nodes_driven(ctx: Context) -> dict[int, set[int]]:
    """Each GPU process's NUMA nodes: those of the GPUs it runs on (worked out once a
    judgement)."""
    found = ctx.shared.get("nodes driven")
    if found is None:
        driven: dict[int, set[int]] = {}
        for proc in ctx.frame.processes:
            device = ctx.devices.get(proc.gpu_index)
            if device is not None and device.numa_node is not None and device.numa_node >= 0:
                driven.setdefault(proc.pid, set()).add(device.numa_node)
        found = ctx.shared["nodes driven"] = driven
    return cast("dict[int, set[int]]", found)


# -- pcie-shared-path ---------------------------------------------------------------------
def switch_groups(devices: Mapping[int, DeviceInfo]) -> list[tuple[int, ...]]:
    """GPUs behind a common PCIe switch (PIX or PXB to each other), two or more."""
    seen: set[int] = set()
    groups = []
    for index in sorted(devices):
        if index in seen:
            continue
        group, todo = {index}, [index]
        while todo:
            current = devices.get(todo.pop())
            for j, cell in enumerate((current.pcie_topology or ()) if current else ()):
                if cell in SWITCHED and j not in group and j in devices:
                    group.add(j)
                    todo.append(j)
        seen |= group
        if len(group) > 1:
            groups.append(tuple(sorted(group)))
    return groups


def pcie_shared_path(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    current = {s.index: s for s, _ in ctx.samples()}
    for group in switch_groups(ctx.devices):
        members: Sequence[tuple[GpuSample, DeviceInfo]] = [
            (current[i], ctx.devices[i]) for i in group if i in current
        ]
        if len(members) < 2:
            continue
        gens = [d.pcie_max_gen or s.pcie_gen for s, d in members]
        uplink = link_bandwidth(max((g for g in gens if g), default=None), 16)
        if not uplink or _peers(members):
            continue
        for metric, direction in (
            (Metric.PCIE_RX_BPS, "host to GPU"),
            (Metric.PCIE_TX_BPS, "GPU to host"),
        ):
            rates = [ctx.stats(s.index, metric) for s, _ in members]
            if any(r is None for r in rates):
                continue
            means = [r.mean for r in rates if r is not None]
            total = sum(means)
            links = [link_bandwidth(s.pcie_gen, s.pcie_width) for s, _ in members]
            alone = all(
                cap is not None and mean < t.pcie_shared_alone * cap
                for mean, cap in zip(means, links, strict=True)
            )
            # more than the uplink carries: part of it never crossed it (peer traffic)
            if not t.pcie_shared_uplink * uplink <= total <= uplink or not alone:
                continue
            names = " and ".join(f"GPU {i}" for i in group)
            each = " + ".join(gb(m) for m in means)
            gen = max(g for g in gens if g)
            span = fmt_duration(ctx.sampled_s())
            for s, _ in members:
                yield Candidate(
                    rule=RuleId.PCIE_SHARED_PATH,
                    severity=Severity.WARNING,
                    gpu=s.index,
                    title=f"PCIe switch shared by {names}: the path is the limit",
                    evidence=(
                        f"{names} sit behind one PCIe switch ({'/'.join(SWITCHED)} in "
                        "`nvidia-smi topo -m`)",
                        f"{direction} together {each} = {gb(total)}, "
                        f"{100 * total / uplink:.0f} % of the switch's uplink (taken as "
                        f"Gen{gen} x16, {gb(uplink)}) over the last {span}",
                        "each GPU alone stays below "
                        f"{100 * t.pcie_shared_alone:.0f} % of its own link",
                    ),
                    remedies=(
                        "Place the ranks that copy most on GPUs behind different switches "
                        "(CUDA_VISIBLE_DEVICES, or a scheduler's topology-aware placement)",
                        "Copy less: pinned memory, keep data on the GPU, fewer larger transfers",
                        "Let the GPUs exchange over NVLink rather than through the host",
                    ),
                )
            break


def _peers(members: Sequence[tuple[GpuSample, DeviceInfo]]) -> bool:
    """Whether GPUs of the group reach each other peer to peer: then their exchanges stay
    inside the switch, yet NVML counts them on each GPU's own link, so the links' sum says
    nothing of the uplink (and spreading the ranks would send that traffic through it)."""
    for (_, a), (_, b) in itertools.combinations(members, 2):
        if a.p2p_read is not None and b.index < len(a.p2p_read) and a.p2p_read[b.index] == "OK":
            return True
    return False


# -- nvlink-down / nvlink-errors ----------------------------------------------------------
def nvlink_down(ctx: Context) -> Iterator[Candidate]:
    for sample, device in ctx.samples():
        expected = len(device.nvlink_remote or ())
        if not expected:
            continue
        known = [n for n in sample.nvlinks if n.active is not None]
        if not known:
            ctx.cannot_judge(RuleId.NVLINK_DOWN, sample.index, "NVLink states not read")
            continue
        down = [n.link for n in known if not n.active]
        if not down:
            continue
        where = [
            (device.nvlink_remote or ())[i] for i in down if i < expected
        ]  # the far end, as found at open
        lines = [
            f"{len(down)} of {expected} NVLinks inactive: link " + ", ".join(str(i) for i in down),
        ]
        ends = sorted({w for w in where if w})
        if ends:
            lines.append("they lead to " + ", ".join(ends))
        lines.append("NCCL falls back to slower links (or PCIe) for traffic that used them")
        where_, number = smi_target(device, sample.index)
        yield Candidate(
            rule=RuleId.NVLINK_DOWN,
            severity=Severity.CRITICAL if len(down) == expected else Severity.WARNING,
            gpu=sample.index,
            title="NVLink down",
            evidence=tuple(lines),
            remedies=(
                f"{where_}Check the links: nvidia-smi nvlink -s -i {number} and "
                f"nvidia-smi nvlink -e -i {number}",
                "Check dmesg for Xid 74 (NVLink error); reset the GPU when idle or reboot",
                "On NVSwitch systems check Fabric Manager (systemctl status "
                "nvidia-fabricmanager); a link that stays down is a hardware case",
            ),
        )


def nvlink_errors(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for sample, device in ctx.samples():
        if not device.nvlink_remote:
            continue
        errors = ctx.stats(sample.index, Metric.NVLINK_ERRORS, t.nvlink_window_s)
        if errors is None:
            if sample.nvlink_errors is None:
                ctx.cannot_judge(RuleId.NVLINK_ERRORS, sample.index, "no NVLink error counters")
            continue
        rise = errors.last - errors.first
        if rise <= 0 or errors.span_s <= 0:
            continue
        per_min = rise * 60.0 / errors.span_s
        lines = [
            f"NVLink errors +{rise:.0f} in {fmt_duration(errors.span_s)} ({per_min:.0f} per "
            f"minute), total {errors.last:.0f}"
        ]
        lost = False  # replay or recovery errors: flits lost, or the link retrained
        for n in sample.nvlinks:
            counts = (n.crc_errors or 0, n.replay_errors or 0, n.recovery_errors or 0)
            lost |= bool(counts[1] or counts[2])
            if any(counts):
                lines.append(
                    f"link {n.link}: CRC {counts[0]}, replay {counts[1]}, recovery {counts[2]}"
                )
        critical = lost or per_min >= t.nvlink_errors_critical_per_min
        where_, number = smi_target(device, sample.index)
        if not critical:
            lines.append(
                "CRC errors only: the link layer retransmits them (DCGM fails a link "
                "at 100 CRC errors a second)"
            )
        yield Candidate(
            rule=RuleId.NVLINK_ERRORS,
            severity=Severity.CRITICAL if critical else Severity.WARNING,
            gpu=sample.index,
            title="NVLink errors rising: the link retransmits",
            evidence=tuple(lines[:6]),
            remedies=(
                f"{where_}Check the link's counters: nvidia-smi nvlink -e -i {number}; "
                "recovery errors mean the link retrained",
                "Check dmesg for Xid 74; drain the node and have the board or its NVLink "
                "bridge checked if it keeps rising",
            ),
        )


# -- fabric-not-ready ---------------------------------------------------------------------
_FABRIC_WORDS = {
    "not-started": "the GPU has not registered with the NVSwitch fabric",
    "in-progress": "the GPU's fabric registration has not finished",
    "failed": "the GPU's fabric registration failed",
}


def fabric_not_ready(ctx: Context) -> Iterator[Candidate]:
    for sample, device in ctx.samples():
        if not device.nvlink_remote or not nvswitch_links(device, ctx.devices):
            continue  # no NVSwitch: no fabric to be ready
        state = sample.fabric_state
        if state is None:  # NotSupported (before Hopper, older drivers): not applicable
            ctx.lacks(RuleId.FABRIC_NOT_READY, sample, device, "fabric_state", "no fabric state")
            continue
        if state not in _FABRIC_WORDS:
            continue
        yield Candidate(
            rule=RuleId.FABRIC_NOT_READY,
            severity=Severity.CRITICAL,
            gpu=sample.index,
            title="NVSwitch fabric not ready: no NVLink for this GPU",
            evidence=(
                f"fabric state {state}: {_FABRIC_WORDS[state]}",
                "until it completes CUDA cannot start on this GPU: its calls fail with "
                "'system not yet initialized' (error 802)",
            ),
            remedies=(
                "Start Fabric Manager: systemctl enable --now nvidia-fabricmanager",
                "Its version must match the driver's exactly (nv-fabricmanager --version "
                "against nvidia-smi)",
                "Read /var/log/fabricmanager.log for the reason",
            ),
            hold_s=ctx.t.fabric_settle_s if state == "in-progress" else None,
        )


RULES = (
    Rule(
        RuleId.NUMA_MISMATCH,
        "topology",
        "the GPU's NUMA node and CPUs, each GPU process's allowed CPUs, its data-loader "
        "workers' CPUs and where its memory sits (/proc/PID/numa_maps), utilisation, PCIe "
        "throughput",
        "a GPU process may only run on another node's CPUs, more than "
        "{t.numa_workers_share:share} of its workers are pinned to another node, or "
        ">= {t.numa_far_memory_share:share} of its memory sits on another node, while the "
        "GPU waits (utilisation below {t.numa_waiting_util_pct:g} %) or copies "
        ">= {t.numa_copy_bps:mbps} over PCIe",
        "numactl --cpunodebind=N --membind=N per rank, Slurm's --cpu-bind / --gpu-bind, taskset",
        numa_mismatch,
        never_claims="a CPU mismatch for a process allowed on every CPU (the scheduler may "
        "place it anywhere; where its memory sits still counts), a mismatch for a process that "
        "drives GPUs on several nodes (no one node to bind it to), nor one that costs nothing "
        "(the GPU busy and copying little)",
    ),
    Rule(
        RuleId.PCIE_SHARED_PATH,
        "4 PCIe",
        "the PCIe path between GPUs (nvmlDeviceGetTopologyCommonAncestor), each GPU's RX/TX "
        "throughput and link",
        "GPUs behind one PCIe switch together move >= {t.pcie_shared_uplink:share} of the "
        "switch's uplink in one direction over the last {t.window_s:g} s, while each alone "
        "stays below {t.pcie_shared_alone:share} of its own link; the uplink is taken as an "
        "x16 link of the GPUs' generation",
        "spread the copying ranks over switches, copy less, exchange over NVLink",
        pcie_shared_path,
        needs=("pcie_topology", "pcie_rx_bps|pcie_tx_bps"),
        never_claims="the uplink's real width (NVML does not give it): it is assumed x16; "
        "a shared path for GPUs that reach each other peer to peer (NVML counts their "
        "exchanges, which stay inside the switch, on their own links), or more than the "
        "uplink carries",
    ),
    Rule(
        RuleId.NVLINK_DOWN,
        "topology",
        "the GPU's NVLinks found at open, each link's state (every 10 s)",
        "a link the GPU has is inactive (critical when all are)",
        "nvidia-smi nvlink -s / -e, Xid 74, reset or reboot, Fabric Manager",
        nvlink_down,
        needs_history="",
        needs=("nvlink_remote",),
    ),
    Rule(
        RuleId.NVLINK_ERRORS,
        "topology",
        "NVLink CRC, replay and recovery error counters over the last {t.nvlink_window_s:g} s",
        "the counters rise at all (warning: CRC errors the link retransmits); critical where "
        "a link has replay or recovery errors (lost flits, a retrained link) or the errors "
        "reach {t.nvlink_errors_critical_per_min:g} per minute (DCGM's 100 a second)",
        "nvidia-smi nvlink -e, Xid 74, drain and check the board",
        nvlink_errors,
        needs=("nvlink_remote",),
    ),
    Rule(
        RuleId.FABRIC_NOT_READY,
        "topology",
        "NVSwitch fabric state (nvmlDeviceGetGpuFabricInfoV) of GPUs with NVLinks to NVSwitches",
        "the fabric is not started or failed (critical), or still in progress after "
        "{t.fabric_settle_s:g} s",
        "start Fabric Manager, match its version to the driver's, read its log",
        fabric_not_ready,
        needs_history="",
        never_claims="anything on GPUs without NVSwitch links",
    ),
)
