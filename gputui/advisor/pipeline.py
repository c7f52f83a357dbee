"""Cause 5 of the article: the software stack. Starved input, I/O waits, stragglers."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from functools import lru_cache

from gputui.advisor.context import Context, ProcessCpu
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.advisor.work import spin
from gputui.core.judgement import Undecided
from gputui.core.model import GpuSample, HostSample, ProcessSample
from gputui.core.names import HostMetric, Metric, RuleId, Severity
from gputui.core.numbers import median
from gputui.core.records import frozen
from gputui.core.units import fmt_duration


def _working(
    ctx: Context, seconds: float
) -> Iterator[tuple[GpuSample, tuple[ProcessSample, ...], list[float]]]:
    """Each GPU with a process on it and enough utilisation readings over ``seconds``
    (none in MIG mode: the coverage says so), with its processes and those readings."""
    for sample, _device in ctx.samples():
        procs = ctx.processes(sample.index)
        if not procs:
            continue
        ticks = ctx.history.window(sample.index, Metric.UTIL_GPU, seconds)
        if len(ticks) >= ctx.t.min_points:
            yield sample, procs, ticks


@frozen
class _Shortfall:
    """A GPU that works but waits: how busy it was over the window, and how that reads."""

    mean: float  # mean utilisation per tick
    lines: tuple[str, ...]


def _shortfall(ctx: Context, index: int, ticks: Sequence[float]) -> _Shortfall | None:
    """The GPU runs (not idle) yet waits for a good part of the window, tick after tick (a
    steady shortfall) or in bursts (it runs, waits, runs): the shape of a starved job. One
    long gap among full ticks (a checkpoint, an evaluation) is neither."""
    t = ctx.t
    mean = sum(ticks) / len(ticks)
    if not t.starved_running_pct <= mean < t.starved_fed_pct:
        return None
    short = sum(1 for u in ticks if u < t.full_util_pct) / len(ticks)
    idle = t.starved_idle_util_pct
    waiting = sum(1 for u in ticks if u <= idle) / len(ticks)
    bursts = sum(
        1 for a, b in itertools.pairwise(ticks) if a <= idle < t.starved_busy_util_pct <= b
    )
    steady = short >= t.starved_short_share
    bursty = waiting >= t.starved_idle_fraction and bursts >= 2
    if not steady and not bursty:
        return None
    span = fmt_duration(ctx.sampled_s())
    lines = [
        f"GPU busy {mean:.0f} % of the last {span} (utilisation per tick {min(ticks):.0f}-"
        f"{max(ticks):.0f} %, below {t.full_util_pct:.0f} % in {100 * short:.0f} % of the "
        "ticks): it waits between steps"
    ]
    driver = ctx.driver_mean(index, t.window_s)
    if driver is not None and driver[1] >= 2 * len(ticks):
        _busy_n, waiting_n, total_n = ctx.driver_counts(index, t.window_s)
        lines.append(
            f"the driver's own samples agree: mean {driver[0]:.0f} % over {total_n} samples, "
            f"{waiting_n} of them idle"
        )
    activity = ctx.stats(index, Metric.SM_ACTIVITY)
    if activity is not None:
        lines.append(f"SM activity {activity.mean:.0f} % (GPM) over the same window")
    return _Shortfall(mean, tuple(lines))


@frozen
class _Cause:
    """What on the CPU side keeps the GPU waiting, in words, with what to change."""

    kind: str  # "workers", "main", "host"
    lines: tuple[str, ...]
    remedies: tuple[str, ...]


def _who(proc: ProcessSample) -> str:
    return f"pid {proc.pid} {proc.name or ''}".rstrip()


def _host_saturated(ctx: Context) -> tuple[bool, str | None]:
    """Whether every host core is busy (CPU share or run queue), and the line that says it."""
    t = ctx.t
    host = ctx.frame.host
    cpu = ctx.history.host_stats(HostMetric.CPU_PERCENT, t.window_s)
    queue = ctx.history.host_stats(HostMetric.RUN_QUEUE, t.window_s)
    cores = host.cpu_count if host is not None else None
    if cpu is None:
        return False, None
    line = f"host CPU {cpu.mean:.0f} % busy over {cores or '?'} cores"
    if queue is not None:
        line += f", run queue {queue.mean:.0f}"
    saturated = cpu.mean >= t.host_cpu_saturated_pct or (
        queue is not None and cores is not None and queue.mean > t.run_queue_per_cpu * cores
    )
    return saturated, line


_LOADER = (
    "pin_memory=True, prefetch_factor=4 and persistent_workers=True in the DataLoader",
    "Profile a few steps (torch.profiler): the gaps before each step are the wait for data",
)


def _cpu_cause(ctx: Context, procs: Sequence[ProcessSample]) -> _Cause | None:
    """Which CPU-side cause keeps the GPU waiting: its data-loader workers all busy, the
    main process loading every batch itself (num_workers=0), or a host whose every core is
    taken."""
    t = ctx.t
    saturated, host_line = _host_saturated(ctx)
    host_lines = (host_line,) if host_line else ()
    for proc in procs:
        cpu = ctx.cpu_of(proc.pid)
        if cpu is None or cpu.main_pct is None:
            continue
        each, working = cpu.per_worker_pct, cpu.working
        if each is not None and each >= t.worker_saturated_pct and working:
            return _workers_cause(proc, cpu, round(working), host_lines, saturated)
        if cpu.main_pct >= t.cpu_bound_pct and not working:
            # (A busy main process beside working loaders says nothing: a CUDA program
            # spins a core while it waits for the GPU, and copies, so it reads ~100 %.)
            return _main_cause(proc, cpu.main_pct, host_lines)
    pressed = _pressed(ctx, procs) if saturated and host_line is not None else None
    if pressed is not None and host_line is not None:
        # host-wide load alone is no evidence: a job whose processes rest (a server
        # between requests) waits on something else, whatever else keeps the cores busy
        lines = (host_line + ": other work takes the cores the job's loading needs", pressed)
        remedies = (
            "See what else runs: top -o %CPU; move it off this node or give the job its own "
            "cores (cgroups, taskset, the scheduler's CPU allocation)",
            "Keep OMP_NUM_THREADS / torch.set_num_threads small in each worker",
        )
        return _Cause("host", lines, remedies)
    return None


def _pressed(ctx: Context, procs: Sequence[ProcessSample]) -> str | None:
    """The job's own evidence that it loads on the CPU while the host is full: its working
    loaders at ``starved_loader_pct`` of a core each or more, or its main process without
    any at ``starved_main_pct``."""
    t = ctx.t
    for proc in procs:
        cpu = ctx.cpu_of(proc.pid)
        if cpu is None or cpu.main_pct is None:
            continue
        each, working = cpu.per_worker_pct, cpu.working
        if each is not None and working and each >= t.starved_loader_pct:
            return (
                f"{_who(proc)}: {round(working)} data-loader worker(s) working at {each:.0f} "
                "% of a core each: the job loads, on what the full host leaves it"
            )
        if not working and cpu.main_pct >= t.starved_main_pct:
            return (
                f"{_who(proc)} at {cpu.main_pct:.0f} % CPU with no data-loader workers: the "
                "job loads, on what the full host leaves it"
            )
    return None


def _workers_cause(
    proc: ProcessSample, cpu: ProcessCpu, n: int, host_lines: tuple[str, ...], full: bool
) -> _Cause:
    lines = (
        f"{_who(proc)}: {n} data-loader worker{'s' if n != 1 else ''} at "
        f"{cpu.per_worker_pct:.0f} % of a core each ({cpu.workers_pct:.0f} % together): they "
        "cannot make batches as fast as the GPU uses them",
        *host_lines,
    )
    if full:
        remedies: tuple[str, ...] = (
            "Every host core is busy: more workers will not help. Make each batch cheaper to "
            "produce: decode and resize once, offline; GPU-side decoding and augmentation "
            "(NVIDIA DALI, torchvision.io.decode_jpeg on the GPU)",
            "Or give the job more CPU cores per GPU (a larger instance, fewer jobs per node)",
            *_LOADER,
        )
    else:
        remedies = (
            f"Raise DataLoader num_workers (now {n}): the host has idle cores",
            "Make each sample cheaper: pre-resized or pre-decoded data, lighter "
            "augmentation, GPU-side augmentation (DALI)",
            *_LOADER,
        )
    return _Cause("workers", lines, remedies)


def _main_cause(proc: ProcessSample, main_pct: float, host_lines: tuple[str, ...]) -> _Cause:
    lines = (
        f"{_who(proc)} at {main_pct:.0f} % CPU with no data-loader workers "
        "(num_workers=0): the training process does its own loading between steps, and "
        "the GPU waits meanwhile",
        *host_lines,
    )
    remedies = (
        "Load in worker processes: DataLoader(num_workers=N) with N about the CPU cores per GPU",
        *_LOADER,
        "Not a data loader (an RL environment, a server)? torch.profiler shows the host "
        "work between the steps",
    )
    return _Cause("main", lines, remedies)


_TITLES = {
    "workers": "Input pipeline starves the GPU: its data-loader workers cannot keep up",
    "main": "Input pipeline starves the GPU: the training process loads every batch itself",
    "host": "Input pipeline starves the GPU: the host's CPUs are all taken",
}


def input_starved(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for sample, procs, ticks in _working(ctx, t.window_s):
        short = _shortfall(ctx, sample.index, ticks)
        if short is None:
            continue
        cause = _cpu_cause(ctx, [p for p in procs if p.visible])
        if cause is None:
            continue
        yield Candidate(
            rule=RuleId.INPUT_STARVED,
            severity=Severity.WARNING,
            gpu=sample.index,
            title=_TITLES[cause.kind],
            evidence=short.lines + cause.lines,
            remedies=cause.remedies,
        )


#: CPUs in iowait that count, however few loaders a GPU has (one is noise on any host)
_LEAST_WAITING = 2.0


def io_bound(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    iowait = ctx.history.host_stats(HostMetric.IOWAIT_PCT, t.window_s)
    if iowait is None or iowait.count < t.min_points:
        return
    host = ctx.frame.host
    cpus = host.cpu_count if host is not None and host.cpu_count else None
    # iowait is a share of every CPU: 8 loaders blocked on reads are 6 % of 128 CPUs
    waiting = iowait.mean / 100 * cpus if cpus else 0.0
    if iowait.mean < t.iowait_pct and waiting < _LEAST_WAITING:
        return  # no GPU's loaders can be waiting: the per-GPU test below, once for all
    disk = ctx.history.host_stats(HostMetric.DISK_READ_BPS, t.window_s)
    for sample, procs, ticks in _working(ctx, t.window_s):
        workers = sum(p.children or 0 for p in procs)
        least = max(_LEAST_WAITING, t.iowait_workers_share * workers)
        if iowait.mean < t.iowait_pct and waiting < least:
            continue
        short = _shortfall(ctx, sample.index, ticks)
        if short is None or short.mean >= t.io_bound_util_pct:
            continue
        lines = [
            *short.lines,
            f"host iowait {iowait.mean:.0f} %"
            + (f" of {cpus} CPUs (about {waiting:.0f} waiting)" if cpus else "")
            + f" over the last {fmt_duration(iowait.span_s)}: the CPUs wait for storage",
        ]
        if disk is not None:
            lines.append(f"disk reads {disk.mean / 1e6:.0f} MB/s")
        yield Candidate(
            rule=RuleId.IO_BOUND,
            severity=Severity.WARNING,
            gpu=sample.index,
            title="Waiting on storage: the CPU waits for I/O, the GPU for data",
            evidence=tuple(lines),
            remedies=(
                "Copy the dataset to local NVMe or cache it in RAM",
                "Read with more workers in parallel",
                "Use sharded / streaming formats (WebDataset, TFRecord, MosaicML streaming)",
            ),
            hold_s=t.window_s,  # iowait swings with each read burst: a window of it first
            end_s=t.window_s,
        )


def job_of(proc: ProcessSample) -> tuple[str, ...] | None:
    """The distributed job a process is a rank of, from its launcher's environment; None
    for a process that is no rank of one (independent runs of one script are not peers)."""
    return _job_of(proc.env, proc.ppid)


@lru_cache(maxsize=1024)  # asked of every process every judgement; both rarely change
def _job_of(environment: tuple[str, ...], ppid: int | None) -> tuple[str, ...] | None:
    env = dict(e.split("=", 1) for e in environment if "=" in e)
    world = env.get("WORLD_SIZE") or env.get("OMPI_COMM_WORLD_SIZE") or env.get("PMI_SIZE")
    if world is not None and world.strip() in ("", "0", "1"):
        return None  # a world of one: nobody to wait for
    if "MASTER_ADDR" in env and "MASTER_PORT" in env:
        return ("torch", env["MASTER_ADDR"], env["MASTER_PORT"], world or "?")
    if "SLURM_JOB_ID" in env and "SLURM_STEP_ID" in env and world is not None:
        return ("slurm", env["SLURM_JOB_ID"], env["SLURM_STEP_ID"])
    if ("OMPI_COMM_WORLD_SIZE" in env or "PMI_SIZE" in env) and ppid is not None:
        return ("mpi", str(ppid), world or "?")
    return None


def straggler(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    # (SM clock share, utilisation) of each rank; the clock only where the GPU is busy (an
    # idle GPU's clock says nothing), the utilisation however low: the worst rank idles
    measures: dict[int, tuple[float | None, float]] = {}
    jobs: dict[int, set[tuple[str, ...]]] = {}
    # peers busy without work (waiting in a collective) set no pace to fall behind: an
    # idle rank beside them is the one they wait for (collective-hang), no straggler
    spinning: set[int] = set()
    for sample, device in ctx.samples():
        used = ctx.stats(sample.index, Metric.UTIL_GPU)
        clock = ctx.stats(sample.index, Metric.SM_CLOCK_MHZ)
        keys = {k for k in (job_of(p) for p in ctx.processes(sample.index)) if k is not None}
        if used is None or clock is None or not device.max_sm_clock_mhz or not keys:
            continue
        busy = used.mean >= t.busy_util_pct
        share = clock.mean / device.max_sm_clock_mhz if busy else None
        measures[sample.index] = (share, used.mean)
        jobs[sample.index] = keys
        if busy and spin(ctx, sample, device) is not None:
            spinning.add(sample.index)
    for index, (clock_share, util) in measures.items():
        peers = [i for i in measures if i != index and jobs[i] & jobs[index]]
        clocks = [c for i in peers if (c := measures[i][0]) is not None]
        if not clocks:
            continue  # no busy peer (or none at all): nobody waits for this GPU
        peer_clock = median(clocks)
        peer_util = median(measures[i][1] for i in peers)
        working = [measures[i][1] for i in peers if i not in spinning]
        pace = median(working) if working else 0.0  # the working peers' utilisation
        slow_clock = clock_share is not None and peer_clock - clock_share >= t.straggler_clock_gap
        slow_util = pace - util >= t.straggler_util_gap_pct and pace >= t.busy_util_pct
        if not (slow_clock or slow_util):
            continue
        mine = f"{100 * clock_share:.0f} % of max" if clock_share is not None else "idle"
        lines = [
            f"SM clock {mine} vs {100 * peer_clock:.0f} % on its {len(peers)} peer(s) (median)",
            f"utilisation {util:.0f} % vs {peer_util:.0f} % on its peers",
            f"peers: ranks of the same launcher job ({' '.join(sorted(jobs[index])[0])}), "
            f"over the last {fmt_duration(ctx.sampled_s())}",
        ]
        yield Candidate(
            rule=RuleId.STRAGGLER,
            severity=Severity.WARNING,
            gpu=index,
            title="Straggler: this GPU is slower than the other ranks of its job",
            evidence=tuple(lines),
            remedies=(
                f"Fix GPU {index}'s own cause first (see its other findings): a data-parallel "
                "job runs at the pace of its slowest GPU",
                "Check that every rank gets the same amount of work (uneven shards, sequence "
                "lengths)",
            ),
            # ranks drift apart for seconds as batches differ: a straggler holds a window
            hold_s=t.window_s,
        )


def _below(share: float, limit: float) -> int:
    """A share under ``limit`` as a whole percentage that reads under it too (49.7 % is
    "49 %", never the "50 %" it would round to beside "below 50 %")."""
    return min(round(100 * share), math.ceil(100 * limit) - 1)


def _cpu_seen(procs: Sequence[ProcessSample], host: HostSample | None) -> str:
    """The GPU's processes' CPU (and their workers') and the host's, as under-used says
    what it checked."""
    cpu = ", ".join(
        f"pid {p.pid} at {p.cpu_percent:.0f} % CPU"
        + (
            f" with {p.children} worker(s) at {p.workers_cpu_percent:.0f} %"
            if p.children and p.workers_cpu_percent is not None
            else ""
        )
        for p in procs[:2]
        if p.cpu_percent is not None
    )
    host_cpu = f"host CPU {host.cpu_percent:.0f} %" if host and host.cpu_percent else ""
    return ", ".join(part for part in (cpu, host_cpu) if part)


def under_used(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    host = ctx.frame.host
    for sample, procs, ticks in _working(ctx, t.under_used_s):
        span = ctx.sampled_s(t.under_used_s)
        driver = ctx.driver_mean(sample.index, t.under_used_s)
        if driver is not None and driver[1] >= 4 * len(ticks):
            share = driver[0] / 100.0
            how = (
                f"the mean of {driver[1]} of the driver's utilisation samples (stalls "
                "shorter than a tick included)"
            )
        else:
            share = sum(ticks) / len(ticks) / 100.0
            how = ""
        if not share < t.under_used_busy_share:  # a NaN or infinite reading too
            continue
        how = how or f"mean utilisation {_below(share, t.under_used_busy_share)} % per tick"
        if 100 * share <= t.idle_util_pct:
            continue  # no work at all: idle (with memory held, idle-allocated says so)
        if span < 0.9 * t.under_used_s:
            ctx.cannot_judge(
                RuleId.UNDER_USED,
                sample.index,
                f"busy {100 * share:.0f} % so far; needs {fmt_duration(t.under_used_s)} of "
                f"history to call it under-used, has {fmt_duration(span)}",
                Undecided.PENDING,
            )
            continue
        seen = _cpu_seen(procs, host)
        yield Candidate(
            rule=RuleId.UNDER_USED,
            severity=Severity.INFO,
            gpu=sample.index,
            title="Under-used, cause not visible from here: the GPU waits on something",
            evidence=(
                f"busy {_below(share, t.under_used_busy_share)} % of the last "
                f"{fmt_duration(span)}: {how}",
                "checked, and none explains it: thermal, power and clock limits, VRAM, PCIe "
                "link and traffic, input pipeline and storage" + (f" ({seen})" if seen else ""),
            ),
            remedies=(
                "Profile a few steps: torch.profiler.profile(schedule=..., "
                "on_trace_ready=tensorboard_trace_handler(...)); look at the gaps between kernels",
                "Or Nsight Systems: nsys profile -t cuda,nvtx,osrt python train.py (gaps on the "
                "CUDA row are the waits)",
                "Usual hidden causes: host syncs (.item(), .cpu(), logging every step), "
                "launch-bound small kernels (CUDA graphs, torch.compile), collective waits",
            ),
        )


RULES = (
    Rule(
        RuleId.INPUT_STARVED,
        "5 software",
        "GPU utilisation per tick and the driver's samples between ticks, SM activity (GPM); "
        "each GPU process's CPU and its data-loader workers' over the window; host CPU and "
        "run queue",
        "with a process on the GPU, mean utilisation over the last {t.window_s:g} s between "
        "{t.starved_running_pct:g} % and {t.starved_fed_pct:g} % and below "
        "{t.full_util_pct:g} % in >= {t.starved_short_share:share} of the ticks (or idle in >= "
        "{t.starved_idle_fraction:share} of them, rising above {t.starved_busy_util_pct:g} % at "
        "least twice), while the CPU side is at its limit: its working data-loader workers at "
        ">= {t.worker_saturated_pct:g} % of a core each, or its main process at >= "
        "{t.cpu_bound_pct:g} % with no working workers (num_workers=0), or the host >= "
        "{t.host_cpu_saturated_pct:g} % busy or more runnable threads than cores while the "
        "job's own loaders still work (>= {t.starved_loader_pct:g} % of a core each; its "
        "main process without any >= {t.starved_main_pct:g} %); the finding names which",
        "num_workers (or cheaper batches when the host is full), pin_memory, prefetch_factor, "
        "persistent_workers, GPU-side decoding, torch.profiler",
        input_starved,
        needs=("util_gpu",),
        never_claims="starvation on an idle GPU or one that runs flat out; from one long gap "
        "among full ticks (a checkpoint, an evaluation); from a busy main process beside "
        "working loaders (a CUDA program spins a core while it waits for the GPU or a copy); "
        "from host-wide load alone, while the job's own processes rest (a server between "
        "requests: the host's load is context, not its cause); "
        "a CPU cause the CPU readings do not show (under-used then says the GPU waits on "
        "something not visible from here)",
    ),
    Rule(
        RuleId.IO_BOUND,
        "5 software",
        "host iowait and disk reads, GPU utilisation per tick",
        "with a process on the GPU, a starved shape (as input-starved) with mean utilisation "
        "< {t.io_bound_util_pct:g} % while host iowait >= {t.iowait_pct:g} %, or (a share of "
        "every CPU: small on a big host) as many CPUs waiting as "
        "{t.iowait_workers_share:share} of the GPU's data-loader workers, 2 at least",
        "local NVMe or RAM cache, more workers, sharded/streaming formats",
        io_bound,
        needs=("util_gpu", "host.iowait_pct"),
    ),
    Rule(
        RuleId.STRAGGLER,
        "1-5",
        "SM clock (share of max) and utilisation of GPUs whose processes are ranks of one "
        "launcher job (MASTER_ADDR/MASTER_PORT/WORLD_SIZE, SLURM_JOB_ID/SLURM_STEP_ID, MPI "
        "world with a common parent)",
        "for {t.window_s:g} s: under load, SM clock share (of max) lower by >= "
        "{t.straggler_clock_gap:share} than its busy peers' median; or, however idle, "
        "utilisation lower by >= {t.straggler_util_gap_pct:g} points than its peers' median "
        "while they are busy (>= {t.busy_util_pct:g} %)",
        "fix that GPU's own cause: the whole job runs at its speed",
        straggler,
        needs=("sm_clock_mhz", "max_sm_clock_mhz", "util_gpu"),
        never_claims="a straggler between processes that are no ranks of one launcher job "
        "(a hyperparameter sweep of independent runs, same user and script, is not)",
    ),
    Rule(
        RuleId.UNDER_USED,
        "5 software",
        "GPU utilisation per tick and the driver's own samples between ticks "
        "(nvmlDeviceGetSamples), processes on the GPU, every other rule's verdict",
        "info: with a process on the GPU, busy less than {t.under_used_busy_share:share} of the "
        "last {t.under_used_s:g} s (the mean of the driver's samples, else of the ticks) and no "
        "warning or critical finding explains it",
        "profile: torch.profiler, Nsight Systems (nsys profile)",
        under_used,
        needs=("util_gpu",),
        never_claims="a cause: only that the GPU waits and where to look",
    ),
)
