"""Each GPU process's own history, kept while it lives: GPU memory (over all its GPUs), its
SM share, host CPU and resident memory, for the process page's sparklines.

A process is its PID and start time (PIDs are reused); one that leaves the frames is
forgotten with its history. Memory is bounded twice: at most ``MAX_PROCESSES`` are followed
(the ones holding most GPU memory when there are more) and each keeps ``POINTS`` readings
in float32 rings, about 10 KB a process.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Final

from gputui.core.model import Frame, ProcessSample
from gputui.sampling.rings import NAN, Cursor, Ring

MAX_PROCESSES: Final = 256
POINTS: Final = 600  # ten minutes at one reading a second


class ProcessMetric(enum.Enum):
    GPU_MEMORY = "gpu_memory"
    SM = "sm_util"
    CPU = "cpu_percent"
    RSS = "rss"


Identity = tuple[int, float | None]  # PID, start time


class _Rings:
    __slots__ = ("metrics", "times")

    def __init__(self, points: int) -> None:
        cursor = Cursor(points)
        self.times = Ring(points, "d", cursor=cursor)
        self.metrics = {m: Ring(points, cursor=cursor) for m in ProcessMetric}


def _merged(samples: Iterable[ProcessSample]) -> dict[Identity, dict[ProcessMetric, float]]:
    """One set of figures per process: GPU memory summed over its GPUs, the highest SM."""
    out: dict[Identity, dict[ProcessMetric, float]] = {}
    for p in samples:
        figures = out.get((p.pid, p.started))
        if figures is None:
            out[(p.pid, p.started)] = {
                ProcessMetric.GPU_MEMORY: NAN if p.gpu_memory is None else float(p.gpu_memory),
                ProcessMetric.SM: NAN if p.sm_util is None else p.sm_util,
                ProcessMetric.CPU: NAN if p.cpu_percent is None else p.cpu_percent,
                ProcessMetric.RSS: NAN if p.rss is None else float(p.rss),
            }
            continue
        if p.gpu_memory is not None:
            held = figures[ProcessMetric.GPU_MEMORY]
            figures[ProcessMetric.GPU_MEMORY] = p.gpu_memory + (0.0 if held != held else held)
        if p.sm_util is not None:
            sm = figures[ProcessMetric.SM]
            figures[ProcessMetric.SM] = p.sm_util if sm != sm else max(sm, p.sm_util)
    return out


class ProcessHistory:
    def __init__(self, points: int = POINTS, max_processes: int = MAX_PROCESSES) -> None:
        self._points = points
        self._max = max_processes
        self._rings: dict[Identity, _Rings] = {}

    def __len__(self) -> int:
        return len(self._rings)

    def add(self, frame: Frame) -> None:
        figures = _merged(frame.processes)
        for gone in [k for k in self._rings if k not in figures]:
            del self._rings[gone]
        if len(figures) > self._max:  # follow those holding most GPU memory
            ranked = sorted(figures, key=lambda k: -_memory(figures[k]))
            figures = {k: figures[k] for k in ranked[: self._max]}
            for dropped in [k for k in self._rings if k not in figures]:
                del self._rings[dropped]
        for key, values in figures.items():
            rings = self._rings.get(key)
            if rings is None:
                rings = self._rings[key] = _Rings(self._points)
            slot = rings.times.cursor.advance()
            rings.times.data[slot] = frame.time
            for metric, value in values.items():
                rings.metrics[metric].data[slot] = value

    def series(
        self, pid: int, started: float | None, metric: ProcessMetric
    ) -> tuple[list[float], list[float]]:
        """The process's readings of ``metric`` with their times, oldest first; empty for
        a process not followed."""
        rings = self._rings.get((pid, started))
        if rings is None:
            return [], []
        return rings.times.tail(), rings.metrics[metric].tail()


def _memory(values: dict[ProcessMetric, float]) -> float:
    held = values[ProcessMetric.GPU_MEMORY]
    return 0.0 if held != held else held
