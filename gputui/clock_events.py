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

# (bit, identifier, plain words), in the order a user should read them.
REASONS: Final[tuple[tuple[int, str, str], ...]] = (
    (HW_THERMAL, "hw_thermal", "thermal slowdown (HW)"),
    (SW_THERMAL, "sw_thermal", "thermal slowdown (SW)"),
    (HW_POWER_BRAKE, "hw_power_brake", "power brake (HW)"),
    (HW_SLOWDOWN, "hw_slowdown", "hardware slowdown"),
    (SW_POWER_CAP, "sw_power_cap", "power cap (SW)"),
    (APPLICATIONS_CLOCKS, "applications_clocks", "application clocks setting"),
    (SYNC_BOOST, "sync_boost", "sync boost"),
    (DISPLAY_CLOCKS, "display_clocks", "display clock setting"),
    (GPU_IDLE, "gpu_idle", "idle"),
)

BIT_BY_NAME: Final[dict[str, int]] = {name: bit for bit, name, _ in REASONS}
LABEL_BY_NAME: Final[dict[str, str]] = {name: label for _, name, label in REASONS}

THERMAL_BITS: Final = SW_THERMAL | HW_THERMAL


def decode_reasons(mask: int | None) -> tuple[str, ...]:
    if mask is None:
        return ()
    return tuple(name for bit, name, _ in REASONS if mask & bit)


def describe_reasons(mask: int | None) -> tuple[str, ...]:
    if mask is None:
        return ()
    return tuple(label for bit, _, label in REASONS if mask & bit)
