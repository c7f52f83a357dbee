"""Cause 5 of the article: the software stack. Starved input, I/O waits, stragglers."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterator

from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.model import ProcessSample
from gputui.names import HostMetric, Metric, RuleId, Severity
from gputui.units import fmt_duration


def input_starved(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    host = ctx.frame.host
    for sample, _device in ctx.samples():
        procs = ctx.processes(sample.index)
        if not procs:
            continue
        ticks = ctx.history.window(sample.index, Metric.UTIL_GPU, t.window_s)
        if len(ticks) < t.min_points:
            continue
        idle = t.starved_idle_util_pct
        waiting = sum(1 for u in ticks if u <= idle) / len(ticks)
        mean = sum(ticks) / len(ticks)
        # Starving oscillates: it runs, waits, runs again. One start after idle is not it.
        bursts = sum(
            1 for a, b in itertools.pairwise(ticks) if a <= idle < t.starved_busy_util_pct <= b
        )
        if waiting < t.starved_idle_fraction or bursts < 2:
            continue
        # ~100 % of one core: the main Python thread is saturated (the GIL)
        bound = [p for p in procs if t.cpu_bound_pct <= (p.cpu_percent or 0) <= t.cpu_bound_max_pct]
        host_cpu = ctx.history.host_stats(HostMetric.CPU_PERCENT, t.window_s)
        host_saturated = host_cpu is not None and host_cpu.mean >= t.host_cpu_saturated_pct
        if not bound and not host_saturated:
            continue
        lines = [
            f"GPU utilisation mean {mean:.0f} %, at or below {t.starved_idle_util_pct:.0f} % "
            f"in {100 * waiting:.0f} % of the last {fmt_duration(t.window_s)} (it waits for data)"
        ]
        for proc in bound[:2]:
            workers = (
                f", {proc.children} data-loader worker(s)" if proc.children is not None else ""
            )
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


def _job(proc: ProcessSample) -> tuple[str | None, str] | None:
    """Processes of one data-parallel job share a user and a program (script)."""
    if not proc.command:
        return None
    head = " ".join(proc.command.split()[:2])
    return (proc.user, head)


def straggler(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    measures: dict[int, tuple[float, float]] = {}
    jobs: dict[int, set[tuple[str | None, str]]] = {}
    for sample, device in ctx.samples():
        busy = ctx.busy(sample.index)
        clock = ctx.stats(sample.index, Metric.SM_CLOCK_MHZ)
        keys = {k for k in (_job(p) for p in ctx.processes(sample.index)) if k is not None}
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
        ]
        yield Candidate(
            rule=RuleId.STRAGGLER,
            severity=Severity.WARNING,
            gpu=index,
            title="Straggler: this GPU is slower than its peers in the same job",
            evidence=tuple(lines),
            remedies=(
                f"Fix GPU {index}'s own cause first (see its other findings): a data-parallel "
                "job runs at the pace of its slowest GPU",
                "Check that every rank gets the same amount of work (uneven shards, sequence "
                "lengths)",
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
    ),
    Rule(
        RuleId.IO_BOUND,
        "5 software",
        "host iowait and disk reads, GPU utilisation",
        "with a process on the GPU, utilisation mean < {t.io_bound_util_pct:g} % while host "
        "iowait >= {t.iowait_pct:g} %",
        "local NVMe or RAM cache, more workers, sharded/streaming formats",
        io_bound,
    ),
    Rule(
        RuleId.STRAGGLER,
        "1-5",
        "SM clock (share of max) and utilisation of GPUs running the same program",
        "under load, SM clock share (of max) lower by >= {t.straggler_clock_gap:share} or "
        "utilisation lower by >= {t.straggler_util_gap_pct:g} points than its peers' median",
        "fix that GPU's own cause: the whole job runs at its speed",
        straggler,
    ),
)
