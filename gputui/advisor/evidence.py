"""Sentences of evidence shared by several rules, so the numbers read the same everywhere."""

from __future__ import annotations

from gputui.advisor.context import Context
from gputui.core import clock_events as ce
from gputui.core.clock_events import describe_reasons
from gputui.core.model import DeviceInfo, GpuSample
from gputui.core.names import Metric
from gputui.core.units import fmt_duration


def sm_clock(ctx: Context, sample: GpuSample, device: DeviceInfo) -> str | None:
    """'SM clock 1380 / 1980 MHz max (-30 %) over the last 30 s'."""
    stats = ctx.stats(sample.index, Metric.SM_CLOCK_MHZ)
    if stats is None or not device.max_sm_clock_mhz:
        return None
    lost = 100.0 * (1 - stats.mean / device.max_sm_clock_mhz)
    return (
        f"SM clock {stats.mean:.0f} / {device.max_sm_clock_mhz} MHz max "
        f"({-lost:+.0f} %) over the last {fmt_duration(stats.span_s)}"
    )


def temperature(sample: GpuSample, device: DeviceInfo) -> str:
    parts = [f"{sample.temp_c:.0f} °C" if sample.temp_c is not None else "temperature n/a"]
    if device.temp_slowdown_c is not None:
        parts.append(f"slowdown at {device.temp_slowdown_c:.0f} °C")
    if device.temp_shutdown_c is not None:
        parts.append(f"shutdown at {device.temp_shutdown_c:.0f} °C")
    return ", ".join(parts)


def clock_and_reasons(
    ctx: Context, sample: GpuSample, device: DeviceInfo, bits: int, share: float | None
) -> list[str]:
    """The SM clock against its maximum, then how often the given reasons were set."""
    lines = []
    clock = sm_clock(ctx, sample, device)
    if clock:
        lines.append(clock)
    if share:
        lines.append(reasons_share(ctx, sample, bits, share))
    lines += held_down(ctx, sample, bits)
    return lines


# The driver's violation counters, by the reasons they account for.
_COUNTERS = (
    (ce.SW_POWER_CAP | ce.HW_POWER_BRAKE, Metric.VIOLATION_POWER_S, "the power limit"),
    (ce.SW_THERMAL | ce.HW_THERMAL, Metric.VIOLATION_THERMAL_S, "a thermal limit"),
)


def held_down(ctx: Context, sample: GpuSample, bits: int) -> list[str]:
    """What the driver itself counted: 'held down by the power limit 41 s of the last
    60 s (the driver's violation counter)', where the board has the counters."""
    lines = []
    for counted, metric, cause in _COUNTERS:
        if not bits & counted:
            continue
        growth = ctx.history.growth(sample.index, metric, ctx.t.held_window_s)
        if growth is not None and growth[0] >= 1.0:
            # the counter is read every few seconds: its growth can run past the window's
            # span by up to that period, and no GPU is held longer than it was watched
            held = min(growth[0], growth[1])
            lines.append(
                f"held down by {cause} {held:.0f} s of the last "
                f"{fmt_duration(growth[1])} (the driver's violation counter)"
            )
    return lines


def reasons_share(ctx: Context, sample: GpuSample, bits: int, share: float) -> str:
    """Only the reasons that actually occurred in the window, and over how long it was."""
    occurred = 0
    for mask in ctx.history.known_reasons(sample.index, ctx.t.window_s):
        occurred |= mask
    names = describe_reasons(bits & occurred) or describe_reasons(
        bits & (sample.clock_reasons or 0)
    )
    what = ", ".join(names) or "none"
    device = ctx.devices.get(sample.index)
    if device is not None and device.node is not None:
        # a remote exporter's readings repeat between its collections: count readings
        count, span = ctx.readings(sample.index)
        return (
            f"clock events: {what}, in {round(share * count)} of {count} "
            f"reading{'s' if count != 1 else ''} over {fmt_duration(span)}"
        )
    return (
        f"clock events: {what}, set in {100 * share:.0f} % "
        f"of the last {fmt_duration(ctx.sampled_s())}"
    )
