"""Cause 2 of the article: memory. VRAM exhaustion, host memory spill, idle holders."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

from gputui.advisor.context import Context, gib
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.core.config import Thresholds
from gputui.core.judgement import Undecided
from gputui.core.model import GpuSample, ProcessSample
from gputui.core.names import HostMetric, Metric, RuleId, Severity
from gputui.core.records import frozen
from gputui.core.units import fmt_duration

VRAM_REMEDIES = (
    "Lower the batch size; keep the effective batch with gradient accumulation",
    "Use mixed precision (torch.autocast with bf16/fp16): about half the activations",
    "Turn on gradient (activation) checkpointing",
    "Reduce fragmentation: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
)
# Memory that keeps growing step after step is most often held on purpose by the program:
# find what holds it before shrinking the batch.
LEAK_REMEDIES = (
    "Find what holds the memory: torch.cuda.memory._record_memory_history() early in the "
    "run, then torch.cuda.memory._dump_snapshot('snap.pickle') and open it at "
    "pytorch.org/memory_viz",
    "Usual causes: tensors kept across steps (losses appended without .item(), outputs "
    "kept for logging), caches that grow with every new shape, retain_graph=True",
    "torch.cuda.memory_summary() every few hundred steps shows which allocations grow",
    "If the model needs the memory: a smaller batch with gradient accumulation, bf16 "
    "autocast, activation checkpointing",
)


@frozen
class _Vram:
    """One GPU's memory over the window, as both VRAM rules read it."""

    share: float  # % of the total, short mean
    used: float
    total: int
    sampled_s: float
    rate: float | None  # bytes/s while it grows (sustained and lately), else None
    # how the work went, worked out only for a GPU at its ceiling (the one rule that asks)
    util_drop: float | None  # utilisation points lost lately, where known
    stalled: float  # share of the window's ticks at or below the idle level
    util_recent: float | None
    #: the memory moved lately (``vram_moved_s``: it reached the ceiling, or the allocator
    #: gave blocks back and took them again): flat at the ceiling is a reserve, and a
    #: pause in its work (a checkpoint, an evaluation) no memory pressure
    moved: bool
    host_filling: str | None  # host memory or swap filling in step, in words

    @property
    def to_full_s(self) -> float | None:
        if self.rate is None:
            return None
        return max(0.0, self.total - self.used) / self.rate


def _vram(ctx: Context, sample: GpuSample) -> _Vram | None:
    """One GPU's VRAM verdict, worked out once per judgement: three rules ask for it."""
    key = ("vram", sample.index)
    if key not in ctx.shared:
        ctx.shared[key] = _work_out_vram(ctx, sample)
    return cast("_Vram | None", ctx.shared[key])


def _work_out_vram(ctx: Context, sample: GpuSample) -> _Vram | None:
    t = ctx.t
    used = ctx.stats(sample.index, Metric.MEM_USED, t.vram_mean_s)
    if used is None or not sample.mem_total:
        return None
    long = ctx.stats(sample.index, Metric.MEM_USED, t.vram_growth_s)
    # "Still growing": over the last quarter of the window too, so a step at start-up
    # (the allocator's first reservations) followed by a plateau is not growth.
    recent = ctx.stats(sample.index, Metric.MEM_USED, max(t.judge_min_s, t.vram_growth_s / 4))
    rate = None
    if (
        long is not None
        and recent is not None
        and long.span_s >= t.judge_min_s
        # risen by half the growth rate over the window first: the slopes cost a pass each
        and long.last - long.first >= t.vram_growth_bps * long.span_s / 2
    ):
        slope, lately = long.slope_per_s, recent.slope_per_s
        if (
            slope is not None
            and lately is not None
            and slope >= t.vram_growth_bps
            and lately >= t.vram_growth_bps
        ):
            rate = lately
    share = 100.0 * used.mean / sample.mem_total
    util_drop = util_recent = None
    stalled = 0.0
    moved = False
    if share >= t.vram_critical_pct:  # how the work went matters only at the ceiling
        held = ctx.stats(sample.index, Metric.MEM_USED, max(t.vram_moved_s, t.vram_growth_s))
        moved = held is None or held.max - held.min >= t.vram_moved_pct / 100 * sample.mem_total
        ticks = ctx.history.window(sample.index, Metric.UTIL_GPU, t.vram_growth_s)
        recent_n = len(ctx.history.window(sample.index, Metric.UTIL_GPU, t.judge_min_s))
        earlier = ticks[:-recent_n] if recent_n else ticks
        if recent_n >= t.min_points and len(earlier) >= t.min_points:
            util_recent = sum(ticks[-recent_n:]) / recent_n
            util_drop = sum(earlier) / len(earlier) - util_recent
        window = ctx.history.window(sample.index, Metric.UTIL_GPU, t.window_s)
        if len(window) >= t.min_points:
            stalled = sum(1 for u in window if u <= t.starved_idle_util_pct) / len(window)
    return _Vram(
        stalled=stalled,
        share=share,
        used=used.last,
        total=sample.mem_total,
        sampled_s=long.span_s if long is not None else used.span_s,
        rate=rate,
        util_drop=util_drop,
        util_recent=util_recent,
        moved=moved,
        # only a nearly full GPU is judged by it; the host's trend is one for every GPU
        host_filling=_host_filling(ctx) if share >= t.vram_warning_pct else None,
    )


