"""Bounded history: a ring buffer per GPU and metric (``rings``), and the questions the
advisor asks of a window (``window``).

Memory grows with what is held, up to the window's capacity, and never past it: a
minute's history costs a minute's readings, and a week-long run uses what the first hour
used. All times come from the frames, never a clock here.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import pairwise
from operator import attrgetter
from typing import Any, Final, cast

from gputui.core.model import Frame, GpuSample, HostSample, XidEvent
from gputui.core.names import HostMetric, Metric
from gputui.sampling.rings import NAN, Cursor, Ring
from gputui.sampling.window import WindowStats, window_stats

# What the history keeps of each sample: every Metric is the GpuSample field of its name.
GPU_METRICS: Final[dict[Metric, Callable[[GpuSample], float | int | bool | None]]] = {
    m: attrgetter(m.value) for m in Metric
}
HOST_METRICS: Final[dict[HostMetric, Callable[[HostSample], float | int | None]]] = {
    m: attrgetter(m.value) for m in HostMetric
}
# All of a sample's kept readings in one call, in the order of Metric / HostMetric.
_GPU_READINGS: Final = attrgetter(*(m.value for m in Metric))
_HOST_READINGS: Final = attrgetter(*(m.value for m in HostMetric))

MAX_XIDS: Final = 8
NO_REASONS: Final = -1  # clock-event reasons unknown at that tick
#: values that move between two collections of an exporter (power has decimals): a tick
#: that repeats all of them repeats the reading before it
READING_METRICS: Final = (
    Metric.POWER_W,
    Metric.TEMP_C,
    Metric.SM_CLOCK_MHZ,
    Metric.UTIL_GPU,
    Metric.MEM_USED,
)


class _GpuRings:
    __slots__ = ("columns", "metrics", "reasons")

    def __init__(self, cursor: Cursor) -> None:
        self.metrics = {name: Ring(cursor.capacity, cursor=cursor) for name in Metric}
        # the same arrays in the order _GPU_READINGS gives the readings
        self.columns = [self.metrics[name].data for name in Metric]
        self.reasons = Ring(cursor.capacity, "q", NO_REASONS, cursor)


class History:
    """Ring buffers for every GPU and the host; answers questions about a time window.

    The rules read the GPUs' history only through it: ``window`` and ``stats`` for a
    metric over the last seconds, ``series`` for the newest points (the sparklines),
    ``growth`` for counters, ``known_reasons`` for clock-event masks, ``xids`` for events.
    Every ring shares one cursor: a tick is one slot of each, NaN where a GPU had no
    reading (lost, not yet seen, or the driver would not say).

    Args:
        capacity: the ticks kept (the config's ``history_points``); the oldest tick is
            overwritten by the newest once it is full.
    """

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self.cursor = Cursor(capacity)
        self._times = Ring(capacity, "d", cursor=self.cursor)
        self._gpus: dict[int, _GpuRings] = {}
        self._host = {name: Ring(capacity, cursor=self.cursor) for name in HostMetric}
        self._host_columns = [self._host[name].data for name in HostMetric]
        self.latest: Frame | None = None
        # Xid events arrive once, on one tick: kept here so they can be shown and judged
        # for as long as they matter, a few per GPU at most.
        self._xids: dict[int, deque[XidEvent]] = {}
        self._last_seen: dict[int, float] = {}  # GPU -> frame time of its last reading
        self._counts: dict[float, int] = {}  # window length -> ticks in it, until the next add
        self._time_tails: dict[int, list[float]] = {}  # likewise, the window's times
        #: likewise, a window's times and where it lies in every ring (``_window``)
        self._windows: dict[float, tuple[list[float], int, int, int]] = {}

    @property
    def capacity(self) -> int:
        return self._capacity

    def resized(self, capacity: int) -> History:
        """The same history in rings of ``capacity``, the newest readings kept."""
        out = History(capacity)
        n = min(len(self), capacity)
        if n:
            out.cursor.reserve(n)
            out.cursor.size = n
            out._times.data[:n] = array("d", self._times.tail(n))
            for index, rings in self._gpus.items():
                copy = out._gpus[index] = _GpuRings(out.cursor)
                for metric, ring in rings.metrics.items():
                    copy.metrics[metric].data[:n] = array("f", ring.tail(n))
                copy.reasons.data[:n] = array("q", rings.reasons.tail(n))
            for host_metric, host_ring in self._host.items():
                out._host[host_metric].data[:n] = array("f", host_ring.tail(n))
        out.latest = self.latest
        out._xids = {i: deque(x, maxlen=MAX_XIDS) for i, x in self._xids.items()}
        out._last_seen = dict(self._last_seen)
        return out

    def __len__(self) -> int:
        return len(self._times)

    @property
    def gpu_indices(self) -> tuple[int, ...]:
        return tuple(sorted(self._gpus))

    def add(self, frame: Frame) -> None:
        """One tick: every GPU's readings (NaN for a GPU missing from ``frame`` or lost)
        and the host's, at ``frame.time``; frames come in time order."""
        present = {s.index: s for s in frame.gpus}
        for index in present:
            if index not in self._gpus:
                # A GPU that appears late has no readings (NaN) for the ticks before it.
                self._gpus[index] = _GpuRings(self.cursor)
        slot = self.cursor.advance()  # every ring's, at once
        self._times.data[slot] = frame.time
        self._counts.clear()
        self._time_tails.clear()
        self._windows.clear()
        for index, rings in self._gpus.items():
            sample = present.get(index)
            if sample is None or sample.lost:
                for column in rings.columns:
                    column[slot] = NAN
                rings.reasons.data[slot] = NO_REASONS
                continue
            for column, value in zip(rings.columns, _GPU_READINGS(sample), strict=True):
                column[slot] = NAN if value is None else value
            self._last_seen[index] = frame.time
            if sample.xid_events:
                self._xids.setdefault(index, deque(maxlen=MAX_XIDS)).extend(sample.xid_events)
            reasons = sample.clock_reasons
            rings.reasons.data[slot] = NO_REASONS if reasons is None else reasons
        host = frame.host
        if host is None:
            for column in self._host_columns:
                column[slot] = NAN
        else:
            for column, value in zip(self._host_columns, _HOST_READINGS(host), strict=True):
                column[slot] = NAN if value is None else value
        self.latest = frame

    def add_columns(
        self,
        times: Sequence[float],
        gpus: dict[int, tuple[list[array[float]], array[int]]],
        host: list[array[float]],
        latest: Frame,
        at: int = 0,
        last_seen: Mapping[int, float] | None = None,
    ) -> None:
        """Ticks at ``times`` at once, as ``add`` of each would leave the history: each GPU
        of ``gpus`` read (not lost, no Xid) at every one, its readings a column a Metric
        (NaN where none) and its clock-event masks; the host's a column a HostMetric; the
        columns' values from ``at`` on are those of ``times``. ``latest``: the last tick's
        frame; ``last_seen``: each GPU's last reading where it is not the last tick."""
        for index in gpus:
            if index not in self._gpus:
                self._gpus[index] = _GpuRings(self.cursor)
        runs: list[list[int]] = []  # [first slot, slots, first tick], contiguous slots
        for k in range(len(times)):
            slot = self.cursor.advance()
            if runs and runs[-1][0] + runs[-1][1] == slot:
                runs[-1][1] += 1
            else:
                runs.append([slot, 1, k])
        blank = array("f", [NAN]) * len(times)
        unknown: array[Any] = array("q", [NO_REASONS]) * len(times)
        self._counts.clear()
        self._time_tails.clear()
        self._windows.clear()
        filled = array("d", times)
        for a, n, k in runs:
            self._times.data[a : a + n] = filled[k : k + n]
            for index, rings in self._gpus.items():
                given = gpus.get(index)
                if given is None:
                    for column in rings.columns:
                        column[a : a + n] = blank[:n]
                    rings.reasons.data[a : a + n] = unknown[:n]
                    continue
                for column, values in zip(rings.columns, given[0], strict=True):
                    column[a : a + n] = values[at + k : at + k + n]
                masks: array[Any] = given[1]
                rings.reasons.data[a : a + n] = masks[at + k : at + k + n]
            for column, values in zip(self._host_columns, host, strict=True):
                column[a : a + n] = values[at + k : at + k + n]
        for index in gpus:
            self._last_seen[index] = times[-1] if last_seen is None else last_seen[index]
        self.latest = latest

    def fill(self, frame: Frame) -> bool:
        """An earlier frame's readings, placed at the tick nearest its time (within half
        the gap to the next tick on its side) for each GPU that had no reading there: the
        history of a node a source began to read in full later. False when no tick is near.
        """
        size = len(self._times)
        if size == 0:
            return False
        at = self._first_at_or_after(frame.time)
        near = min(
            (i for i in (at - 1, at) if 0 <= i < size),
            key=lambda i: abs(self._times[i] - frame.time),
        )
        other = near + (1 if frame.time >= self._times[near] else -1)
        if 0 <= other < size:
            if (
                abs(self._times[near] - frame.time)
                > abs(self._times[other] - self._times[near]) / 2
            ):
                return False
        elif abs(self._times[near] - frame.time) > 1.0 and size > 1:
            return False  # beyond the ends: only a tick's own time
        slot = (self.cursor.start + near) % self.cursor.capacity
        for sample in frame.gpus:
            rings = self._gpus.get(sample.index)
            if rings is None:
                rings = self._gpus[sample.index] = _GpuRings(self.cursor)
            if sample.lost or any(column[slot] == column[slot] for column in rings.columns):
                continue  # a reading of its own there already
            for column, value in zip(rings.columns, _GPU_READINGS(sample), strict=True):
                column[slot] = NAN if value is None else value
            reasons = sample.clock_reasons
            rings.reasons.data[slot] = NO_REASONS if reasons is None else reasons
        return True

    def _first_at_or_after(self, when: float) -> int:
        lo, hi = 0, len(self._times)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._times[mid] < when:
                lo = mid + 1
            else:
                hi = mid
        return lo

    # -- window questions --------------------------------------------------------
    def _count_since(self, seconds: float) -> int:
        """How many of the newest ticks lie within ``seconds`` of the newest one."""
        cached = self._counts.get(seconds)
        if cached is not None:
            return cached
        size = len(self._times)
        if size == 0:
            return 0
        count = size - self._first_at_or_after(self._times[-1] - seconds)
        self._counts[seconds] = count
        return count

    def times(self, seconds: float | None = None) -> list[float]:
        n = None if seconds is None else self._count_since(seconds)
        return self._times.tail(n)

    def span_s(self, seconds: float) -> float:
        """The time from the first to the last tick of the last ``seconds`` (0 with fewer
        than two)."""
        n = self._count_since(seconds)  # its ends only: no list of its times
        return self._times[-1] - self._times[-n] if n > 1 else 0.0

    def _time_tail(self, n: int) -> list[float]:
        """The newest ``n`` times; every rule asks for the same few windows each tick."""
        tail = self._time_tails.get(n)
        if tail is None:
            tail = self._time_tails[n] = self._times.tail(n)
        return tail

    def series(self, gpu: int, metric: Metric, points: int | None = None) -> list[float]:
        """The newest ``points`` values of a metric, NaN where there was no reading."""
        rings = self._gpus.get(gpu)
        if rings is None:
            return []
        return rings.metrics[metric].tail(points)

    def host_series(self, metric: HostMetric, points: int | None = None) -> list[float]:
        return self._host[metric].tail(points)

    def window(self, gpu: int, metric: Metric, seconds: float) -> list[float]:
        """Readings of the last ``seconds``, oldest first, missing ones left out."""
        rings = self._gpus.get(gpu)
        if rings is None:
            return []
        values = self._in_window(rings.metrics[metric], seconds)[1]
        total = sum(values)  # no NaN among them (the common case): nothing to leave out
        return values if total == total else [v for v in values if v == v]

    def _in_window(self, ring: Ring, seconds: float) -> tuple[list[float], list[float]]:
        """The times of the last ``seconds`` and ``ring``'s values at them."""
        times, a, b, c = self._window(seconds)
        data = ring.data
        values = data[a:b].tolist()
        if c:
            values += data[:c].tolist()
        return times, values

    def _window(self, seconds: float) -> tuple[list[float], int, int, int]:
        """The ticks of the last ``seconds``: their times, and where their values lie in
        every ring (they share one cursor): slots ``[a:b]``, then ``[0:c]`` where the ring
        wraps (``c`` 0 where it does not). The advisor asks a few windows of many rings
        each judgement: worked out once a window until the next tick."""
        found = self._windows.get(seconds)
        if found is None:
            n = self._count_since(seconds)
            cursor = self.cursor
            a = (cursor.start + cursor.size - n) % cursor.capacity
            b, c = (
                (a + n, 0)
                if a + n <= cursor.capacity
                else (cursor.capacity, a + n - cursor.capacity)
            )
            found = self._windows[seconds] = (self._time_tail(n), a, b, c)
        return found

    def stats(self, gpu: int, metric: Metric, seconds: float) -> WindowStats | None:
        """Mean, extremes, first and last reading, count and span of ``metric`` on GPU
        ``gpu`` (its index) over the last ``seconds`` (by tick time, up to the newest
        tick); None for a GPU never seen, a WindowStats with count 0 when the window
        holds no reading."""
        rings = self._gpus.get(gpu)
        if rings is None:
            return None
        return window_stats(*self._in_window(rings.metrics[metric], seconds))

    def host_stats(self, metric: HostMetric, seconds: float) -> WindowStats | None:
        return window_stats(*self._in_window(self._host[metric], seconds))

    def reading_times(self, gpu: int, seconds: float | None = None) -> list[float]:
        """The times of a GPU's distinct readings in the last ``seconds`` (all without).

        A remote exporter collects every 15-60 s: read more often, it answers the same
        reading again. A tick is a new reading when any of ``READING_METRICS`` changed;
        ticks without any of them are no reading at all.
        """
        rings = self._gpus.get(gpu)
        if rings is None:
            return []
        n = len(self._times) if seconds is None else self._count_since(seconds)
        times = self._time_tail(n)
        columns = [rings.metrics[m].tail(n) for m in READING_METRICS]
        out: list[float] = []
        previous: tuple[float | None, ...] | None = None
        for i, row in enumerate(zip(*columns, strict=True)):
            known = tuple(None if v != v else v for v in row)
            if known.count(None) == len(known):
                continue
            if known != previous:
                out.append(times[i])
            previous = known
        return out

    def tick_interval(self, seconds: float) -> float | None:
        """The median time between the ticks of the last ``seconds``; None before three."""
        times = self.times(seconds)
        if len(times) < 3:
            return None
        ticks = sorted(b - a for a, b in pairwise(times))
        return ticks[len(ticks) // 2]

    def reading_interval(self, gpus: Sequence[int], seconds: float) -> float | None:
        """The source's own time between readings over the last ``seconds``: for each of
        ``gpus`` the median gap between its distinct readings, and their median; never
        shorter than the ticks. None when it cannot tell (fewer than three readings)."""
        tick = self.tick_interval(seconds)
        if tick is None:
            return None
        per_gpu: list[float] = []
        for gpu in gpus:
            seen = self.reading_times(gpu, seconds)
            gaps = sorted(b - a for a, b in pairwise(seen))
            if len(gaps) >= 2:
                per_gpu.append(gaps[len(gaps) // 2])
        if not per_gpu:
            return None
        per_gpu.sort()
        return max(tick, per_gpu[len(per_gpu) // 2])

    def last_seen(self, gpu: int) -> float | None:
        """Frame time of the GPU's last reading (lost or absent ticks do not count)."""
        return self._last_seen.get(gpu)

    def xids(self, gpu: int, seconds: float | None = None) -> tuple[XidEvent, ...]:
        """The GPU's recent Xid events (the last MAX_XIDS), those of the last ``seconds``."""
        events = self._xids.get(gpu, ())
        if seconds is None or self.latest is None:
            return tuple(events)
        since = self.latest.time - seconds
        return tuple(e for e in events if e.time >= since)

    def growth(self, gpu: int, metric: Metric, seconds: float) -> tuple[float, float] | None:
        """How much a cumulative counter grew over the last ``seconds``, and over how long
        it was actually seen: None with fewer than two readings."""
        stats = self.stats(gpu, metric, seconds)
        if stats is None or stats.count < 2 or stats.span_s <= 0:
            return None
        return max(0.0, stats.last - stats.first), stats.span_s

    def known_reasons(self, gpu: int, seconds: float) -> list[int]:
        """Clock-event masks of the window, ticks where they were unknown left out."""
        rings = self._gpus.get(gpu)
        if rings is None:
            return []
        window = cast("list[int]", self._in_window(rings.reasons, seconds)[1])  # a "q" ring
        if NO_REASONS not in window:
            return window
        return [r for r in window if r != NO_REASONS]

    def reasons(self, gpu: int) -> list[int]:
        """Every tick's clock-event mask of a GPU, oldest first, ``NO_REASONS`` where it
        was unknown (the report lines them up with ``times()``)."""
        rings = self._gpus.get(gpu)
        if rings is None:
            return [NO_REASONS] * len(self)
        return cast("list[int]", rings.reasons.tail())

    def memory_bytes(self) -> int:
        """Bytes held by the ring buffers: growing as they fill, constant once full."""
        rings: Iterator[Ring] = (
            ring for g in self._gpus.values() for ring in (*g.metrics.values(), g.reasons)
        )
        total = sum(r.data.itemsize * len(r.data) for r in rings)
        total += sum(r.data.itemsize * len(r.data) for r in self._host.values())
        return total + self._times.data.itemsize * len(self._times.data)
