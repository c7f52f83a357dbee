"""The median gputui works out is the one ``statistics`` gives, for every count and order."""

from __future__ import annotations

import random
import statistics

import pytest

from gputui.core.numbers import median


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 8, 101])
def test_the_median_is_the_statistics_modules(count: int) -> None:
    rng = random.Random(count)
    for _ in range(50):
        # spread values and repeated ones (ties in the middle)
        pool = [rng.uniform(-1e3, 1e3) for _ in range(count)] + [1.0, 2.0]
        values = [rng.choice(pool) for _ in range(count)]
        assert median(values) == statistics.median(values)
        assert median(iter(values)) == statistics.median(values)  # a generator too


def test_the_median_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError):
        median([])
