"""The footer: the keys the main screen offers now, in one row, the palette's at the right.

One row of one widget, where Textual's footer is a widget per key (14 widgets for gputui's
keys, about 0.8 MB of a running app). Keys that do not fit drop from the right, but for
those the footer keeps whatever the width (the snapshot, one of the three things the app
is for); the palette's key stays, as Textual's footer keeps it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from gputui.core.records import frozen
from gputui.view.cells import Cell, KeysKey, Role, Row


class KeyHint(NamedTuple):
    """A key as the footer offers it: pressed as ``key``, shown as ``shown``."""

    key: str
    shown: str
    description: str
    enabled: bool = True
    #: shown whatever the width: the keys to its left give way first
    kept: bool = False


@frozen
class _Item:
    cells: tuple[Cell, ...]
    key: str

    @property
    def width(self) -> int:
        return sum(c.width for c in self.cells)


def _item(hint: KeyHint) -> _Item:
    role = Role.PLAIN if hint.enabled else Role.DIM
    key = Cell(f" {hint.shown} ", Role.KEY if hint.enabled else Role.DIM, bold=True)
    return _Item((key, Cell(f"{hint.description} ", role)), hint.key)


def footer_row(
    hints: Sequence[KeyHint], palette: KeyHint | None, width: int, ascii: bool = False
) -> Row:
    """The footer's row for ``width`` columns: the keys in order while they fit, then the
    palette's key against the right edge, set off by a thin bar."""
    last = None
    if palette is not None:
        bar = Cell("|" if ascii else "▏", Role.DIM)
        key = Cell(f"{palette.shown} ", Role.KEY, bold=True)
        last = _Item((bar, key, Cell(f"{palette.description} ")), palette.key)
        if last.width > width:
            last = None
    room = width - (last.width if last is not None else 0)
    items: list[_Item] = []
    used = 0
    made = [(_item(hint), hint.kept) for hint in hints]
    reserved = sum(item.width for item, kept in made if kept)  # the kept keys still to come
    full = False
    for item, kept in made:
        reserved -= item.width if kept else 0
        if (full and not kept) or used + item.width + (0 if kept else reserved) > room:
            full = full or not kept
            continue
        items.append(item)
        used += item.width
    if last is not None:
        items += [_Item((Cell(" " * (room - used)),), ""), last]
    spans: list[tuple[int, int, str]] = []
    x = 0
    for item in items:
        if item.key:  # not the gap before the palette's key
            spans.append((x, x + item.width, item.key))
        x += item.width
    cells = tuple(c for item in items for c in item.cells)
    return Row(cells, KeysKey(tuple(spans)))
