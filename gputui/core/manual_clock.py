"""Clocks that sources can be given instead of the wall clock (tests, screenshots, warm-up)."""

from __future__ import annotations


class ManualClock:
    """A clock that moves only when told to: the same frames on every run."""

    def __init__(self, start: float) -> None:
        self._now = start

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds
