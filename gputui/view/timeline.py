"""History on a fixed time scale: one column is one time bucket, aligned to the clock, so a
sparkline's width always means the same span and a row changes only when a bucket ends.

A "last 5 min" sparkline over 40 s of history is 40 s of columns at the right and blank
space to the left, not 40 s stretched to look like five minutes."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from gputui.names import Metric
from gputui.sampling.history import History
from gputui.view.glyphs import spark

#: bucket lengths a scale may use: "1 column = 5 s" reads better than "= 4.3 s"
NICE_BUCKETS_S = (0.25, 0.5, 1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 300, 600, 900, 1800)
NAN = float("nan")


@dataclass(frozen=True, slots=True)
class Scale:
    window_s: float
    bucket_s: float
    columns: int
    end: float  # the end of the newest complete bucket (a multiple of bucket_s)

    @property
    def start(self) -> float:
        return self.end - self.columns * self.bucket_s


def scale_for(window_s: float, interval_s: float, room: int, now: float) -> Scale:
    """The finest nice bucket that fits ``window_s`` in ``room`` columns and holds at least
    one reading (a bucket shorter than the interval would draw gaps)."""
    need = max(window_s / max(1, room), interval_s)
    bucket = next((float(b) for b in NICE_BUCKETS_S if b >= need - 1e-9), float(NICE_BUCKETS_S[-1]))
    columns = max(1, min(room, math.ceil(window_s / bucket - 1e-9)))
    return Scale(window_s, bucket, columns, math.floor(now / bucket + 1e-9) * bucket)


def buckets(
    times: Sequence[float], values: Sequence[float], scale: Scale, interval_s: float
) -> list[float]:
    """The mean of each bucket (NaN where nothing was read). A bucket left empty only by
    sampling jitter (the readings around it no further apart than usual) holds the reading
    before it; a real gap, where readings stopped, stays blank."""
    start, size, columns = scale.start, scale.bucket_s, scale.columns
    sums = [0.0] * columns
    counts = [0] * columns
    first = [NAN] * columns  # time of the oldest and the newest reading in each bucket
    last = [NAN] * columns
    lo = bisect.bisect_left(times, start)
    hi = bisect.bisect_left(times, scale.end)
    for i in range(lo, hi):
        v = values[i]
        if v != v:
            continue
        c = min(columns - 1, int((times[i] - start) / size))
        sums[c] += v
        counts[c] += 1
        if counts[c] == 1:
            first[c] = times[i]
        last[c] = times[i]
    out = [sums[c] / counts[c] if counts[c] else NAN for c in range(columns)]
    following = [NAN] * columns  # the time of the next reading after each bucket
    upcoming = times[hi] if hi < len(times) and values[hi] == values[hi] else NAN
    for c in range(columns - 1, -1, -1):
        following[c] = upcoming
        if counts[c]:
            upcoming = first[c]
    held_v, held_t = NAN, NAN
    if lo > 0 and values[lo - 1] == values[lo - 1]:
        held_v, held_t = values[lo - 1], times[lo - 1]
    for c in range(columns):
        if counts[c]:
            held_v, held_t = out[c], last[c]
        elif following[c] - held_t < 2 * interval_s:  # NaN on either side: no hold
            out[c] = held_v
    return out


class Timeline:
    """Bucketed series, remembered until a bucket ends: most ticks draw from memory."""

    def __init__(self) -> None:
        self._memo: dict[tuple[int, Metric, Scale, int, float], list[float]] = {}
        self._sparks: dict[tuple[int, float | None], tuple[list[float], str]] = {}

    def series(
        self, history: History, gpu: int, metric: Metric, scale: Scale, interval_s: float
    ) -> list[float]:
        times = history.times(scale.window_s + 2 * scale.bucket_s + interval_s)
        # The complete buckets are settled once their readings are in: how many readings
        # they hold and when the first came say whether anything changed (a new bucket, a seek).
        lo = bisect.bisect_left(times, scale.start)
        hi = bisect.bisect_left(times, scale.end)
        key = (gpu, metric, scale, hi - lo, times[lo] if lo < len(times) else -1.0)
        memo = self._memo.get(key)
        if memo is None:
            if len(self._memo) > 64:
                self._memo.clear()
            values = history.series(gpu, metric, len(times))
            memo = self._memo[key] = buckets(times, values, scale, interval_s)
        return memo

    def spark(
        self,
        history: History,
        gpu: int,
        metric: Metric,
        scale: Scale,
        interval_s: float,
        top: float | None,
    ) -> str:
        """The series as a sparkline, drawn once per bucket (the string is kept with it)."""
        values = self.series(history, gpu, metric, scale, interval_s)
        key = (id(values), top)
        drawn = self._sparks.get(key)
        if drawn is None or drawn[0] is not values:
            if len(self._sparks) > 64:
                self._sparks.clear()
            drawn = self._sparks[key] = (values, spark(values, top))
        return drawn[1]

    def covered_s(self, history: History, scale: Scale) -> float:
        """How much of the scale's span the history reaches back over."""
        times = history.times(scale.window_s)
        if not times:
            return 0.0
        return max(0.0, min(scale.window_s, scale.end - times[0]))
