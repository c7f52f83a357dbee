"""A simulated node: named scenarios for the demo, the tests and the screenshots.

Every reading is a pure function of (seed, GPU, time since start), so a fixed clock gives
the same frames on every run and machine. Nothing downstream knows the data is simulated
except the source's label, which the UI always shows.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

from gputui.core.model import DeviceInfo, Frame, HostSample
from gputui.core.names import SourceKind
from gputui.sources.simulated import noise
from gputui.sources.simulated.cards import BOOT_AGE_S, GIB, HOST_CPUS, MAX_GPUS, MIX
from gputui.sources.simulated.gpu import Gpu, Reading, Scenario
from gputui.sources.simulated.scenarios import (
    BY_NAME,
    MIX_ORDER,
    SCENARIO_TABLE,
    SCENARIOS,
    resolve_scenarios,
)

#: a caught-up frame is at least this long before the read that follows it
CATCH_UP_MARGIN_S = 0.5


class SimulatedSource:
    """N simulated GPUs, each running a scenario; deterministic for a seed and clock."""

    label = "SIMULATED"
    kind = SourceKind.SIMULATED

    def __init__(
        self,
        scenarios: Sequence[str],
        seed: int = 0,
        clock: Callable[[], float] = time.time,
        hostname: str = "demo-node",
        history_s: float = 0.0,
    ) -> None:
        """``history_s``: the source opens that long ago, and ``backfill`` gives the
        frames of those seconds (the interactive demo starts with its scenarios under way,
        as the screenshots show it, not with an empty history)."""
        unknown = [s for s in scenarios if s not in BY_NAME]
        if unknown or not scenarios:
            raise ValueError(f"unknown scenarios: {unknown}")
        self.scenarios = tuple(scenarios)
        self._clock = clock
        self._hostname = hostname
        self._gpus = [
            Gpu(i, BY_NAME[s], seed, len(scenarios)) for i, s in enumerate(self.scenarios)
        ]
        self._start: float | None = None
        self._host_noise = noise.Noise(seed, 10_000)
        self._history_s = max(0.0, history_s)

    def open(self) -> tuple[DeviceInfo, ...]:
        self._begin(self._clock() - self._history_s)
        return tuple(gpu.info() for gpu in self._gpus)

    def backfill(self) -> list[Frame]:
        """One frame a second from the opening to now (none without ``history_s``)."""
        start = self._start
        if start is None:
            return []
        return [self._frame(start + k) for k in range(int(self._history_s))]

    def catch_up(self, since: float) -> list[Frame]:
        """The seconds after ``since`` (the backfill's last frame) up to now, one frame
        each: the stretch the app took to start, so its sparklines have no gap where the
        backfill meets the first read (none without ``history_s``, or within a second)."""
        if self._start is None or not self._history_s:
            return []
        now = self._clock()
        count = min(int(now - since - CATCH_UP_MARGIN_S), int(self._history_s))
        return [self._frame(since + k) for k in range(1, count + 1)]

    def _begin(self, now: float) -> None:
        self._start = now
        for gpu in self._gpus:
            gpu.opened = float(math.floor(now))

    def read(self) -> Frame:
        now = self._clock()
        if self._start is None:
            self._begin(now)
        return self._frame(now)

    def _frame(self, now: float) -> Frame:
        start = self._start if self._start is not None else now
        t = max(0.0, now - start)
        readings = [gpu.read(t) for gpu in self._gpus]
        return Frame(
            time=now,
            gpus=tuple(r.sample for r in readings),
            host=self._host(t, readings),
            processes=tuple(r.process for r in readings if r.process is not None),
        )

    def close(self) -> None:
        self._start = None

    def _host(self, t: float, readings: Sequence[Reading]) -> HostSample:
        n = self._host_noise
        per_cpu = [n.around(noise.HOST_CORES + k, t, 1.5, 1.0) for k in range(HOST_CPUS)]
        slot = 0
        for reading in readings:
            for busy in reading.host_cores:
                per_cpu[slot % HOST_CPUS] = max(per_cpu[slot % HOST_CPUS], busy)
                slot += 1
            if reading.process is not None:  # the main training thread
                per_cpu[slot % HOST_CPUS] = max(per_cpu[slot % HOST_CPUS], 60.0)
                slot += 1
        per_cpu = [round(min(100.0, max(0.0, v)), 1) for v in per_cpu]
        busy_cores = sum(per_cpu) / 100.0
        return HostSample(
            cpu_percent=round(sum(per_cpu) / HOST_CPUS, 1),
            per_cpu_percent=tuple(per_cpu),
            cpu_count=HOST_CPUS,
            load_1=round(busy_cores + n(noise.HOST_LOAD, t), 2),
            load_5=round(busy_cores * 0.95, 2),
            load_15=round(busy_cores * 0.9, 2),
            mem_total=2048 * GIB,
            mem_available=int((1610 + 8 * n(noise.HOST_MEM, t)) * GIB),
            swap_total=0,
            swap_used=0,
            iowait_pct=round(n.around(noise.HOST_IOWAIT, t, 0.6, 0.3), 2),
            disk_read_bps=n.around(noise.HOST_DISK, t, 180e6, 40e6),
            hostname=self._hostname,
            uptime_s=BOOT_AGE_S + t,
        )


__all__ = [
    "MAX_GPUS",
    "MIX",
    "MIX_ORDER",
    "SCENARIOS",
    "SCENARIO_TABLE",
    "Scenario",
    "SimulatedSource",
    "resolve_scenarios",
]
