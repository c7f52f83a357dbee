"""NVML clock-event (throttle) reason bits and their plain-words names."""

from __future__ import annotations

from typing import Final

GPU_IDLE: Final = 0x1
APPLICATIONS_CLOCKS: Final = 0x2
SW_POWER_CAP: Final = 0x4
HW_SLOWDOWN: Final = 0x8
SYNC_BOOST: Final = 0x10
SW_THERMAL: Final = 0x20
HW_THERMAL: Final = 0x40
HW_POWER_BRAKE: Final = 0x80
DISPLAY_CLOCKS: Final = 0x100
# Bits newer drivers set (nvml.h's nvmlClocksThrottleReasonBoardLimit / ...Reliability).
BOARD_LIMIT: Final = 0x200
RELIABILITY: Final = 0x400

# (bit, identifier, plain words, short words), in the order a user should read them.
REASONS: Final[tuple[tuple[int, str, str, str], ...]] = (
    (HW_THERMAL, "hw_thermal", "thermal slowdown (HW)", "HW thermal"),
    (SW_THERMAL, "sw_thermal", "thermal slowdown (SW)", "SW thermal"),
    (HW_POWER_BRAKE, "hw_power_brake", "power brake (HW)", "power brake"),
    (HW_SLOWDOWN, "hw_slowdown", "hardware slowdown", "HW slowdown"),
    (SW_POWER_CAP, "sw_power_cap", "power cap (SW)", "power cap"),
    (APPLICATIONS_CLOCKS, "applications_clocks", "application clocks setting", "app clocks"),
    (SYNC_BOOST, "sync_boost", "sync boost", "sync boost"),
    (BOARD_LIMIT, "board_limit", "board limit", "board limit"),
    (RELIABILITY, "reliability", "reliability limit", "reliability"),
    (DISPLAY_CLOCKS, "display_clocks", "display clock setting", "display"),
    (GPU_IDLE, "gpu_idle", "idle", "idle"),
)


THERMAL_BITS: Final = SW_THERMAL | HW_THERMAL
#: the reasons that name a cause for clocks below the maximum; the applications-clocks bit
#: is left out (drivers set it on busy GPUs at their default clocks: no cause on its own)
NAMED_CAUSES: Final = (
    GPU_IDLE
    | SW_POWER_CAP
    | HW_SLOWDOWN
    | SYNC_BOOST
    | SW_THERMAL
    | HW_THERMAL
    | HW_POWER_BRAKE
    | DISPLAY_CLOCKS
    | BOARD_LIMIT
    | RELIABILITY
)


def decode_reasons(mask: int | None) -> tuple[str, ...]:
    if mask is None:
        return ()
    return tuple(name for bit, name, _, _ in REASONS if mask & bit)


def describe_reasons(mask: int | None, short: bool = False) -> tuple[str, ...]:
    if mask is None:
        return ()
    return tuple(brief if short else label for bit, _, label, brief in REASONS if mask & bit)
