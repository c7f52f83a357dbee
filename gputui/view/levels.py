"""Which meaning a reading gets (ok, warning, critical), from the advisor's thresholds:
the screen colours readings by the same numbers the rules judge them by."""

from __future__ import annotations

from gputui.core.config import Thresholds
from gputui.core.model import DeviceInfo, GpuSample
from gputui.view.cells import Role


def level(value: float | None, warn: float, crit: float) -> Role:
    if value is None:
        return Role.DIM
    if value >= crit:
        return Role.CRIT
    if value >= warn:
        return Role.WARN
    return Role.OK


def share(part: float | None, whole: float | None) -> float | None:
    if part is None or not whole:
        return None
    return part / whole


def vram(t: Thresholds, used_pct: float | None) -> Role:
    return level(used_pct, t.vram_warning_pct, t.vram_critical_pct)


def power(t: Thresholds, share_of_limit: float | None) -> Role:
    return level(share_of_limit, t.power_at_limit, 2.0)


def pcie(t: Thresholds, share_of_link: float | None) -> Role:
    return level(share_of_link, t.pcie_saturated, 2.0)


def temp(t: Thresholds, sample: GpuSample, device: DeviceInfo) -> Role:
    slowdown = device.temp_slowdown_c
    if slowdown is None:
        return level(sample.temp_c, t.hot_temp_c, float("inf"))
    return level(sample.temp_c, min(t.hot_temp_c, slowdown - t.hot_margin_c), slowdown)


def gil_bound(t: Thresholds, cpu_percent: float | None) -> bool:
    """A process near one full core: the signature of a GIL-bound loader."""
    return cpu_percent is not None and t.cpu_bound_pct <= cpu_percent <= t.cpu_bound_max_pct
