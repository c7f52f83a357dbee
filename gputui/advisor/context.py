"""What every rule reads: the history window, static facts and thresholds, for one tick."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gputui.config import Thresholds
from gputui.model import DeviceInfo, Frame, GpuSample, ProcessSample
from gputui.names import Metric
from gputui.sampling.history import History, WindowStats


@dataclass(frozen=True, slots=True)
class Context:
    history: History
    devices: Mapping[int, DeviceInfo]
    frame: Frame
    t: Thresholds
    # Rules ask the same questions (is GPU 3 busy?): one answer per tick.
    _memo: dict[tuple[int, str, float], WindowStats | None] = field(default_factory=dict)
    _reasons: dict[tuple[int, float], list[int]] = field(default_factory=dict)

    def stats(self, gpu: int, metric: Metric, seconds: float | None = None) -> WindowStats | None:
        """Window statistics, or None when there are too few readings to judge."""
        key = (gpu, metric, self.t.window_s if seconds is None else seconds)
        if key in self._memo:
            return self._memo[key]
        stats = self.history.stats(*key)
        if stats is not None and stats.count < self.t.min_points:
            stats = None
        self._memo[key] = stats
        return stats

    def fraction(self, gpu: int, bits: int, seconds: float | None = None) -> float | None:
        """Share of the window with any of ``bits`` set; None if too few known readings."""
        key = (gpu, self.t.window_s if seconds is None else seconds)
        known = self._reasons.get(key)
        if known is None:  # rules ask the same window with different bits
            known = self._reasons[key] = self.history.known_reasons(*key)
        if len(known) < self.t.min_points:
            return None
        return sum(1 for r in known if r & bits) / len(known)

    def samples(self) -> list[tuple[GpuSample, DeviceInfo]]:
        """Each GPU that was read this tick (lost ones left out), with its static facts."""
        out = []
        for sample in self.frame.gpus:
            device = self.devices.get(sample.index)
            if device is not None and not sample.lost:
                out.append((sample, device))
        return out

    def busy(self, gpu: int) -> WindowStats | None:
        """Utilisation stats when the GPU is under load over the window, else None."""
        util = self.stats(gpu, Metric.UTIL_GPU)
        if util is None or util.mean < self.t.busy_util_pct:
            return None
        return util

    def processes(self, gpu: int) -> tuple[ProcessSample, ...]:
        return self.frame.processes_on(gpu)


def gb(value: float) -> str:
    return f"{value / 1e9:.1f} GB/s"


def gib(value: float) -> str:
    return f"{value / 1024**3:.1f} GiB"