def _host_filling(ctx: Context) -> str | None:
    if "host_filling" not in ctx.shared:
        ctx.shared["host_filling"] = _work_out_host_filling(ctx)
    return cast("str | None", ctx.shared["host_filling"])


def _work_out_host_filling(ctx: Context) -> str | None:
    host = ctx.frame.host
    if host is None or not host.mem_total:
        return None
    t = ctx.t
    swap = ctx.history.host_stats(HostMetric.SWAP_USED, t.window_s)
    if (
        swap is not None
        and swap.count >= t.min_points
        and swap.last > 0
        and swap.slope_per_s is not None
        and swap.slope_per_s >= t.swap_growth_bps
    ):
        return f"host swap growing {swap.slope_per_s / 1e6:.1f} MB/s ({gib(swap.last)} used)"
    available = ctx.history.host_stats(HostMetric.MEM_AVAILABLE, t.window_s)
    if (
        available is not None
        and available.count >= t.min_points
        and available.slope_per_s is not None
        and available.slope_per_s <= -t.swap_growth_bps
        and 100.0 * available.last / host.mem_total < 2 * t.host_available_pct
    ):
        return (
            f"host memory available falling {-available.slope_per_s / 1e6:.1f} MB/s, "
            f"{gib(available.last)} left"
        )
    return None


def _holders(ctx: Context, gpu: int) -> list[str]:
    lines = []
    for proc in sorted(ctx.processes(gpu), key=lambda p: -(p.gpu_memory or 0))[:3]:
        if proc.gpu_memory:
            who = f"{proc.name or 'process'}" + (f" ({proc.user})" if proc.user else "")
            lines.append(f"pid {proc.pid} {who} holds {gib(proc.gpu_memory)}")
    return lines


def _judged_gpus(ctx: Context) -> Iterator[tuple[GpuSample, _Vram]]:
    for sample, _device in ctx.samples():
        if not ctx.processes(sample.index) and ctx.under_load(sample.index) is not True:
            continue  # nothing runs on it: its memory is nobody's problem
        vram = _vram(ctx, sample)
        if vram is not None:
            yield sample, vram


def _at_ceiling_and_falling(v: _Vram, t: Thresholds) -> bool:
    if v.share < t.vram_critical_pct or not v.moved:
        return False
    dropped = v.util_drop is not None and v.util_drop >= t.vram_util_drop_pct
    return dropped or v.stalled >= t.starved_idle_fraction


