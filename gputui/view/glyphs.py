"""Bars and sparklines as characters; the screen maps them to ASCII where the terminal
cannot draw them."""

from __future__ import annotations

import math
from collections.abc import Sequence

from gputui.view.cells import Cell, Role

BLOCKS = " ▏▎▍▌▋▊▉█"
SPARKS = "▁▂▃▄▅▆▇█"


def bar(fraction: float | None, width: int, role: Role) -> Cell:
    """A horizontal bar with eighth-block resolution; a dotted track when unknown."""
    if width <= 0:
        return Cell("")
    if fraction is None or math.isnan(fraction):
        return Cell("·" * width, Role.DIM)
    fraction = min(1.0, max(0.0, fraction))
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    cells = "█" * full
    if full < width:
        cells += (BLOCKS[part] if part else "") + " " * (width - full - (1 if part else 0))
    return Cell(cells, role, track=True)


def spark(values: Sequence[float], top: float | None) -> str:
    """One character per value (NaN: blank), scaled to ``top`` or the highest value."""
    known = [v for v in values if v == v]
    if not known:
        return " " * len(values)
    high = top if top else max(known)
    top_level = len(SPARKS) - 1
    scale = top_level / (high or 1.0)
    # Clamped before int(): an infinite or negative reading draws full or empty.
    return "".join(
        SPARKS[int(min(top_level, max(0.0, v * scale + 0.5)))] if v == v else " " for v in values
    )
