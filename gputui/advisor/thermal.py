"""Cause 1 of the article: heat. Throttling, running hot, and hardware slowdown."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.advisor import evidence
from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.core import clock_events as ce
from gputui.core.model import DeviceInfo
from gputui.core.names import Metric, RuleId, Severity
from gputui.core.numbers import median
from gputui.core.units import fmt_duration

COOLING = (
    "Check the server's airflow and fan curve; nothing may block the GPU's intake",
    "Clean dust from heatsinks, fans and filters",
    "Keep the room below 25 °C (77 °F)",
    "Leave space between GPUs in multi-GPU boxes; check blanking panels",
    "Old cards: renew the thermal paste / pads",
)


def _throttling(ctx: Context, index: int, device: DeviceInfo) -> tuple[bool, float | None]:
    share = ctx.fraction(index, ce.THERMAL_BITS)
    temp = ctx.stats(index, Metric.TEMP_C, ctx.t.hot_mean_s)
    slowdown = device.temp_slowdown_c
    over = temp is not None and slowdown is not None and temp.mean >= slowdown
    mem = ctx.stats(index, Metric.MEM_TEMP_C, ctx.t.hot_mean_s)
    mem_max = device.temp_mem_max_c
    over |= mem is not None and mem_max is not None and mem.mean >= mem_max
    return (share is not None and share >= ctx.t.thermal_fraction) or over, share


def _memory_hot(ctx: Context, index: int, device: DeviceInfo) -> tuple[str, bool] | None:
    """The HBM at its limit: 'memory (HBM) 94 °C, its maximum 95 °C', and whether the core
    is cool (then the memory alone is the cause, and the line says so)."""
    t = ctx.t
    mem = ctx.stats(index, Metric.MEM_TEMP_C, t.hot_mean_s)
    if mem is None or device.temp_mem_max_c is None:
        return None
    if mem.mean < device.temp_mem_max_c - t.hot_margin_c:
        return None
    text = f"memory (HBM) {mem.mean:.0f} °C, its maximum {device.temp_mem_max_c:.0f} °C"
    core = ctx.stats(index, Metric.TEMP_C, t.hot_mean_s)
    limits = _limits(device)
    if core is None or not limits or core.mean >= limits[0][0] - t.hot_margin_c:
        return text, False
    return (
        text + f": the memory is at its limit, not the core ({core.mean:.0f} °C, "
        f"{limits[0][1]} at {limits[0][0]:.0f} °C)",
        True,
    )


def _cooling(ctx: Context, index: int, memory: bool) -> tuple[str, ...]:
    """The cooling checks, this GPU's own first when it alone is hot (its peers on the same
    machine run cooler, so the room is not the cause), or what the hot ones share first
    when a few of them are."""
    t = ctx.t
    mine = ctx.stats(index, Metric.TEMP_C, t.hot_mean_s)
    device = ctx.devices.get(index)
    peers = [
        (other.index, stats.mean)
        for other, dev in ctx.samples()
        if other.index != index
        and (device is None or dev.node == device.node)
        and (stats := ctx.stats(other.index, Metric.TEMP_C, t.hot_mean_s)) is not None
    ]
    remedies: list[str] = []
    if mine is not None and peers:
        remedies += _few_hot(mine.mean, peers, t.lone_hot_gap_c)
    if memory:
        remedies.append(
            "The HBM heats with memory traffic: check the airflow over the memory stacks; "
            "a board whose memory runs hot while the core is cool may need service"
        )
    return (*remedies, *COOLING)


def _few_hot(mine: float, peers: list[tuple[int, float]], gap_c: float) -> list[str]:
    """This GPU alone, or a few of its peers with it, run hotter than the rest by
    ``gap_c``: the cause is where they sit, not the room. Half of them hot or more: nothing
    to single out."""
    cool = [temp for _, temp in peers if mine - temp >= gap_c]
    hot = [gpu for gpu, temp in peers if mine - temp < gap_c]
    if not cool or len(hot) + 1 >= len(cool):
        return []
    if not hot:
        return [
            f"Only this GPU is hot ({mine:.0f} °C, its {len(peers)} peer(s) "
            f"{median(cool):.0f} °C): check its own fan, slot and airflow path first (a "
            "blocked intake, a failed fan, a missing blanking panel beside it), the room last"
        ]
    named = ", ".join(str(gpu) for gpu in sorted(hot)[:6]) + (", ..." if len(hot) > 6 else "")
    return [
        f"{len(hot) + 1} of {len(peers) + 1} GPUs here are hot (this one {mine:.0f} °C, "
        f"with GPU{'s' if len(hot) > 1 else ''} {named}; the other {len(cool)} "
        f"{median(cool):.0f} °C): check what the hot ones share first (their place in the "
        "chassis, a fan or fan wall, the airflow path behind them), the room last"
    ]


def _load_lines(ctx: Context, index: int) -> tuple[bool, list[str]]:
    """Judge this GPU? Not when it is known to be idle; when its load is unknown (MIG
    mode: no utilisation) judge it anyway and say how load was read."""
    busy, how = ctx.load(index)
    return busy is not False, [how] if how else []


def thermal_throttle(ctx: Context) -> Iterator[Candidate]:
    for sample, device in ctx.samples():
        judge, load = _load_lines(ctx, sample.index)
        if not judge:
            continue
        throttling, share = _throttling(ctx, sample.index, device)
        if not throttling:
            continue
        hot_memory = _memory_hot(ctx, sample.index, device)
        only_memory = hot_memory is not None and hot_memory[1]
        lines = [evidence.temperature(sample, device)]
        if hot_memory is not None:  # the cause first when it is the memory alone
            lines.insert(0 if only_memory else 1, hot_memory[0])
        lines += evidence.clock_and_reasons(ctx, sample, device, ce.THERMAL_BITS, share)
        title = "Thermal throttling: the GPU slows itself down to cool off"
        if only_memory:
            title = "Thermal throttling: the HBM memory is at its temperature limit"
        yield Candidate(
            rule=RuleId.THERMAL_THROTTLE,
            severity=Severity.CRITICAL,
            gpu=sample.index,
            title=title,
            evidence=tuple(lines + load),
            remedies=_cooling(ctx, sample.index, only_memory),
        )


def _limits(device: DeviceInfo) -> list[tuple[float, str]]:
    """The board's own GPU temperature limits, lowest first."""
    limits = []
    if device.temp_gpu_max_c is not None:
        limits.append((device.temp_gpu_max_c, "max operating"))
    if device.temp_slowdown_c is not None:
        limits.append((device.temp_slowdown_c, "slowdown"))
    return sorted(limits)


