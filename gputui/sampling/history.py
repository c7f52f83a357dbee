"""Bounded history: fixed-size ring buffers per metric, and window statistics.

Memory grows with what is held (``array`` of float32, NaN for "no reading"), doubling up
to the window's capacity, and never past it: a minute's history costs a minute's
readings, and a week-long run uses what the first hour used. All times come from the
frames, never a clock here.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import pairwise
from operator import attrgetter, mul
from typing import Any, Final, cast

from gputui.core.model import Frame, GpuSample, HostSample, XidEvent
from gputui.core.names import HostMetric, Metric

NAN: Final = float("nan")
#: slots a ring starts with; it doubles as the history fills, up to its capacity
INITIAL_SLOTS: Final = 64


class _Cursor:
    """Where a ring's oldest value is and how many it holds. Every ring of a History
    shares one: they all take one value per frame, so their positions never differ."""

    __slots__ = ("_rings", "allocated", "capacity", "size", "start")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be positive")
        self.capacity = capacity
        self.start = 0
        self.size = 0
        self.allocated = min(capacity, INITIAL_SLOTS)  # every ring's length, alike
        self._rings: list[Ring] = []

    def reserve(self, slots: int) -> None:
        """Every ring at least ``slots`` long (at most the capacity), grown in place: the
        arrays keep their identity, so the columns History holds stay valid."""
        want = min(self.capacity, slots)
        if want <= self.allocated:
            return
        grow = want - self.allocated
        for ring in self._rings:
            ring._data.extend(array(ring._data.typecode, [ring._fill]) * grow)
        self.allocated = want

    def advance(self) -> int:
        """The slot the next value goes to (the oldest one once full)."""
        if self.size < self.capacity:
            slot = self.size  # the start stays 0 until the ring is full
            if slot >= self.allocated:
                self.reserve(2 * self.allocated)
            self.size += 1
            return slot
        slot = self.start
        self.start = (slot + 1) % self.capacity
        return slot


class Ring:
    """A fixed-capacity ring of numbers; the oldest value is overwritten first."""

    __slots__ = ("_cursor", "_data", "_fill")

    def __init__(
        self, capacity: int, typecode: str = "f", fill: float = NAN, cursor: _Cursor | None = None
    ) -> None:
        self._cursor = _Cursor(capacity) if cursor is None else cursor
        self._fill = fill
        self._data = array(typecode, [fill]) * self._cursor.allocated
        self._cursor._rings.append(self)

    @property
    def capacity(self) -> int:
        return self._cursor.capacity

    def __len__(self) -> int:
        return self._cursor.size

    def append(self, value: float) -> None:
        """For a ring with a cursor of its own: History moves its shared one, once a frame."""
        self._data[self._cursor.advance()] = value

    def __getitem__(self, i: int) -> float:
        """Logical index: 0 is the oldest value, -1 the newest."""
        cursor = self._cursor
        if i < 0:
            i += cursor.size
        if not 0 <= i < cursor.size:
            raise IndexError(i)
        return self._data[(cursor.start + i) % cursor.capacity]

    def tail(self, n: int | None = None) -> list[float]:
        """The newest ``n`` values (all when None), oldest first."""
        cursor = self._cursor
        size, capacity = cursor.size, cursor.capacity
        n = size if n is None else max(0, min(n, size))
        a = (cursor.start + size - n) % capacity
        if a + n <= capacity:
            return self._data[a : a + n].tolist()
        return self._data[a:].tolist() + self._data[: a + n - capacity].tolist()


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


class WindowStats:
    """A window's figures. Immutable by contract (``Final``, checked by mypy): the advisor
    asks for a hundred of these a judgement, and a frozen dataclass costs six times as
    much to build. The least and greatest reading are worked out when first asked (few
    rules do): ``min``/``max`` given as None at construction."""

    __slots__ = ("_max", "_min", "count", "first", "last", "mean", "span_s", "times", "values")

    def __init__(
        self,
        count: int,
        mean: float,
        min: float | None,
        max: float | None,
        first: float,
        last: float,
        span_s: float,
        times: Sequence[float],
        values: Sequence[float],
    ) -> None:
        self.count: Final = count
        self.mean: Final = mean
        self._min = min
        self._max = max
        self.first: Final = first
        self.last: Final = last
        #: time between the first and last reading in the window
        self.span_s: Final = span_s
        # The readings behind the figures, for the slope. Shared with the history's
        # per-tick caches rather than copied: nothing may change them.
        self.times: Final = times
        self.values: Final = values

    @property
    def min(self) -> float:
        if self._min is None:
            self._min = min(self.values)
        return self._min

    @property
    def max(self) -> float:
        if self._max is None:
            self._max = max(self.values)
        return self._max

    def __repr__(self) -> str:
        return (
            f"WindowStats(count={self.count}, mean={self.mean}, min={self.min}, "
            f"max={self.max}, first={self.first}, last={self.last}, span_s={self.span_s})"
        )

    @property
    def slope_per_s(self) -> float | None:
        """Least-squares slope per second; None with fewer than 2 points or no time span."""
        n = self.count
        if n < 2:
            return None
        times = self.times
        t_mean = sum(times) / n
        centred = [t - t_mean for t in times]  # centred times keep the sums well conditioned
        var: float = sum(map(mul, centred, centred))
        if var <= 1e-12:
            return None
        # sum((t - t_mean) * (v - mean)), without a pass to centre the values: the centred
        # times sum to zero but for rounding, which the second term takes back out
        covariance: float = sum(map(mul, centred, self.values)) - self.mean * sum(centred)
        return covariance / var


class _GpuRings:
    __slots__ = ("columns", "metrics", "reasons")

    def __init__(self, cursor: _Cursor) -> None:
        self.metrics = {name: Ring(cursor.capacity, cursor=cursor) for name in Metric}
        # the same arrays in the order _GPU_READINGS gives the readings
        self.columns = [self.metrics[name]._data for name in Metric]
        self.reasons = Ring(cursor.capacity, "q", NO_REASONS, cursor)


class History:
    """Ring buffers for every GPU and the host; answers questions about a time window."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._cursor = _Cursor(capacity)
        self._times = Ring(capacity, "d", cursor=self._cursor)
        self._gpus: dict[int, _GpuRings] = {}
        self._host = {name: Ring(capacity, cursor=self._cursor) for name in HostMetric}
        self._host_columns = [self._host[name]._data for name in HostMetric]
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
            out._cursor.reserve(n)
            out._cursor.size = n
            out._times._data[:n] = array("d", self._times.tail(n))
            for index, rings in self._gpus.items():
                copy = out._gpus[index] = _GpuRings(out._cursor)
                for metric, ring in rings.metrics.items():
                    copy.metrics[metric]._data[:n] = array("f", ring.tail(n))
                copy.reasons._data[:n] = array("q", rings.reasons.tail(n))
            for host_metric, host_ring in self._host.items():
                out._host[host_metric]._data[:n] = array("f", host_ring.tail(n))
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
        present = {s.index: s for s in frame.gpus}
        for index in present:
            if index not in self._gpus:
                # A GPU that appears late has no readings (NaN) for the ticks before it.
                self._gpus[index] = _GpuRings(self._cursor)
        slot = self._cursor.advance()  # every ring's, at once
        self._times._data[slot] = frame.time
        self._counts.clear()
        self._time_tails.clear()
        self._windows.clear()
        for index, rings in self._gpus.items():
            sample = present.get(index)
            if sample is None or sample.lost:
                for column in rings.columns:
                    column[slot] = NAN
                rings.reasons._data[slot] = NO_REASONS
                continue
            for column, value in zip(rings.columns, _GPU_READINGS(sample), strict=True):
                column[slot] = NAN if value is None else value
            self._last_seen[index] = frame.time
            if sample.xid_events:
                self._xids.setdefault(index, deque(maxlen=MAX_XIDS)).extend(sample.xid_events)
            reasons = sample.clock_reasons
            rings.reasons._data[slot] = NO_REASONS if reasons is None else reasons
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
                self._gpus[index] = _GpuRings(self._cursor)
        runs: list[list[int]] = []  # [first slot, slots, first tick], contiguous slots
        for k in range(len(times)):
            slot = self._cursor.advance()
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
            self._times._data[a : a + n] = filled[k : k + n]
            for index, rings in self._gpus.items():
                given = gpus.get(index)
                if given is None:
                    for column in rings.columns:
                        column[a : a + n] = blank[:n]
                    rings.reasons._data[a : a + n] = unknown[:n]
                    continue
                for column, values in zip(rings.columns, given[0], strict=True):
                    column[a : a + n] = values[at + k : at + k + n]
                masks: array[Any] = given[1]
                rings.reasons._data[a : a + n] = masks[at + k : at + k + n]
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
        slot = (self._cursor.start + near) % self._cursor.capacity
        for sample in frame.gpus:
            rings = self._gpus.get(sample.index)
            if rings is None:
                rings = self._gpus[sample.index] = _GpuRings(self._cursor)
            if sample.lost or any(column[slot] == column[slot] for column in rings.columns):
                continue  # a reading of its own there already
            for column, value in zip(rings.columns, _GPU_READINGS(sample), strict=True):
                column[slot] = NAN if value is None else value
            reasons = sample.clock_reasons
            rings.reasons._data[slot] = NO_REASONS if reasons is None else reasons
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
        data = ring._data
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
            cursor = self._cursor
            a = (cursor.start + cursor.size - n) % cursor.capacity
            b, c = (
                (a + n, 0)
                if a + n <= cursor.capacity
                else (cursor.capacity, a + n - cursor.capacity)
            )
            found = self._windows[seconds] = (self._time_tail(n), a, b, c)
        return found

    def stats(self, gpu: int, metric: Metric, seconds: float) -> WindowStats | None:
        rings = self._gpus.get(gpu)
        if rings is None:
            return None
        return _stats(*self._in_window(rings.metrics[metric], seconds))

    def host_stats(self, metric: HostMetric, seconds: float) -> WindowStats | None:
        return _stats(*self._in_window(self._host[metric], seconds))

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
        total = sum(r._data.itemsize * len(r._data) for r in rings)
        total += sum(r._data.itemsize * len(r._data) for r in self._host.values())
        return total + self._times._data.itemsize * len(self._times._data)


def _stats(times: list[float], values: list[float]) -> WindowStats | None:
    # The advisor asks for ~100 of these per tick: lean on C builtins, slope on demand.
    if not values:
        return None
    total = sum(values)
    if total == total:  # no NaN among them: no gaps to leave out (the common case)
        known = values
    else:
        known = [v for v in values if v == v]
        if not known:
            return None
        times = [t for t, v in zip(times, values, strict=True) if v == v]
        total = sum(known)
    count = len(known)
    # count, mean, min, max (None: when asked), first, last, span_s, times, values
    return WindowStats(
        count,
        total / count,
        None,
        None,
        known[0],
        known[-1],
        times[-1] - times[0],
        times,
        known,
    )
