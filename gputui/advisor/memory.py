"""Cause 2 of the article: memory. VRAM exhaustion, host memory spill, idle holders."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.advisor.context import Context, gib
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.names import HostMetric, Metric, RuleId, Severity
from gputui.units import fmt_duration


def vram_pressure(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for sample, _device in ctx.samples():
        used = ctx.stats(sample.index, Metric.MEM_USED, t.vram_mean_s)
        if used is None or not sample.mem_total:
            continue
        procs = ctx.processes(sample.index)
        if not procs and ctx.busy(sample.index) is None:
            continue
        share = 100.0 * used.mean / sample.mem_total
        if share < t.vram_warning_pct:
            continue
        severity: Severity = Severity.CRITICAL if share >= t.vram_critical_pct else Severity.WARNING
        lines = [f"{gib(used.mean)} of {gib(sample.mem_total)} used ({share:.1f} %)"]
        growth = ctx.stats(sample.index, Metric.MEM_USED, t.vram_growth_s)
        if growth is not None and growth.slope_per_s is not None and growth.slope_per_s > 1e6:
            rate = growth.slope_per_s
            left = max(0.0, sample.mem_total - used.last)
            lines.append(
                f"growing {gib(rate * 60)}/min: full in about "
                f"{fmt_duration(left / rate)} at that rate"
            )
        for proc in sorted(procs, key=lambda p: -(p.gpu_memory or 0))[:3]:
            if proc.gpu_memory:
                who = f"{proc.name or 'process'}" + (f" ({proc.user})" if proc.user else "")
                lines.append(f"pid {proc.pid} {who} holds {gib(proc.gpu_memory)}")
        yield Candidate(
            rule=RuleId.VRAM_PRESSURE,
            severity=severity,
            gpu=sample.index,
            title="GPU memory nearly full: out-of-memory errors or slow fallbacks ahead",
            evidence=tuple(lines),
            remedies=(
                "Lower the batch size; keep the effective batch with gradient accumulation",
                "Use mixed precision (torch.autocast with bf16/fp16): about half the activations",
                "Turn on gradient (activation) checkpointing",
                "Reduce fragmentation: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
            ),
        )


def host_memory_pressure(ctx: Context) -> Iterator[Candidate]:
    host = ctx.frame.host
    if host is None or not host.mem_total:
        return
    t = ctx.t
    lines: list[str] = []
    available = host.mem_available
    low = available is not None and 100.0 * available / host.mem_total < t.host_available_pct
    swap = ctx.history.host_stats(HostMetric.SWAP_USED, t.window_s)
    swapping = (
        swap is not None
        and swap.count >= t.min_points
        and swap.last > 0
        and swap.slope_per_s is not None
        and swap.slope_per_s >= t.swap_growth_bps
    )
    if not (low or swapping):
        return
    if available is not None:
        lines.append(
            f"{gib(available)} of {gib(host.mem_total)} host memory available "
            f"({100.0 * available / host.mem_total:.1f} %)"
        )
    if swap is not None and swap.slope_per_s is not None and swapping:
        lines.append(f"swap used {gib(swap.last)}, growing {swap.slope_per_s / 1e6:.1f} MB/s")
    yield Candidate(
        rule=RuleId.HOST_MEMORY_PRESSURE,
        severity=Severity.CRITICAL if low else Severity.WARNING,
        gpu=None,
        title="Host memory exhausted: data spills to swap, everything slows",
        evidence=tuple(lines),
        remedies=(
            "Reduce the data-loader workers' memory (fewer workers, smaller prefetch_factor)",
            "Avoid copying the dataset into every worker (memory-map it, or use shared memory)",
            "Add RAM, or lower the batch size",
        ),
    )


def idle_allocated(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for sample, _device in ctx.samples():
        holders = [
            p for p in ctx.processes(sample.index) if (p.gpu_memory or 0) >= t.idle_allocated_bytes
        ]
        if not holders:
            continue
        recent = ctx.stats(sample.index, Metric.UTIL_GPU)
        if recent is None or recent.max > t.idle_util_pct:
            continue  # busy lately: no need to look at the long window
        util = ctx.stats(sample.index, Metric.UTIL_GPU, t.idle_allocated_s)
        if util is None or util.span_s < 0.9 * t.idle_allocated_s or util.max > t.idle_util_pct:
            continue
        lines = [f"no GPU work for {fmt_duration(util.span_s)} (utilisation max {util.max:.0f} %)"]
        for proc in holders[:3]:
            who = proc.name or "process"
            if proc.user:
                who += f" ({proc.user})"
            lines.append(f"pid {proc.pid} {who} holds {gib(proc.gpu_memory or 0)}")
        yield Candidate(
            rule=RuleId.IDLE_ALLOCATED,
            severity=Severity.WARNING,
            gpu=sample.index,
            title="A process holds GPU memory but the GPU does nothing",
            evidence=tuple(lines),
            remedies=(
                "A hung or finished job may still hold the GPU: check it (py-spy dump --pid PID)",
                "End it if it is done, so others can use the GPU",
            ),
        )


RULES = (
    Rule(
        RuleId.VRAM_PRESSURE,
        "2 VRAM",
        "VRAM used/total ({t.vram_mean_s:g} s mean), its growth over {t.vram_growth_s:g} s, "
        "processes by memory",
        ">= {t.vram_warning_pct:g} % used (warning), >= {t.vram_critical_pct:g} % (critical), "
        "with a process on the GPU or under load",
        "smaller batch + gradient accumulation, bf16/fp16 autocast, gradient checkpointing, "
        "expandable_segments",
        vram_pressure,
    ),
    Rule(
        RuleId.HOST_MEMORY_PRESSURE,
        "2 VRAM / host",
        "host available memory, swap used and its growth",
        "available < {t.host_available_pct:g} % of host memory (critical), or swap in use and "
        "growing >= {t.swap_growth_bps:mbps}",
        "smaller worker memory, shared/memory-mapped datasets, more RAM",
        host_memory_pressure,
    ),
    Rule(
        RuleId.IDLE_ALLOCATED,
        "—",
        "process GPU memory, utilisation over {t.idle_allocated_s:g} s",
        "a process holds >= {t.idle_allocated_bytes:gib} while utilisation stayed "
        "<= {t.idle_util_pct:g} % for {t.idle_allocated_s:g} s",
        "find the hung or finished job and end it",
        idle_allocated,
    ),
)
