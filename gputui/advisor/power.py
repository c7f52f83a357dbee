"""Power: capping at the limit, a lowered limit, and application clocks held down."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.advisor import evidence
from gputui.advisor.context import Context, smi_target
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.core import clock_events as ce
from gputui.core.config import Thresholds
from gputui.core.model import DeviceInfo
from gputui.core.names import Metric, RuleId, Severity
from gputui.core.units import fmt_duration


def _heat(ctx: Context, index: int, device: DeviceInfo) -> str | None:
    """Why the capped GPU is also hot, if it is: thermal reasons set, or the core or its
    memory at its board's limit (leakage rises with temperature: a hot board reaches its
    power limit at lower clocks)."""
    t = ctx.t
    share = ctx.fraction(index, ce.THERMAL_BITS)
    if share is not None and share >= t.thermal_fraction:
        return f"thermal slowdown set too, in {100 * share:.0f} % of the window"
    temp = ctx.stats(index, Metric.TEMP_C, t.hot_mean_s)
    limits = [x for x in (device.temp_gpu_max_c, device.temp_slowdown_c) if x is not None]
    if temp is not None and limits and temp.mean >= min(limits) - t.hot_margin_c:
        return f"{temp.mean:.0f} °C, at the board's limit ({min(limits):.0f} °C)"
    mem = ctx.stats(index, Metric.MEM_TEMP_C, t.hot_mean_s)
    mem_max = device.temp_mem_max_c
    if mem is not None and mem_max is not None and mem.mean >= mem_max - t.hot_margin_c:
        return f"memory {mem.mean:.0f} °C, at its maximum ({mem_max:.0f} °C)"
    return None


def power_cap(ctx: Context) -> Iterator[Candidate]:
    """At the power limit. On a board at its default limit under a heavy load that is the
    board working as designed (H100/H200 training sits at 700 W): info, with the figures.
    A warning needs a cause to act on: a limit below the default, capping together with
    heat, or clocks far below what the board holds at its limit."""
    t = ctx.t
    for sample, device in ctx.samples():
        if ctx.under_load(sample.index) is False:
            continue
        share = ctx.fraction(sample.index, ce.SW_POWER_CAP)
        power = ctx.stats(sample.index, Metric.POWER_W)
        limit = ctx.stats(sample.index, Metric.POWER_LIMIT_W)
        if share is None or power is None or limit is None or limit.mean <= 0:
            continue
        if share < t.power_cap_fraction or power.mean < t.power_at_limit * limit.mean:
            continue
        lines = [
            f"power {power.mean:.0f} W of the {limit.mean:.0f} W enforced limit "
            f"({100 * power.mean / limit.mean:.0f} %)"
        ]
        default = device.power_default_limit_w
        heat = _heat(ctx, sample.index, device)
        lowered = _lowered(default, limit.mean, t)
        causes = _cap_causes(ctx, sample.index, device, lowered, heat)
        lines += causes
        lines += evidence.clock_and_reasons(ctx, sample, device, ce.SW_POWER_CAP, share)
        if causes:
            yield Candidate(
                rule=RuleId.POWER_CAP,
                severity=Severity.WARNING,
                gpu=sample.index,
                title="Power capped: clocks held down to stay within the power limit",
                evidence=tuple(lines),
                remedies=_cap_remedies(device, sample.index, heat is not None, lowered),
            )
            continue
        which = f"its {default:.0f} W default" if default is not None else "its"
        yield Candidate(
            rule=RuleId.POWER_CAP,
            severity=Severity.INFO,
            gpu=sample.index,
            title=f"At {which} power limit under a heavy load: normal for this board",
            evidence=(
                *lines,
                "no cause to act on: the limit is the default, the board is not hot, and the "
                "clocks are where a board at its limit holds them",
            ),
            remedies=(
                "Nothing to fix: a board under a heavy load spends its steps at its power limit "
                "by design",
                "A limit below the default, or capping together with heat, would be worth "
                "acting on: gputui says so when it sees one",
            ),
        )


def _lowered(default: float | None, limit_w: float, t: Thresholds) -> bool:
    """Whether an enforced limit is set below the board's default (by more than a watt's
    rounding)."""
    return default is not None and limit_w < default - t.limit_lowered_w


def _cap_causes(
    ctx: Context, index: int, device: DeviceInfo, lowered: bool, heat: str | None
) -> list[str]:
    """Why a capped board is worth acting on: a lowered limit, heat, or clocks far below
    what the board holds at its limit; [] for a board working as designed."""
    t = ctx.t
    causes = []
    if lowered:
        causes.append(f"the limit is lowered from the default {device.power_default_limit_w:.0f} W")
    if heat is not None:
        causes.append(f"capped while hot: {heat}")
    clock = ctx.stats(index, Metric.SM_CLOCK_MHZ)
    top = device.max_sm_clock_mhz
    if clock is not None and top and clock.mean < t.power_cap_clock_floor * top:
        causes.append(
            f"SM clock {clock.mean:.0f} MHz, under {t.power_cap_clock_floor:.0%} of its "
            f"{top} MHz maximum: far below what the board holds at its limit"
        )
    return causes


def _cap_remedies(device: DeviceInfo, index: int, hot: bool, lowered: bool) -> tuple[str, ...]:
    """What to do for a capped board: the limit restored where it is lowered (a root
    command that changes nothing is no remedy at the default), the board cooled where it is
    hot (then first: that is the cause), the power delivery checked."""
    where, number = smi_target(device, index)
    default = device.power_default_limit_w
    check = f"{where}Check the limit: nvidia-smi -i {number} -q -d POWER"
    if lowered:
        check += f"; restore the default (root): sudo nvidia-smi -i {number} -pl {default:.0f}"
    remedies = [check]
    if hot:
        remedies.insert(
            0,
            "Cool the board: a hot GPU leaks more power and reaches its limit at lower "
            "clocks (airflow, fan curve, inlet temperature)",
        )
    remedies.append("Check the power delivery (PSU, cables) if clocks stay low at the limit")
    return tuple(remedies)


def power_limit_lowered(ctx: Context) -> Iterator[Candidate]:
    for sample, device in ctx.samples():
        default = device.power_default_limit_w
        enforced = sample.power_limit_w
        if default is None or enforced is None or not _lowered(default, enforced, ctx.t):
            continue
        where, number = smi_target(device, sample.index)
        yield Candidate(
            rule=RuleId.POWER_LIMIT_LOWERED,
            severity=Severity.WARNING,
            gpu=sample.index,
            title="Power limit set below the card's default",
            evidence=(
                f"enforced limit {enforced:.0f} W, default {default:.0f} W "
                f"({100 * (enforced / default - 1):+.0f} %)",
            ),
            remedies=(
                f"{where}Restore it (needs root): sudo nvidia-smi -i {number} -pl {default:.0f}",
                "Check for a startup script, a datacenter power policy or DCGM that lowers it",
            ),
        )


def clocks_limited(ctx: Context) -> Iterator[Candidate]:
    for sample, device in ctx.samples():
        if ctx.under_load(sample.index) is False:
            continue
        # The applications-clocks reason bit is not evidence on its own: drivers set it on
        # busy GPUs running at their (default) application clocks, and NVML deprecates the
        # applications-clocks API. A setting below the default is what limits the clocks.
        default = device.default_app_sm_clock_mhz
        current = sample.app_sm_clock_mhz
        lowered = (
            default is not None
            and current is not None
            and current < ctx.t.app_clock_lowered * default
        )
        if not lowered:
            continue
        share = ctx.fraction(sample.index, ce.APPLICATIONS_CLOCKS)
        lines = []
        if current is not None and default is not None:
            lines.append(f"application SM clock {current} MHz, default {default} MHz")
        lines += evidence.clock_and_reasons(ctx, sample, device, ce.APPLICATIONS_CLOCKS, share)
        where, number = smi_target(device, sample.index)
        yield Candidate(
            rule=RuleId.CLOCKS_LIMITED,
            severity=Severity.WARNING,
            gpu=sample.index,
            title="Clocks limited by an application-clocks or locked-clocks setting",
            evidence=tuple(lines),
            remedies=(
                f"{where}Reset application clocks (needs root): sudo nvidia-smi -i {number} -rac",
                f"{where}Reset locked GPU clocks (needs root): sudo nvidia-smi -i {number} -rgc",
            ),
        )


def clocks_held(ctx: Context) -> Iterator[Candidate]:
    """Busy, with the SM clock far below its maximum, and no reason the driver names: what
    locked clocks (nvidia-smi -lgc) or a limit from outside the GPU (the chassis or BMC, a
    datacenter power policy) look like. The rules that name a cause (power cap, thermal,
    HW slowdown) say theirs."""
    t = ctx.t
    for sample, device in ctx.samples():
        top = device.max_sm_clock_mhz
        if not top:
            continue
        busy = ctx.busy(sample.index)
        if busy is None or busy.mean < t.held_busy_pct:
            continue
        clock = ctx.stats(sample.index, Metric.SM_CLOCK_MHZ)
        if clock is None or clock.mean >= t.held_clock_share * top:
            continue
        named = ctx.fraction(sample.index, ce.NAMED_CAUSES)
        if named is None or named > t.held_named_share:
            continue  # the reasons unknown, or a cause named: its own rule says it
        where, number = smi_target(device, sample.index)
        known = len(ctx.history.known_reasons(sample.index, t.window_s))
        lines = [
            f"SM clock {clock.mean:.0f} / {top} MHz max ({100 * clock.mean / top:.0f} %) while "
            f"busy (utilisation {busy.mean:.0f} %) over the last {fmt_duration(clock.span_s)}",
            f"the driver names no cause in {round((1 - named) * known)} of {known} readings: "
            "no power cap, thermal or hardware slowdown, power brake or sync boost",
        ]
        if sample.app_sm_clock_mhz is not None:
            lines.append(f"application SM clock {sample.app_sm_clock_mhz} MHz")
        yield Candidate(
            rule=RuleId.CLOCKS_HELD,
            severity=Severity.WARNING,
            gpu=sample.index,
            title="SM clock held far below its maximum, and the driver names no reason",
            evidence=tuple(lines),
            remedies=(
                f"{where}See what holds it: nvidia-smi -i {number} -q -d CLOCK,PERFORMANCE "
                "(locked or application clocks, the clock-event reasons)",
                f"{where}Locked clocks: reset them (root): sudo nvidia-smi -i {number} -rgc; "
                f"application clocks: sudo nvidia-smi -i {number} -rac",
                "No lock set: a limit from outside the GPU holds it (the chassis or BMC power "
                "capping, a datacenter power policy): check the BMC's power and thermal logs",
            ),
        )


RULES = (
    Rule(
        RuleId.POWER_CAP,
        "power",
        "clock-event reasons (SW power cap), power draw, enforced limit, SM clock",
        "not idle, SW power cap set in >= {t.power_cap_fraction:share} of the last "
        "{t.window_s:g} s and power >= {t.power_at_limit:share} of the limit: a warning when "
        "the limit is below the default, the board is hot too (thermal reasons, or within "
        "{t.hot_margin_c:g} °C of its limits) or the SM clock is under "
        "{t.power_cap_clock_floor:share} of its maximum; else info (a board at its default "
        "limit under heavy load works as designed)",
        "nothing at the default limit; else restore the limit, cool the board, check power "
        "delivery",
        power_cap,
        needs=("clock_reasons", "power_w", "power_limit_w"),
        never_claims="a problem from a board at its default limit under a heavy load (H100/H200 "
        "training sits at 700 W); a cap from the reason bit alone: power must sit at the "
        "limit too",
    ),
    Rule(
        RuleId.POWER_LIMIT_LOWERED,
        "3 configuration",
        "enforced and default power limits",
        "enforced limit more than {t.limit_lowered_w:g} W below the default (any load)",
        "restore with nvidia-smi -pl <default> (root)",
        power_limit_lowered,
        needs_history="",
        needs=("power_limit_w", "power_default_limit_w"),
        never_claims="that a limit set on purpose is wrong: it names the limit and the way back",
    ),
    Rule(
        RuleId.CLOCKS_LIMITED,
        "3 configuration",
        "application vs default SM clock (the applications-clocks reason as context only)",
        "not idle, application clocks below {t.app_clock_lowered:share} of default",
        "nvidia-smi -rac / -rgc (root)",
        clocks_limited,
        needs=("app_sm_clock_mhz",),
        never_claims="anything from the applications-clocks reason bit alone: drivers set it "
        "on busy GPUs at their default clocks",
    ),
    Rule(
        RuleId.CLOCKS_HELD,
        "3 configuration / outside limit",
        "utilisation, SM clock against its maximum, clock-event reasons over the window",
        "utilisation >= {t.held_busy_pct:g} % and the SM clock under "
        "{t.held_clock_share:share} of its maximum over the last {t.window_s:g} s, while the "
        "driver names no cause (power cap, thermal, HW slowdown, power brake, sync boost, "
        "idle) in more than {t.held_named_share:share} of the readings: locked clocks or a "
        "limit from outside the GPU",
        "nvidia-smi -q -d CLOCK,PERFORMANCE; -rgc / -rac (root); the BMC's power capping",
        clocks_held,
        needs=("sm_clock_mhz", "max_sm_clock_mhz", "clock_reasons", "util_gpu"),
        never_claims="a held clock where the driver names a cause (power-cap, thermal-throttle "
        "and hw-slowdown say those), or where the reasons are not read at all",
    ),
)
