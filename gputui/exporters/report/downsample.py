"""Many ticks as few points that keep every peak: per time bucket, its lowest and highest
reading, in the order they happened (two points a bucket, at the bucket's start and its
middle). A one-second spike in a week survives; a week of 1 s ticks on 8 GPUs stays small.

Runs with no more ticks than points are kept as they are.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Sequence

from gputui.core.records import frozen

Point = float | None


@frozen
class Buckets:
    """Where each bucket starts (a time) and which ticks fall in it (index bounds); or,
    for a short run, every tick as its own point (``raw``)."""

    xs: list[float]
    bounds: list[int]
    raw: bool


def buckets(times: Sequence[float], count: int) -> Buckets:
    """``count`` equal time buckets over the run (two points each), or the ticks as they
    are when there are no more than ``2 * count`` of them."""
    n = len(times)
    if n <= 2 * count or n < 2:
        return Buckets(list(times), list(range(n + 1)), raw=True)
    start, end = times[0], times[-1]
    width = (end - start) / count
    edges = [start + k * width for k in range(count)]
    bounds = [bisect.bisect_left(times, edge) for edge in edges] + [n]
    xs: list[float] = []
    for edge in edges:
        xs.append(edge)
        xs.append(edge + width / 2)
    return Buckets(xs, bounds, raw=False)


def series(values: Sequence[float], b: Buckets, digits: int = 1, scale: float = 1.0) -> list[Point]:
    """One series over the buckets, each point times ``scale`` (positive: a bucket's lowest
    and highest readings are the same ticks scaled or not, so the scaling is done on the
    points alone): NaN and empty buckets become gaps (None)."""
    if b.raw:
        return [round(v * scale, digits) if v == v else None for v in values]
    out: list[Point] = []
    bounds = b.bounds
    if isinstance(values, array):
        values = values.tolist()  # each reading made a float once, not at every pass
    whole = sum(values)
    gaps = whole != whole  # no NaN in the whole run: none in any bucket, not summed again
    for k in range(len(bounds) - 1):
        lo, hi = bounds[k], bounds[k + 1]
        if hi <= lo:
            out += (None, None)
            continue
        chunk = values[lo:hi]
        if gaps and (total := sum(chunk)) != total:  # its readings only, and which tick
            known = [(i, v) for i, v in enumerate(chunk) if v == v]
            if not known:
                out += (None, None)
                continue
            low = min(known, key=_second)
            high = max(known, key=_second)
            first, second = (low, high) if low[0] <= high[0] else (high, low)
            out += (round(first[1] * scale, digits), round(second[1] * scale, digits))
            continue
        low_v, high_v = min(chunk), max(chunk)
        if chunk.index(low_v) <= chunk.index(high_v):
            out += (round(low_v * scale, digits), round(high_v * scale, digits))
        else:
            out += (round(high_v * scale, digits), round(low_v * scale, digits))
    return out


def _second(pair: tuple[int, float]) -> float:
    return pair[1]


def dominant(codes: Sequence[int], b: Buckets, kinds: int) -> list[int]:
    """Per bucket (per point), the code most of its ticks had: a lane of causes."""
    if b.raw:
        return list(codes)
    out: list[int] = []
    bounds = b.bounds
    for k in range(len(bounds) - 1):
        chunk = codes[bounds[k] : bounds[k + 1]]
        if not chunk:
            out += (-1, -1)
            continue
        best = max(range(kinds), key=chunk.count)
        out += (best, best)
    return out


def runs(xs: Sequence[float], codes: Sequence[int], end: float) -> list[tuple[float, float, int]]:
    """Consecutive equal codes as (from, to, code), gaps (-1) left out."""
    out: list[tuple[float, float, int]] = []
    start = 0
    for i in range(1, len(codes) + 1):
        if i < len(codes) and codes[i] == codes[start]:
            continue
        if codes[start] >= 0:
            out.append((xs[start], xs[i] if i < len(xs) else end, codes[start]))
        start = i
    return out
