"""Cause 1 of the article: heat. Throttling, running hot, and hardware slowdown."""

from __future__ import annotations

from collections.abc import Iterator

from gputui import clock_events as ce
from gputui.advisor import evidence
from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.names import Metric, RuleId, Severity

COOLING = (
    "Check the server's airflow and fan curve; nothing may block the GPU's intake",
    "Clean dust from heatsinks, fans and filters",
    "Keep the room below 25 °C (77 °F)",
    "Leave space between GPUs in multi-GPU boxes; check blanking panels",
    "Old cards: renew the thermal paste / pads",
)


def _throttling(ctx: Context, index: int, slowdown: float | None) -> tuple[bool, float | None]:
    share = ctx.fraction(index, ce.THERMAL_BITS)
    temp = ctx.stats(index, Metric.TEMP_C, ctx.t.hot_mean_s)
    over = temp is not None and slowdown is not None and temp.mean >= slowdown
    return (share is not None and share >= ctx.t.thermal_fraction) or over, share


def thermal_throttle(ctx: Context) -> Iterator[Candidate]:
    for sample, device in ctx.samples():
        if ctx.busy(sample.index) is None:
            continue
        throttling, share = _throttling(ctx, sample.index, device.temp_slowdown_c)
        if not throttling:
            continue
        lines = [evidence.temperature(sample, device)]
        lines += evidence.clock_and_reasons(ctx, sample, device, ce.THERMAL_BITS, share)
        yield Candidate(
            rule=RuleId.THERMAL_THROTTLE,
            severity=Severity.CRITICAL,
            gpu=sample.index,
            title="Thermal throttling: the GPU slows itself down to cool off",
            evidence=tuple(lines),
            remedies=COOLING,
        )


def thermal_hot(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for sample, device in ctx.samples():
        if ctx.busy(sample.index) is None:
            continue
        temp = ctx.stats(sample.index, Metric.TEMP_C, ctx.t.hot_mean_s)
        if temp is None:
            continue
        slowdown = device.temp_slowdown_c
        near = slowdown is not None and temp.mean >= slowdown - t.hot_margin_c
        if not (temp.mean >= t.hot_temp_c or near):
            continue
        if _throttling(ctx, sample.index, slowdown)[0]:
            continue
        lines = [evidence.temperature(sample, device)]
        trend = ctx.stats(sample.index, Metric.TEMP_C)
        if trend is not None and trend.slope_per_s is not None:
            lines.append(
                f"trend {60 * trend.slope_per_s:+.1f} °C/min over the last {t.window_s:.0f} s"
            )
        if slowdown is not None and sample.temp_c is not None:
            lines.append(f"{slowdown - sample.temp_c:.0f} °C left before it throttles")
        yield Candidate(
            rule=RuleId.THERMAL_HOT,
            severity=Severity.WARNING,
            gpu=sample.index,
            title="Running hot: close to thermal throttling",
            evidence=tuple(lines),
            remedies=COOLING,
        )


def hw_slowdown(ctx: Context) -> Iterator[Candidate]:
    bits = ce.HW_SLOWDOWN | ce.HW_POWER_BRAKE
    for sample, device in ctx.samples():
        share = ctx.fraction(sample.index, bits)
        if share is None or share < ctx.t.hw_slowdown_fraction:
            continue
        lines = evidence.clock_and_reasons(ctx, sample, device, bits, share)
        yield Candidate(
            rule=RuleId.HW_SLOWDOWN,
            severity=Severity.CRITICAL,
            gpu=sample.index,
            title="Hardware slowdown: the board halves its clocks (power or board temperature)",
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
        "clock-event reasons, temperature, SM clock",
        "under load, SW or HW thermal slowdown set in >= {t.thermal_fraction:share} of the last "
        "{t.window_s:g} s, or temperature at or above the slowdown threshold",
        "airflow and fan curve, dust, room < 25 °C, GPU spacing, thermal paste",
        thermal_throttle,
    ),
    Rule(
        RuleId.THERMAL_HOT,
        "1 thermal",
        "temperature ({t.hot_mean_s:g} s mean), its trend, slowdown threshold",
        "under load, >= {t.hot_temp_c:g} °C or within {t.hot_margin_c:g} °C of slowdown, "
        "not yet throttling",
        "the same cooling checks, before it throttles",
        thermal_hot,
    ),
    Rule(
        RuleId.HW_SLOWDOWN,
        "1 thermal / power",
        "clock-event reasons HW slowdown and HW power brake",
        "either set in >= {t.hw_slowdown_fraction:share} of the last {t.window_s:g} s (any load)",
        "power supply and cables, external power brake (BMC), board temperature",
        hw_slowdown,
    ),
)
