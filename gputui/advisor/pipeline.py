"""Cause 5 of the article: the software stack. Starved input, I/O waits, stragglers."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterator

from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.model import GpuSample, ProcessSample
from gputui.names import HostMetric, Metric, RuleId, Severity
from gputui.units import fmt_duration


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


def input_starved(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    host = ctx.frame.host
    for sample, procs, ticks in _working(ctx, t.window_s):
        idle = t.starved_idle_util_pct
        waiting = sum(1 for u in ticks if u <= idle) / len(ticks)
        mean = sum(ticks) / len(ticks)
        # Starving oscillates: it runs, waits, runs again. One start after idle is not it.
        bursts = sum(
            1 for a, b in itertools.pairwise(ticks) if a <= idle < t.starved_busy_util_pct <= b
        )
        busy_n, waiting_n, total_n = ctx.driver_counts(sample.index, t.window_s)
        stalls = ""
        if total_n >= 4 * len(ticks) and busy_n and waiting_n:
            # The driver's own samples see stalls between ticks that the average hides.
            share = waiting_n / total_n
            if share > waiting:
                waiting = share
                bursts = max(bursts, 2)
                stalls = f" ({waiting_n} of {total_n} driver utilisation samples idle)"
        if waiting < t.starved_idle_fraction or bursts < 2:
            continue
        # ~100 % of one core: the main Python thread is saturated (the GIL). A main process
        # well above one core is multithreaded (its own threads do the work): not that.
        bound = [p for p in procs if _gil_bound(p, t.cpu_bound_pct, t.cpu_bound_max_pct)]
        host_cpu = ctx.history.host_stats(HostMetric.CPU_PERCENT, t.window_s)
        host_saturated = host_cpu is not None and host_cpu.mean >= t.host_cpu_saturated_pct
        if not bound and not host_saturated:
            continue
        lines = [
            f"GPU utilisation mean {mean:.0f} %, at or below {t.starved_idle_util_pct:.0f} % "
            f"in {100 * waiting:.0f} % of the last {fmt_duration(ctx.sampled_s())}{stalls} "
            "(it waits for data)"
        ]
        for proc in bound[:2]:
            workers = (
                f", {proc.children} data-loader worker(s)" if proc.children is not None else ""
            )
            if proc.workers_cpu_percent is not None and proc.children:
                workers += f" using {proc.workers_cpu_percent:.0f} % CPU together"
            lines.append(
                f"pid {proc.pid} {proc.name or ''} at {proc.cpu_percent:.0f} % CPU "
                f"(one core: the Python GIL){workers}"
            )
        if host_cpu is not None and host is not None:
            lines.append(f"host CPU {host_cpu.mean:.0f} % of {host.cpu_count or '?'} cores")
        yield Candidate(
            rule=RuleId.INPUT_STARVED,
            severity=Severity.WARNING,
            gpu=sample.index,
            title="Input pipeline starves the GPU: it waits for the CPU between steps",
            evidence=tuple(lines),
            remedies=_starved_remedies(bound),
        )


def _gil_bound(proc: ProcessSample, low: float, high: float) -> bool:
    """The job's main process sits at one core while it starves the GPU; its workers (if
    any) do not carry the load: the process with its workers and threads counted."""
    main = proc.cpu_percent
    if main is None or not low <= main <= high:
        return False
    workers = proc.workers_cpu_percent
    # Workers that each burn a core are the bottleneck themselves, not the main's GIL:
    # then the host CPU gate (saturated) decides.
    return not (workers is not None and proc.children and workers >= low * proc.children)


def _starved_remedies(bound: list[ProcessSample]) -> tuple[str, ...]:
    remedies = [
        "DataLoader(num_workers=N): load and decode batches in worker processes",
        "pin_memory=True, prefetch_factor=4 and persistent_workers=True",
        "Decode faster (pillow-simd, DALI, pre-resized data); profile with torch.profiler",
    ]
    if bound and all(p.children == 0 for p in bound):
        remedies.insert(0, "The process has no data-loader workers: start with num_workers > 0")
    return tuple(remedies)


def io_bound(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    iowait = ctx.history.host_stats(HostMetric.IOWAIT_PCT, t.window_s)
    if iowait is None or iowait.count < t.min_points or iowait.mean < t.iowait_pct:
        return
    disk = ctx.history.host_stats(HostMetric.DISK_READ_BPS, t.window_s)
    for sample, _device in ctx.samples():
        if not ctx.processes(sample.index):
            continue
        util = ctx.stats(sample.index, Metric.UTIL_GPU)
        if util is None or util.mean >= t.io_bound_util_pct:
            continue
        lines = [
            f"GPU utilisation mean {util.mean:.0f} %",
            f"host iowait {iowait.mean:.0f} % over the last {fmt_duration(iowait.span_s)}",
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
        )


def job_of(proc: ProcessSample) -> tuple[str, ...] | None:
    """The distributed job a process is a rank of, from its launcher's environment; None
    for a process that is no rank of one (independent runs of one script are not peers)."""
    env = dict(e.split("=", 1) for e in proc.env if "=" in e)
    world = env.get("WORLD_SIZE") or env.get("OMPI_COMM_WORLD_SIZE") or env.get("PMI_SIZE")
    if world is not None and world.strip() in ("", "0", "1"):
        return None  # a world of one: nobody to wait for
    if "MASTER_ADDR" in env and "MASTER_PORT" in env:
        return ("torch", env["MASTER_ADDR"], env["MASTER_PORT"], world or "?")
    if "SLURM_JOB_ID" in env and "SLURM_STEP_ID" in env and world is not None:
        return ("slurm", env["SLURM_JOB_ID"], env["SLURM_STEP_ID"])
    if ("OMPI_COMM_WORLD_SIZE" in env or "PMI_SIZE" in env) and proc.ppid is not None:
        return ("mpi", str(proc.ppid), world or "?")
    return None


def straggler(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    measures: dict[int, tuple[float, float]] = {}
    jobs: dict[int, set[tuple[str, ...]]] = {}
    for sample, device in ctx.samples():
        busy = ctx.busy(sample.index)
        clock = ctx.stats(sample.index, Metric.SM_CLOCK_MHZ)
        keys = {k for k in (job_of(p) for p in ctx.processes(sample.index)) if k is not None}
        if busy is None or clock is None or not device.max_sm_clock_mhz or not keys:
            continue
        measures[sample.index] = (clock.mean / device.max_sm_clock_mhz, busy.mean)
        jobs[sample.index] = keys
    for index, (clock_share, util) in measures.items():
        peers = [i for i in measures if i != index and jobs[i] & jobs[index]]
        if not peers:
            continue
        peer_clock = statistics.median(measures[i][0] for i in peers)
        peer_util = statistics.median(measures[i][1] for i in peers)
        slow_clock = peer_clock - clock_share >= t.straggler_clock_gap
        slow_util = peer_util - util >= t.straggler_util_gap_pct
        if not (slow_clock or slow_util):
            continue
        lines = [
            f"SM clock {100 * clock_share:.0f} % of max vs {100 * peer_clock:.0f} % on its "
            f"{len(peers)} peer(s) (median)",
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
        )


def under_used(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    host = ctx.frame.host
    for sample, procs, ticks in _working(ctx, t.under_used_s):
        span = ctx.sampled_s(t.under_used_s)
        busy_n, _waiting_n, total_n = ctx.driver_counts(sample.index, t.under_used_s)
        if total_n >= 4 * len(ticks):
            share = busy_n / total_n
            how = (
                f"in {busy_n} of {total_n} of the driver's utilisation samples (stalls "
                "shorter than a tick included)"
            )
        else:
            share = sum(ticks) / len(ticks) / 100.0
            how = f"mean utilisation {100 * share:.0f} % per tick"
        if share >= t.under_used_busy_share:
            continue
        if span < 0.9 * t.under_used_s:
            ctx.cannot_judge(
                RuleId.UNDER_USED,
                sample.index,
                f"busy {100 * share:.0f} % so far; needs {fmt_duration(t.under_used_s)} of "
                f"history to call it under-used, has {fmt_duration(span)}",
            )
            continue
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
        host_cpu = f", host CPU {host.cpu_percent:.0f} %" if host and host.cpu_percent else ""
        yield Candidate(
            rule=RuleId.UNDER_USED,
            severity=Severity.INFO,
            gpu=sample.index,
            title="Under-used, cause not visible from here: the GPU waits on something",
            evidence=(
                f"busy {100 * share:.0f} % of the last {fmt_duration(span)}: {how}",
                "checked, and none explains it: thermal, power and clock limits, VRAM, PCIe "
                "link and traffic, input pipeline and storage"
                + (f" ({cpu}{host_cpu})" if cpu or host_cpu else ""),
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
        "GPU utilisation per tick, process CPU % and workers, host CPU",
        "with a process on the GPU, utilisation <= {t.starved_idle_util_pct:g} % in >= "
        "{t.starved_idle_fraction:share} of the last {t.window_s:g} s and rising from there to >= "
        "{t.starved_busy_util_pct:g} % at least twice (it runs, waits, runs), while a process on "
        "it uses {t.cpu_bound_pct:g}-{t.cpu_bound_max_pct:g} % CPU (one core: the GIL) or the "
        "host CPU >= {t.host_cpu_saturated_pct:g} %",
        "DataLoader num_workers, pin_memory, prefetch_factor, persistent_workers, faster "
        "decoding, torch.profiler",
        input_starved,
        needs=("util_gpu",),
        never_claims="a CPU cause for a process above {t.cpu_bound_max_pct:g} % (multithreaded: "
        "its threads and workers carry the load) unless the host CPU is saturated; a job "
        "starting on an idle GPU",
    ),
    Rule(
        RuleId.IO_BOUND,
        "5 software",
        "host iowait and disk reads, GPU utilisation",
        "with a process on the GPU, utilisation mean < {t.io_bound_util_pct:g} % while host "
        "iowait >= {t.iowait_pct:g} %",
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
        "under load, SM clock share (of max) lower by >= {t.straggler_clock_gap:share} or "
        "utilisation lower by >= {t.straggler_util_gap_pct:g} points than its peers' median",
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
        "last {t.under_used_s:g} s (share of driver samples above {t.sample_busy_pct:g} %, else "
        "mean utilisation) and no warning or critical finding explains it",
        "profile: torch.profiler, Nsight Systems (nsys profile)",
        under_used,
        needs_history="judge_min_s",
        needs=("util_gpu",),
        never_claims="a cause: only that the GPU waits and where to look",
    ),
)
