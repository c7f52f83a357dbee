"""The simulation's randomness, deterministic: one stream a GPU and channel, a value a
whole second, and the curve a reading follows toward where it settles."""

from __future__ import annotations

import math
from typing import Final

# Noise channels: each reading draws from its own, so changing one leaves the others as
# they were (and the screenshots with them).
UTIL: Final = 1
UTIL_MEM: Final = 2
RX: Final = 3
TX: Final = 4
RSS: Final = 5
POWER: Final = 6
CLOCK: Final = 7
TEMP: Final = 8
MEM: Final = 9
WORKER_CORES: Final = 10  # 10, 11, ...: one per data-loader worker
STEP_BUSY: Final = 11  # the starved scenario: is the GPU busy this second?
STEP_IDLE_UTIL: Final = 12
PROC_CPU: Final = 13
MAIN_CORE: Final = 14
UNCAPPED: Final = 40  # the draw a capped job would reach without its limit

# The host's channels (a stream of their own: the source keys it as GPU 10,000)
HOST_LOAD: Final = 1
HOST_MEM: Final = 2
HOST_IOWAIT: Final = 3
HOST_DISK: Final = 4
HOST_CORES: Final = 100  # 100, 101, ...: one per CPU


def mix64(x: int) -> int:
    """A 64-bit integer mixed (splitmix64's finaliser): neighbouring keys, unrelated values."""
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


class Noise:
    """Deterministic noise in [0, 1) keyed by (seed, gpu, channel, whole second)."""

    def __init__(self, seed: int, gpu: int) -> None:
        self._base = mix64(seed * 1_000_003 + gpu * 7919 + 1)

    def __call__(self, channel: int, t: float) -> float:
        # mix64, inlined: the demo draws ~190 of these per tick and it shows in its CPU
        x = (self._base ^ (channel * 0x100000001B3) ^ math.floor(t)) + 0x9E3779B97F4A7C15
        x &= 0xFFFFFFFFFFFFFFFF
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return (x ^ (x >> 31)) / 18446744073709551616.0  # 2**64

    def around(self, channel: int, t: float, centre: float, spread: float) -> float:
        return centre + (self(channel, t) * 2.0 - 1.0) * spread


def approach(start: float, target: float, t: float, tau: float) -> float:
    """A reading ``t`` seconds on from ``start`` toward ``target``, time constant ``tau``."""
    return target + (start - target) * math.exp(-t / tau)
