"""History on a fixed time scale: one column is one time bucket, aligned to the clock, so a
sparkline's width always means the same span and a row changes only when a bucket ends.

A "last 5 min" sparkline over 40 s of history is 40 s of columns at the right and blank
space to the left, not 40 s stretched to look like five minutes."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from gputui.core.names import Metric
from gputui.core.records import frozen
from gputui.sampling.history import History
from gputui.view.glyphs import spark

#: bucket lengths a scale may use: "1 column = 5 s" reads better than "= 4.3 s"
NICE_BUCKETS_S = (0.25, 0.5, 1, 2, 3, 5, 10, 15, 20, 30, 60, 120, 180, 300, 600, 900, 1800)
NAN = float("nan")


@frozen
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
    """Bucketed series, remembered between ticks: a complete bucket never changes, so when
    the scale moves on by a bucket only the new one is computed."""

    def __init__(self) -> None:
        self._history: History | None = None
        self._memo: dict[tuple[int, Metric, float, float, int], tuple[float, list[float]]] = {}
        self._sparks: dict[
            tuple[int, Metric, float, float, int, float | None], tuple[float, str]
        ] = {}

    def series(
        self, history: History, gpu: int, metric: Metric, scale: Scale, interval_s: float
    ) -> list[float]:
        if history is not self._history:  # a new history (a replay's seek): start over
            self._history = history
            self._memo.clear()
            self._sparks.clear()
        key = (gpu, metric, scale.window_s, scale.bucket_s, scale.columns)
        memo = self._memo.get(key)
        if memo is not None and memo[0] == scale.end:
            return memo[1]
        shift = round((scale.end - memo[0]) / scale.bucket_s) if memo is not None else 0
        if memo is not None and 0 < shift < scale.columns:
            newest = Scale(shift * scale.bucket_s, scale.bucket_s, shift, scale.end)
            values = memo[1][shift:] + self._compute(history, gpu, metric, newest, interval_s)
        else:
            values = self._compute(history, gpu, metric, scale, interval_s)
        if len(self._memo) > 256:
            self._memo.clear()
        self._memo[key] = (scale.end, values)
        return values

    @staticmethod
    def _compute(
        history: History, gpu: int, metric: Metric, scale: Scale, interval_s: float
    ) -> list[float]:
        # the readings of the scale and a little before it (the reading a bucket may hold)
        times = history.times(scale.window_s + 2 * scale.bucket_s + interval_s)
        return buckets(times, history.series(gpu, metric, len(times)), scale, interval_s)

    def spark(
        self,
        history: History,
        gpu: int,
        metric: Metric,
        scale: Scale,
        interval_s: float,
        top: float | None,
    ) -> str:
        """The series as a sparkline. Against a fixed ``top`` each column is drawn once:
        when the scale moves on, the line moves left and only the new columns are drawn."""
        values = self.series(history, gpu, metric, scale, interval_s)
        key = (gpu, metric, scale.window_s, scale.bucket_s, scale.columns, top)
        drawn = self._sparks.get(key)
        if drawn is not None and drawn[0] == scale.end:
            return drawn[1]
        shift = round((scale.end - drawn[0]) / scale.bucket_s) if drawn is not None else 0
        if drawn is not None and top and 0 < shift < scale.columns:
            line = drawn[1][shift:] + spark(values[-shift:], top)
        else:
            line = spark(values, top)
        if len(self._sparks) > 256:
            self._sparks.clear()
        self._sparks[key] = (scale.end, line)
        return line

    def covered_s(self, history: History, scale: Scale) -> float:
        """How much of the scale's span the history reaches back over: asked a bucket past
        the span, since the span ends at a bucket's edge and its first reading may lie a
        scrape before it (at 15 s, '42 s recorded so far' stayed with hours recorded)."""
        times = history.times(scale.window_s + scale.bucket_s)
        if not times:
            return 0.0
        return max(0.0, min(scale.window_s, scale.end - times[0]))
