"""Plain statistics on readings, without the ``statistics`` module: ~0.1 MB of code for
what is here a sort, and ``decimal`` and ``fractions`` with it where nothing else loads
them (doctor, the exporter: 0.7 MB in all)."""

from __future__ import annotations

from collections.abc import Iterable


def median(values: Iterable[float]) -> float:
    """The middle value (the mean of the two middle ones for an even count), as
    ``statistics.median`` gives it; an empty input is an error, as there."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("median of no values")
    middle = n // 2
    if n % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
