"""Configuration in the job's environment: variables that quietly cost throughput. Read
from each GPU process's environment (only the names gputui reads: the rest may hold
secrets) and, for doctor, from gputui's own (the job a script is about to start)."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate
from gputui.advisor.jobs import EnvHolder, cpu_count, env_holders, set_to, visible_gpus
from gputui.advisor.node_settings import direct_pairs
from gputui.advisor.rule import Rule
from gputui.core.names import RuleId, Severity
from gputui.sources.placement import parse_cpu_list

CAUSE = "3 configuration"


def _each(
    h: EnvHolder,
    rule: RuleId,
    severity: Severity,
    title: str,
    evidence: tuple[str, ...],
    remedies: tuple[str, ...],
) -> Iterator[Candidate]:
    for gpu in h.gpus:
        yield Candidate(rule, severity, gpu, title, evidence, remedies)


def no_cuda_caching(ctx: Context) -> Iterator[Candidate]:
    for h in env_holders(ctx):
        value = set_to(h.env, "PYTORCH_NO_CUDA_MEMORY_CACHING")
        if value is None:
            continue
        yield from _each(
            h,
            RuleId.NO_CUDA_CACHING,
            Severity.WARNING,
            "PyTorch's CUDA memory cache is off: every allocation synchronises the GPU",
            (
                f"{h.who} runs with PYTORCH_NO_CUDA_MEMORY_CACHING={value}",
                "each tensor's memory comes from cudaMalloc and goes back through cudaFree, "
                "which waits for the GPU: the CPU can no longer queue work ahead of it",
            ),
            (
                "Unset PYTORCH_NO_CUDA_MEMORY_CACHING: it is a debugging aid for memory checkers",
                "Against fragmentation use PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
            ),
        )


def distributed_debug(ctx: Context) -> Iterator[Candidate]:
    for h in env_holders(ctx):
        value = h.env.get("TORCH_DISTRIBUTED_DEBUG", "")
        if value.strip().upper() != "DETAIL":
            continue
        yield from _each(
            h,
            RuleId.DISTRIBUTED_DEBUG,
            Severity.WARNING,
            "TORCH_DISTRIBUTED_DEBUG=DETAIL checks every collective",
            (
                f"{h.who} runs with TORCH_DISTRIBUTED_DEBUG={value}",
                "DETAIL wraps the process groups to check that every rank calls the same "
                "collective with matching shapes: an extra collective per call, plus logging",
            ),
            ("Unset it (or use INFO) once the hang or mismatch it was set for is found",),
        )


def nccl_p2p_off(ctx: Context) -> Iterator[Candidate]:
    for h in env_holders(ctx):
        value = set_to(h.env, "NCCL_P2P_DISABLE")
        if value is None or len(h.peers) < 2:
            continue
        pairs = direct_pairs(ctx, h.peers)
        if not pairs:
            unread = [
                i
                for i in h.peers
                if (d := ctx.devices.get(i)) is not None
                and d.p2p_read is None
                and "p2p_read" not in d.unsupported
            ]
            for gpu in h.gpus if unread and ctx.frame.settings is not None else ():
                ctx.cannot_judge(RuleId.NCCL_P2P_OFF, gpu, "P2P status between its GPUs not read")
            continue
        links = "; ".join(f"GPU {a} and GPU {b}: {how}" for a, b, how in pairs[:3])
        yield from _each(
            h,
            RuleId.NCCL_P2P_OFF,
            Severity.WARNING,
            "NCCL_P2P_DISABLE is set though the job's GPUs reach each other directly",
            (
                f"{h.who} runs with NCCL_P2P_DISABLE={value}",
                f"its GPUs can read and write each other's memory: {links}"
                + (f" (+{len(pairs) - 3} more pairs)" if len(pairs) > 3 else ""),
                "NCCL then passes every message through host shared memory instead, at a "
                "fraction of the bandwidth",
            ),
            (
                "Unset NCCL_P2P_DISABLE: it is usually copied from a workaround for a machine "
                "without peer-to-peer",
                "To keep P2P off only some paths: NCCL_P2P_LEVEL (e.g. NVL, PIX)",
            ),
        )


def nccl_ib_off(ctx: Context) -> Iterator[Candidate]:
    settings = ctx.frame.settings
    if settings is None:
        return
    for h in env_holders(ctx):
        value = set_to(h.env, "NCCL_IB_DISABLE")
        if value is None:
            continue
        ports = settings.ib_ports
        if ports is None:
            for gpu in h.gpus:
                ctx.cannot_judge(RuleId.NCCL_IB_OFF, gpu, "InfiniBand ports not readable")
            continue
        if not ports:
            continue
        world, local = h.env.get("WORLD_SIZE", ""), h.env.get("LOCAL_WORLD_SIZE", "")
        one_node = world.isdigit() and local.isdigit() and int(world) <= int(local)
        lines = [
            f"{h.who} runs with NCCL_IB_DISABLE={value}",
            f"this host has {len(ports)} active InfiniBand/RoCE port(s): {', '.join(ports[:4])}",
            "NCCL then sends the traffic between nodes over TCP sockets",
        ]
        if one_node:
            lines.append(
                f"the job runs on one node (WORLD_SIZE={world}, LOCAL_WORLD_SIZE={local}): it "
                "costs nothing until it spans nodes"
            )
        yield from _each(
            h,
            RuleId.NCCL_IB_OFF,
            Severity.INFO if one_node else Severity.WARNING,
            "NCCL_IB_DISABLE is set on a host with InfiniBand",
            tuple(lines),
            (
                "Unset NCCL_IB_DISABLE; pick the adapters with NCCL_IB_HCA if some must stay "
                "out, and check with NCCL_DEBUG=INFO (NET/IB against NET/Socket)",
            ),
        )


def omp_oversubscribed(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    seen: set[tuple[int, ...]] = set()
    host = ctx.frame.host
    for h in env_holders(ctx):
        job, proc = h.job, h.process
        if proc is None or job is None or "OMP_NUM_THREADS" in h.env or job.pids in seen:
            continue
        workers, threads = job.workers or 0, job.threads
        cpus = (
            cpu_count(job.cpuset)
            or cpu_count(proc.cpus_allowed)
            or (host.cpu_count if host is not None else None)
        )
        if workers < t.omp_min_workers or threads is None or not cpus:
            continue
        if threads <= t.omp_threads_per_cpu * cpus:
            continue
        seen.add(job.pids)
        ranks = len(job.pids) or 1
        yield from _each(
            h,
            RuleId.OMP_OVERSUBSCRIBED,
            Severity.WARNING,
            "OMP_NUM_THREADS unset: every worker starts a thread per core",
            (
                f"OMP_NUM_THREADS is not set for {h.who}",
                f"its job's {ranks} GPU process(es) and {workers} data-loader workers run "
                f"{threads} threads on {cpus} CPUs ({threads / cpus:.0f} per CPU)",
                "each library that sizes its pool by the core count (OpenMP, MKL, OpenBLAS, "
                "OpenCV) does so in every process: the threads preempt each other",
            ),
            (
                f"export OMP_NUM_THREADS={max(1, cpus // ranks // max(1, workers // ranks))} "
                "(the cores per process); torchrun sets 1 when it starts several ranks",
                "In the workers: worker_init_fn calling torch.set_num_threads(1) and "
                "cv2.setNumThreads(0)",
            ),
        )


def visible_devices_order(ctx: Context) -> Iterator[Candidate]:
    for h in env_holders(ctx):
        text = h.env.get("CUDA_VISIBLE_DEVICES")
        order = visible_gpus(ctx, h.env) if text else ()
        if not order:
            continue
        found = _far_by_order(ctx, h, order)
        if found is not None:
            yield from _each(
                h,
                RuleId.VISIBLE_DEVICES_ORDER,
                Severity.WARNING,
                "CUDA_VISIBLE_DEVICES hands the process a GPU on another socket",
                found,
                _ORDER_REMEDIES,
            )
            continue
        # CUDA's fastest-first numbering orders every GPU of the node, not only those named:
        # "1,2" on a 3090 and two 4090s is a 4090 and the 3090, whatever the list meant
        node = ctx.devices[order[0]].node
        names = {d.name for d in ctx.devices.values() if d.node == node}
        numeric = all(item.strip().isdigit() for item in (text or "").split(","))
        if len(names) > 1 and numeric and h.env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
            yield from _each(
                h,
                RuleId.VISIBLE_DEVICES_ORDER,
                Severity.INFO,
                "CUDA numbers these GPUs otherwise than nvidia-smi",
                (
                    f"{h.who}: CUDA_VISIBLE_DEVICES={text} on a node with "
                    f"{len(names)} GPU models ({', '.join(sorted(names))})",
                    "without CUDA_DEVICE_ORDER=PCI_BUS_ID, CUDA counts the fastest GPU first: "
                    "its numbers are not nvidia-smi's (and not gputui's)",
                ),
                ("export CUDA_DEVICE_ORDER=PCI_BUS_ID, or name the GPUs by UUID",),
            )


def _far_by_order(ctx: Context, h: EnvHolder, order: tuple[int, ...]) -> tuple[str, ...] | None:
    """Evidence that the process's CPUs sit by another GPU of its list than the one it uses."""
    cpus_text = (
        h.process.cpus_allowed if h.process is not None else (h.job.cpus_allowed if h.job else None)
    )
    if not cpus_text:
        return None
    rank = h.env.get("LOCAL_RANK", "0")
    if h.process is not None:
        used = h.process.gpu_index
    elif rank.isdigit() and int(rank) < len(order):
        used = order[int(rank)]
    else:
        return None
    allowed = parse_cpu_list(cpus_text)
    near = {i: parse_cpu_list(d.cpu_affinity or "") for i, d in ctx.devices.items()}
    if not near.get(used) or allowed & near[used] or all(allowed & c for c in near.values() if c):
        return None  # by its GPU, or free to run anywhere
    close = [i for i in order if allowed & near[i]]
    if not close:
        return None  # by none of its GPUs: a binding question, not the order's
    node = ctx.devices[used].numa_node
    return (
        f"{h.who}: CUDA_VISIBLE_DEVICES={h.env.get('CUDA_VISIBLE_DEVICES')}, LOCAL_RANK={rank}: "
        f"it uses GPU {used}" + (f" (NUMA node {node})" if node is not None else ""),
        f"its CPUs {cpus_text} sit by GPU {', '.join(str(i) for i in close)} of its list, not "
        "by the one it uses",
        "the CPU binding follows one order and CUDA_VISIBLE_DEVICES another: every copy "
        "between host and GPU crosses the socket interconnect",
    )


