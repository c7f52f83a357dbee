"""Cause 1 before it throttles: a fan that does not cool.

NVML reports the speed the driver asks of a board's fan (``fan_pct``) and, from R535, the
first fan's measured speed (``fan_rpm``). A fan held at 0 % while the board is hot, or
warm and heating under load, is a fan control fault (a manual setting left at 0, a stuck
zero-RPM mode, a broken curve); a fan asked to turn whose tachometer reads 0 RPM is a
fan that has failed or is blocked; a fan held at a low speed while a hot board keeps
heating is a control that does not follow the temperature (a fixed speed set by hand).
Consumer boards stop their fans at idle on purpose
(zero-RPM mode, up to about 50-60 °C), and passively cooled data-centre boards have no fan
reading at all: both are calm.
"""

from __future__ import annotations

from collections.abc import Iterator

from gputui.advisor import evidence
from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.core.judgement import Undecided, not_offered
from gputui.core.model import DeviceInfo, GpuSample
from gputui.core.names import Metric, RuleId, Severity
from gputui.core.units import fmt_duration


def _lowest_limit(ctx: Context, device: DeviceInfo) -> tuple[float, str]:
    """The board's lowest GPU temperature limit and its name, or the advisor's fixed hot
    figure where the board reports none."""
    limits = [
        (limit, name)
        for limit, name in (
            (device.temp_gpu_max_c, "max operating"),
            (device.temp_slowdown_c, "slowdown"),
        )
        if limit is not None
    ]
    return min(limits) if limits else (ctx.t.hot_temp_c, "hot")


def fan_remedies(index: int | str, kind: str) -> tuple[str, ...]:
    """What to do about a fan fault of this kind on GPU ``index`` (the engine's form
    passes its GPU label's template)."""
    first = (
        (
            "See who holds the fans: nvidia-settings -q GPUFanControlState (1: a speed "
            "set by hand); give them back to the driver: nvidia-settings -a "
            "GPUFanControlState=0",
            "Tools that set fan curves (coolgpus, nvidia-settings scripts, fan control "
            "daemons) may have stopped or pinned it: end them",
        )
        if kind != DEAD
        else (
            f"The fan is asked to turn and does not: look at GPU {index}'s fan (a failed "
            "bearing, a loose or unplugged fan cable, something blocking the blades)",
            "Replace the fan or the card before it throttles; until then keep its load low",
        )
    )
    return (
        *first,
        "Watch it: nvidia-smi --query-gpu=index,fan.speed,temperature.gpu "
        "--format=csv -l 5 (gputui's fan column shows the same)",
        "Check the case airflow too: a board that relies on its own fan has no chassis fan "
        "to save it",
    )


#: what is wrong with a fan: stopped, held at a low speed, asked to turn and not turning
STOPPED, HELD, DEAD = "stopped", "held", "dead"
FAN_TITLES = {
    STOPPED: "Fan stopped on a hot board: it will throttle, then shut down",
    HELD: "Fan held low on a heating board: its control does not follow the temperature",
    DEAD: "Fan not turning though the driver asks it to: it has failed or is blocked",
}


def _offered(ctx: Context, sample: GpuSample, device: DeviceInfo) -> bool:
    """Whether the board reports a fan; a board that says it has none is said not to
    apply (a reading merely missing, as from a remote exporter, is left unsaid)."""
    if sample.fan_pct is not None:
        return True
    if "fan_pct" in not_offered(sample, device):
        ctx.cannot_judge(
            RuleId.FAN_FAULT,
            sample.index,
            "this board reports no fan (passively cooled: the chassis fans cool it, "
            "thermal-hot judges its heat)",
            Undecided.NOT_OFFERED,
        )
    return False


