"""PCIe link arithmetic: per-direction bandwidth of a link by generation and width."""

from __future__ import annotations

from typing import Final

# Usable bytes/s per direction of one x16 link, after line encoding (8b/10b, 128b/130b...).
X16_BYTES_PER_S: Final[dict[int, float]] = {
    1: 4.0e9,
    2: 8.0e9,
    3: 15.75e9,
    4: 31.5e9,
    5: 63.0e9,
    6: 121.0e9,
}


def link_bandwidth(gen: int | None, width: int | None) -> float | None:
    """Bytes/s one direction of a ``gen`` x ``width`` link carries, or None if unknown."""
    if gen is None or width is None or width <= 0:
        return None
    per_x16 = X16_BYTES_PER_S.get(gen)
    if per_x16 is None:
        return None
    return per_x16 * width / 16
