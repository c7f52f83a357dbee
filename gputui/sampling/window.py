"""A window's figures: count, mean, least and greatest, first and last, span and slope."""

from __future__ import annotations

from collections.abc import Sequence
from operator import mul
from typing import Final


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


def window_stats(times: list[float], values: list[float]) -> WindowStats | None:
    """The figures of readings at ``times`` (NaN: none), gaps left out; None for none."""
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