def thermal_hot(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for sample, device in ctx.samples():
        judge, load = _load_lines(ctx, sample.index)
        if not judge:
            continue
        temp = ctx.stats(sample.index, Metric.TEMP_C, t.hot_mean_s)
        if temp is None:
            continue
        if _throttling(ctx, sample.index, device)[0]:
            continue
        target = device.temp_target_c
        hot_memory = _memory_hot(ctx, sample.index, device)
        if target is not None and temp.mean <= target + t.hot_margin_c and hot_memory is None:
            continue  # a board that regulates itself to its target: there by design
        limits = _limits(device)
        reasons: list[str] = []
        if limits:
            limit, name = limits[0]
            if temp.mean >= limit - t.hot_margin_c:
                gap = round(limit) - round(temp.mean)  # the figures as shown
                where = f"{gap} °C from" if gap > 0 else f"{-gap} °C above" if gap < 0 else "at"
                reasons.append(
                    f"{temp.mean:.0f} °C, {where} the board's {name} temperature ({limit:.0f} °C)"
                )
        elif temp.mean >= t.hot_temp_c:  # a board that reports no limit at all
            reasons.append(f"{temp.mean:.0f} °C and the board reports no temperature limit")
        margin = sample.temp_margin_c
        if margin is not None and margin <= t.hot_margin_c and not reasons:
            reasons.append(f"the driver's thermal margin is {margin:.0f} °C")
        only_memory = hot_memory is not None and hot_memory[1]
        if hot_memory is not None:
            reasons.insert(0, hot_memory[0])
        if not reasons:
            continue
        lines = [evidence.temperature(sample, device), *reasons]
        if only_memory:  # the cause first
            lines = [*reasons, evidence.temperature(sample, device)]
        trend = ctx.stats(sample.index, Metric.TEMP_C)
        if trend is not None and trend.slope_per_s is not None:
            per_min = round(60 * trend.slope_per_s, 1) + 0.0  # + 0.0: never "-0.0"
            lines.append(f"trend {per_min:+.1f} °C/min over the last {fmt_duration(trend.span_s)}")
        title = "Running hot: at the board's own temperature limit"
        if only_memory:
            title = "Running hot: the HBM memory is at its temperature limit"
        yield Candidate(
            rule=RuleId.THERMAL_HOT,
            severity=Severity.WARNING,
            gpu=sample.index,
            title=title,
            evidence=tuple(lines + load),
            remedies=_cooling(ctx, sample.index, only_memory),
        )


def hw_slowdown(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    bits = ce.HW_SLOWDOWN | ce.HW_POWER_BRAKE
    for sample, device in ctx.samples():
        known = ctx.history.known_reasons(sample.index, t.window_s)
        if len(known) < t.min_points:
            continue
        hits = [r for r in known if r & bits]
        if not hits:
            continue
        seen = ctx.sampled_s()
        tick_s = seen / max(1, len(known) - 1)
        # a reason bit is the state at one instant: a reading proves no time, two of the
        # source's own readings (a Prometheus scrape, an exporter's collection) do
        least_s = max(t.hw_slowdown_min_s, t.hw_slowdown_min_readings * max(tick_s, ctx.cadence_s))
        util = ctx.history.window(sample.index, Metric.UTIL_GPU, t.window_s)
        aligned = len(util) == len(known)
        if aligned:  # the share of the busy ticks, not of the window
            busy = [r for r, u in zip(known, util, strict=True) if u >= t.busy_util_pct]
        else:  # utilisation unreadable (MIG): the load over the window decides
            busy = known if ctx.under_load(sample.index) else []
        busy_hits = sum(1 for r in busy if r & bits)
        share = busy_hits / len(busy) if busy else 0.0
        held_s = busy_hits * tick_s
        occurred = 0
        for r in hits:
            occurred |= r
        names = ", ".join(ce.describe_reasons(occurred & bits))
        if busy and share >= t.hw_slowdown_fraction and held_s >= least_s:
            lines = evidence.clock_and_reasons(ctx, sample, device, bits, 0.0)
            lines.append(
                f"{names} in {100 * share:.0f} % of the busy time "
                f"({fmt_duration(held_s)} of the last {fmt_duration(seen)})"
            )
            severity = Severity.CRITICAL
            title = "Hardware slowdown under load: the board cuts its clocks (power or temperature)"
        elif len(hits) * tick_s >= least_s:
            lines = [
                f"{names} for {fmt_duration(len(hits) * tick_s)} of the last "
                f"{fmt_duration(seen)}, while the GPU was idle or nearly so"
            ]
            severity = Severity.INFO
            title = "Hardware slowdown while idle: no work lost now; watch it under load"
        else:
            continue  # a blip at a load change: the driver's reason is an instant
        yield Candidate(
            rule=RuleId.HW_SLOWDOWN,
            severity=severity,
            gpu=sample.index,
            title=title,
            evidence=tuple(lines),
            remedies=(
                "Check the power supply units and the GPU's power cables",
                "An external power brake signal (chassis / BMC) may be asserted: check the BMC log",
                "Check board and memory temperature; this is a hardware or chassis issue",
            ),
        )


RULES = (
    Rule(
        RuleId.THERMAL_THROTTLE,
        "1 thermal",
        "clock-event reasons, temperature, SM clock; load from utilisation (or, without it, "
        "SM activity or power)",
        "not idle, SW or HW thermal slowdown set in >= {t.thermal_fraction:share} of the last "
        "{t.window_s:g} s, or temperature at or above the slowdown threshold, or the memory "
        "(HBM) at or above its maximum; when the HBM is the one at its limit the finding names "
        "it, not the core",
        "airflow and fan curve, dust, room < 25 °C, GPU spacing, thermal paste",
        thermal_throttle,
        needs=("clock_reasons|temp_c",),
        never_claims="throttling on an idle GPU; a temperature alone below the board's slowdown",
    ),
    Rule(
        RuleId.THERMAL_HOT,
        "1 thermal",
        "temperature ({t.hot_mean_s:g} s mean) and its trend, the board's own limits (max "
        "operating, slowdown), the driver's thermal margin, memory (HBM) temperature and its "
        "maximum",
        "not idle, within {t.hot_margin_c:g} °C of the board's lowest GPU limit, or the "
        "driver's margin <= {t.hot_margin_c:g} °C, or HBM within {t.hot_margin_c:g} °C of its "
        "maximum; >= {t.hot_temp_c:g} °C only on a board that reports no limit; not yet "
        "throttling; a board at its own target temperature (GeForce) is left alone",
        "the same cooling checks, before it throttles",
        thermal_hot,
        needs=("temp_c",),
        never_claims="that a fixed figure is hot: consumer cards run in the 80s by design, "
        "judged against their own limits; a board at the target temperature it regulates to; "
        "the room as the first suspect when this GPU alone is hot",
    ),
    Rule(
        RuleId.HW_SLOWDOWN,
        "1 thermal / power",
        "clock-event reasons HW slowdown and HW power brake, per tick, against utilisation",
        "critical: set in >= {t.hw_slowdown_fraction:share} of the busy ticks of the last "
        "{t.window_s:g} s and for >= {t.hw_slowdown_min_s:g} s over >= "
        "{t.hw_slowdown_min_readings} of the source's readings; info: as long on an idle GPU",
        "power supply and cables, external power brake (BMC), board temperature",
        hw_slowdown,
        needs=("clock_reasons",),
        never_claims="a reason that did not occur in the window; a blip shorter than "
        "{t.hw_slowdown_min_s:g} s or seen in one reading (a reason bit is an instant, common "
        "at load changes; one scrape proves no time)",
    ),
)