_ORDER_REMEDIES = (
    "Order CUDA_VISIBLE_DEVICES as the CPU binding assumes, or bind CPUs by GPU: srun "
    "--gpu-bind=closest, numactl --cpunodebind per LOCAL_RANK",
    "Check the CPU affinity of each GPU with nvidia-smi topo -m",
)


RULES = (
    Rule(
        RuleId.NO_CUDA_CACHING,
        CAUSE,
        "PYTORCH_NO_CUDA_MEMORY_CACHING in the GPU processes' (and doctor's own) environment",
        "set to anything but 0",
        "unset it; expandable_segments against fragmentation",
        no_cuda_caching,
        needs_history="",
    ),
    Rule(
        RuleId.DISTRIBUTED_DEBUG,
        CAUSE,
        "TORCH_DISTRIBUTED_DEBUG in the environment",
        "set to DETAIL",
        "unset it, or INFO",
        distributed_debug,
        needs_history="",
        never_claims="a cost for INFO, which adds little",
    ),
    Rule(
        RuleId.NCCL_P2P_OFF,
        CAUSE,
        "NCCL_P2P_DISABLE in the environment; P2P status and NVLinks between the GPUs of its "
        "launcher job (or the GPUs CUDA_VISIBLE_DEVICES names)",
        "set while two of those GPUs can read and write each other's memory (P2P OK both "
        "ways, or an NVLink)",
        "unset it; NCCL_P2P_LEVEL to limit paths",
        nccl_p2p_off,
        needs_history="",
        never_claims="anything for a single-GPU process, or where the GPUs have no direct path",
    ),
    Rule(
        RuleId.NCCL_IB_OFF,
        CAUSE,
        "NCCL_IB_DISABLE in the environment; active InfiniBand and RoCE ports "
        "(/sys/class/infiniband/*/ports/*/state), WORLD_SIZE and LOCAL_WORLD_SIZE",
        "set on a host with an active port (warning; info for a job known to run on one node)",
        "unset it; NCCL_IB_HCA to choose adapters",
        nccl_ib_off,
        needs_history="",
    ),
    Rule(
        RuleId.OMP_OVERSUBSCRIBED,
        CAUSE,
        "OMP_NUM_THREADS in the environment; the threads of the job's processes and workers "
        "(/proc/PID/stat), the CPUs its cpuset or affinity allows",
        "unset, with >= {t.omp_min_workers} workers, and more than "
        "{t.omp_threads_per_cpu:g} threads per CPU",
        "OMP_NUM_THREADS to the cores per process; single-threaded workers",
        omp_oversubscribed,
        needs_history="",
        never_claims="oversubscription where OMP_NUM_THREADS is set (its value is the user's "
        "choice)",
    ),
    Rule(
        RuleId.VISIBLE_DEVICES_ORDER,
        CAUSE,
        "CUDA_VISIBLE_DEVICES, LOCAL_RANK and CUDA_DEVICE_ORDER in the environment; the "
        "process's allowed CPUs and each GPU's CPU affinity; the GPU models",
        "a pinned process uses a GPU away from its CPUs while another GPU of its list sits "
        "by them (warning); numeric CUDA_VISIBLE_DEVICES on a node of mixed GPU models "
        "without CUDA_DEVICE_ORDER=PCI_BUS_ID (info)",
        "order the list as the binding assumes, or bind by GPU; CUDA_DEVICE_ORDER=PCI_BUS_ID",
        visible_devices_order,
        needs_history="",
        never_claims="a problem for a process free to run on every CPU",
    ),
)