def vram_pressure(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for sample, v in _judged_gpus(ctx):
        lines = [
            f"{gib(v.used)} of {gib(v.total)} used ({v.share:.1f} %)",
        ]
        severity: Severity | None = None
        title = ""
        to_full = v.to_full_s
        # memory that grows while the GPU does no work is being loaded (weights, a KV
        # cache's reserve), not leaked step after step
        growing = (
            v.rate is not None
            and to_full is not None
            and to_full <= t.vram_full_warning_s
            and ctx.under_load(sample.index) is not False
        )
        if growing and v.rate is not None and to_full is not None:
            severity = Severity.CRITICAL if to_full <= t.vram_full_critical_s else Severity.WARNING
            title = "GPU memory growing toward full: out-of-memory errors ahead"
            lines.append(
                f"growing {gib(v.rate * 60)}/min over the last {fmt_duration(v.sampled_s)}: "
                f"full in about {fmt_duration(to_full)} at that rate"
            )
        elif _at_ceiling_and_falling(v, t):
            severity = Severity.CRITICAL
            title = "GPU memory at its ceiling while the GPU's work falls or stalls"
            if v.util_drop is not None and v.util_drop >= t.vram_util_drop_pct:
                lines.append(
                    f"utilisation fell {v.util_drop:.0f} points to {v.util_recent:.0f} % in the "
                    f"last {fmt_duration(t.judge_min_s)}"
                )
            if v.stalled >= t.starved_idle_fraction:
                lines.append(
                    f"the GPU stalled (<= {t.starved_idle_util_pct:g} %) in "
                    f"{100 * v.stalled:.0f} % of the last {fmt_duration(ctx.sampled_s())}"
                )
            lines.append("allocation retries, host fallbacks or OOM handling at the ceiling")
        elif v.share >= t.vram_warning_pct and v.host_filling is not None:
            severity = Severity.WARNING
            title = "GPU memory full while host memory fills in step: data spills to the host"
            lines.append(v.host_filling)
        if severity is None:
            continue
        lines += _holders(ctx, sample.index)
        yield Candidate(
            rule=RuleId.VRAM_PRESSURE,
            severity=severity,
            gpu=sample.index,
            title=title,
            evidence=tuple(lines),
            remedies=LEAK_REMEDIES if growing else VRAM_REMEDIES,
            # Growth shows only once it has lasted the growth window: a framework's warm-up
            # (the first steps, a compile) climbs for tens of seconds and then stays flat.
            hold_s=t.vram_growth_s if growing else None,
        )


def likely_allocator(procs: tuple[ProcessSample, ...]) -> str | None:
    """The framework allocator that explains a high, flat VRAM plateau, from the libraries
    the process mapped and its environment."""
    for proc in procs:
        env = dict(e.split("=", 1) for e in proc.env if "=" in e)
        libs = " ".join(proc.cuda_libraries).lower()
        command = (proc.command or "").lower()
        if "vllm" in command or "vllm" in libs:
            return (
                "vLLM reserves gpu_memory_utilization of the card (0.9 by default) for its KV cache"
            )
        if "XLA_PYTHON_CLIENT_PREALLOCATE" in env or "XLA_PYTHON_CLIENT_MEM_FRACTION" in env:
            if _off(env.get("XLA_PYTHON_CLIENT_PREALLOCATE")):
                return (
                    "JAX/XLA grows its memory pool on demand and keeps what it took "
                    "(XLA_PYTHON_CLIENT_PREALLOCATE=false)"
                )
            fraction = env.get("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.75")
            return f"JAX/XLA preallocates {fraction} of the card (XLA_PYTHON_CLIENT_* set)"
        if "xla_extension" in libs or "jaxlib" in libs:
            return "JAX/XLA preallocates 75 % of the card by default"
        if "TF_FORCE_GPU_ALLOW_GROWTH" in env or "libtensorflow" in libs:
            growth = env.get("TF_FORCE_GPU_ALLOW_GROWTH")
            if growth is not None and growth.strip().lower() == "true":
                return (
                    "TensorFlow grows its memory on demand and keeps what it took "
                    "(TF_FORCE_GPU_ALLOW_GROWTH=true)"
                )
            return (
                "TensorFlow maps nearly all GPU memory at start "
                f"(TF_FORCE_GPU_ALLOW_GROWTH={growth or 'unset'})"
            )
        if "PYTORCH_CUDA_ALLOC_CONF" in env or "libtorch_cuda" in libs or "libc10_cuda" in libs:
            conf = env.get("PYTORCH_CUDA_ALLOC_CONF")
            return "PyTorch's caching allocator keeps freed blocks reserved" + (
                f" (PYTORCH_CUDA_ALLOC_CONF={conf})" if conf else ""
            )
    return None


def _off(value: str | None) -> bool:
    """An environment switch turned off (JAX reads "false" and "0")."""
    return value is not None and value.strip().lower() in ("false", "0")


def vram_reserved(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for sample, v in _judged_gpus(ctx):
        if v.share < t.vram_warning_pct or v.rate is not None:
            continue
        if _at_ceiling_and_falling(v, t):
            continue  # pressure: the other rule says it
        if v.host_filling is not None:
            continue
        allocator = likely_allocator(ctx.processes(sample.index))
        lines = [
            f"{gib(v.used)} of {gib(v.total)} used ({v.share:.1f} %), flat over the last "
            f"{fmt_duration(v.sampled_s)}",
            allocator
            or "the allocator is not visible from here (libraries or environment unreadable)",
            "high and flat is how framework allocators work; pressure would be growth toward "
            "the total, or the ceiling reached while the GPU's work falls",
        ]
        yield Candidate(
            rule=RuleId.VRAM_RESERVED,
            severity=Severity.INFO,
            gpu=sample.index,
            title="GPU memory reserved by the framework: high and flat, not growing",
            evidence=tuple(lines),
            remedies=(
                "Nothing to do. To see real use: torch.cuda.memory_allocated() vs "
                "memory_reserved(), or jax.devices()[0].memory_stats()",
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
    # Linux swaps cold pages out while the page cache grows (a job streaming its dataset):
    # swap that grows with most memory available costs nothing; with little left it does
    short = available is not None and 100.0 * available / host.mem_total < 2 * t.host_available_pct
    swapping = (
        short
        and swap is not None
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
        title=(
            "Host memory exhausted: data spills to swap, everything slows"
            if low
            else "Host memory running out: pages go to swap, the job slows"
        ),
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
        # utilisation, or where the board gives none (MIG mode) the SM activity
        metric, name = Metric.UTIL_GPU, "utilisation"
        recent = ctx.stats(sample.index, metric)
        if recent is None and sample.util_gpu is None:
            metric, name = Metric.SM_ACTIVITY, "SM activity"
            recent = ctx.stats(sample.index, metric)
        if recent is None or recent.max > t.idle_util_pct:
            continue  # busy lately: no need to look at the long window
        util = ctx.stats(sample.index, metric, t.idle_allocated_s)
        if util is None or util.max > t.idle_util_pct:
            continue
        if util.span_s < 0.9 * t.idle_allocated_s:
            ctx.cannot_judge(
                RuleId.IDLE_ALLOCATED,
                sample.index,
                f"idle with memory held for {fmt_duration(util.span_s)}; needs "
                f"{fmt_duration(t.idle_allocated_s)} to call it abandoned",
                Undecided.PENDING,
            )
            continue
        lines = [f"no GPU work for {fmt_duration(util.span_s)} ({name} max {util.max:.0f} %)"]
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
        "VRAM used/total ({t.vram_mean_s:g} s mean), its growth over {t.vram_growth_s:g} s "
        "and over the last half of it, utilisation, host memory and swap, processes by memory",
        "with a process on the GPU or under load: memory growing >= {t.vram_growth_bps:mbps} "
        "over the window and lately while the GPU works, for {t.vram_growth_s:g} s, full "
        "within {t.vram_full_warning_s:g} s at that rate (warning; within "
        "{t.vram_full_critical_s:g} s critical); or >= {t.vram_critical_pct:g} % used, the "
        "memory moved by >= {t.vram_moved_pct:g} % of the total in the last "
        "{t.vram_moved_s:g} s, while utilisation fell >= {t.vram_util_drop_pct:g} points in "
        "the last {t.judge_min_s:g} s or stalled in >= {t.starved_idle_fraction:share} of the "
        "window (critical); or >= {t.vram_warning_pct:g} % while host memory or swap fills in "
        "step (warning)",
        "smaller batch + gradient accumulation, bf16/fp16 autocast, gradient checkpointing, "
        "expandable_segments",
        vram_pressure,
        needs_history="judge_min_s",
        needs=("mem_used", "mem_total"),
        never_claims="that high VRAM alone is a problem: PyTorch's cache, TF/JAX "
        "preallocation and vLLM hold 75-99 % on healthy jobs; no time-to-full unless it grows "
        "while the GPU works (loading weights is no leak); a pause (a checkpoint, an "
        "evaluation) of a job flat at the ceiling is no pressure",
    ),
    Rule(
        RuleId.VRAM_RESERVED,
        "2 VRAM",
        "VRAM used/total, its growth, the process's mapped libraries and allocator "
        "environment (PYTORCH_CUDA_ALLOC_CONF, XLA_PYTHON_CLIENT_*, TF_FORCE_GPU_ALLOW_GROWTH)",
        "info: >= {t.vram_warning_pct:g} % used, flat (no growth, no fall in utilisation, host "
        "memory steady): names the likely allocator",
        "nothing; to see real use, the framework's own memory statistics",
        vram_reserved,
        needs=("mem_used", "mem_total"),
        never_claims="a problem: it is the calm verdict on a framework's reserve",
    ),
    Rule(
        RuleId.HOST_MEMORY_PRESSURE,
        "2 VRAM / host",
        "host available memory, swap used and its growth",
        "available < {t.host_available_pct:g} % of host memory (critical), or swap in use and "
        "growing >= {t.swap_growth_bps:mbps} with less than twice that available (warning)",
        "smaller worker memory, shared/memory-mapped datasets, more RAM",
        host_memory_pressure,
        needs=("host.mem_available",),
    ),
    Rule(
        RuleId.IDLE_ALLOCATED,
        "—",
        "process GPU memory, utilisation over {t.idle_allocated_s:g} s",
        "a process holds >= {t.idle_allocated_bytes:gib} while utilisation stayed "
        "<= {t.idle_util_pct:g} % for {t.idle_allocated_s:g} s",
        "find the hung or finished job and end it",
        idle_allocated,
        needs=("util_gpu|sm_activity",),
        never_claims="that a job is hung before {t.idle_allocated_s:g} s of no work",
    ),
)