def _fault(ctx: Context, sample: GpuSample, device: DeviceInfo) -> tuple[str, list[str]] | None:
    """(what is wrong, what shows it) for a fan that does not cool; None for one that does."""
    t, index = ctx.t, sample.index
    fan = ctx.stats(index, Metric.FAN_PCT)
    temp = ctx.stats(index, Metric.TEMP_C, t.hot_mean_s)
    if fan is None or temp is None:
        return None
    rpm = ctx.stats(index, Metric.FAN_RPM)
    trend = ctx.stats(index, Metric.TEMP_C)
    per_min = 60 * trend.slope_per_s if trend and trend.slope_per_s is not None else 0.0
    limit, name = _lowest_limit(ctx, device)
    span = fmt_duration(fan.span_s)
    hot = temp.mean >= limit - t.fan_hot_margin_c
    where = (
        f"at {temp.mean:.0f} °C, {limit - temp.mean:.0f} °C from the board's {name} "
        f"temperature ({limit:.0f} °C)"
    )
    lines = [evidence.temperature(sample, device)]
    if fan.max <= t.fan_stopped_pct and (rpm is None or rpm.max <= 0):
        heating = temp.mean >= t.fan_stop_max_c and per_min >= t.fan_rising_c_min
        if not hot and not (heating and ctx.under_load(index) is not False):
            return None  # a zero-RPM fan stop: cool enough to need no fan
        kind = STOPPED
        lines.append(
            f"fan held at {fan.max:.0f} % for {span} {where}"
            + (", the tachometer at 0 RPM" if rpm is not None else "")
        )
        lines.append(
            f"a zero-RPM fan stop holds fans off at idle up to about {t.fan_stop_max_c:.0f} °C, "
            "never on a hot board"
        )
    elif rpm is not None and fan.mean >= t.fan_asked_pct and rpm.max <= 0:
        kind = DEAD
        lines.append(
            f"fan asked to turn at {fan.mean:.0f} % for {span}, its tachometer at 0 RPM: the "
            "fan does not spin"
        )
    elif hot and per_min >= t.fan_rising_c_min and fan.max <= t.fan_low_pct:
        kind = HELD
        low, high = round(fan.min), round(fan.max)
        speed = f"{low} %" if low == high else f"{low}-{high} %"
        lines.append(
            f"fan at {speed} for {span} {where}, while the board heats: a driver's own fan "
            "curve runs faster than this on a board this hot"
        )
    else:
        return None
    if trend is not None and trend.slope_per_s is not None:
        lines.append(f"temperature trend {per_min:+.1f} °C/min over the last {span}")
    return kind, lines


def fan_fault(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for sample, device in ctx.samples():
        if not _offered(ctx, sample, device):
            continue
        found = _fault(ctx, sample, device)
        if found is None:
            continue
        kind, lines = found
        temp = ctx.stats(sample.index, Metric.TEMP_C, t.hot_mean_s)
        near = temp is not None and temp.mean >= _lowest_limit(ctx, device)[0] - t.hot_margin_c
        yield Candidate(
            rule=RuleId.FAN_FAULT,
            severity=Severity.CRITICAL if near else Severity.WARNING,
            gpu=sample.index,
            title=FAN_TITLES[kind],
            evidence=tuple(lines),
            remedies=fan_remedies(sample.index, kind),
        )


RULES = (
    Rule(
        RuleId.FAN_FAULT,
        "1 thermal",
        "the fan speed the driver asks for (%), the first fan's tachometer (RPM, R535+), "
        "temperature ({t.hot_mean_s:g} s mean) and its trend against the board's lowest "
        "limit, the load",
        "on a board that reports a fan: the fan at or below {t.fan_stopped_pct:g} % through "
        "the last {t.window_s:g} s (the tachometer at 0 RPM where read) while within "
        "{t.fan_hot_margin_c:g} °C of the board's lowest limit, or above "
        "{t.fan_stop_max_c:g} °C and rising >= {t.fan_rising_c_min:g} °C/min under load; or "
        "the fan asked to turn at >= {t.fan_asked_pct:g} % while its tachometer reads 0 RPM; "
        "or held at <= {t.fan_low_pct:g} % while within {t.fan_hot_margin_c:g} °C of the "
        "limit and rising >= {t.fan_rising_c_min:g} °C/min; critical within "
        "{t.hot_margin_c:g} °C of the limit",
        "give fan control back to the driver (nvidia-settings GPUFanControlState=0), end fan "
        "tools, look at the fan itself",
        fan_fault,
        never_claims="a fault on a passively cooled board (no fan reading) or a zero-RPM "
        "fan stop at idle (cool, not heating under load); that the tachometer is right where "
        "the driver does not report one",
    ),
)
