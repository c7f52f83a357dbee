"""Tables: a header on every table, columns dropped by priority when the width is short,
and the last (flexible) column given the remaining width first."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from gputui.core.records import frozen
from gputui.view.cells import Cell, Role, Row, RowKey, cut

T = TypeVar("T")


@frozen
class Column(Generic[T]):
    name: str
    width: int  # 0 for the flexible column, which takes what is left
    value: Callable[[T], str]
    right: bool = True
    drop: int = 0  # 0 always shown; higher numbers give way first
    role: Callable[[T], Role] | None = None


def choose(columns: Sequence[Column[T]], width: int, flex_min: int) -> list[Column[T]]:
    """The columns that fit ``width``, keeping ``flex_min`` cells for the flexible one."""
    kept = list(columns)
    for column in sorted((c for c in columns if c.drop > 0), key=lambda c: -c.drop):
        if sum(c.width + 1 for c in kept) + flex_min <= width:
            break
        kept.remove(column)
    return kept


def _pad(text: str, column: Column[T]) -> str:
    text = cut(text, column.width)
    return f"{text:>{column.width}}" if column.right else f"{text:<{column.width}}"


def header(columns: Sequence[Column[T]], width: int) -> Row:
    text = " ".join(_pad(c.name, c) if c.width else c.name for c in columns)
    return Row((Cell(cut(text, width), Role.DIM, bold=True),))


def table_row(
    item: T, columns: Sequence[Column[T]], width: int, key: RowKey = None, base: Role = Role.PLAIN
) -> Row:
    cells: list[Cell] = []
    used = 0
    for i, c in enumerate(columns):
        sep = " " if i else ""
        role = c.role(item) if c.role is not None else base
        if c.width:
            text = sep + _pad(c.value(item), c)
        else:  # the flexible column: the rest of the line, an ellipsis where cut
            text = sep + cut(c.value(item), max(1, width - used - len(sep)))
        cells.append(Cell(text, role))
        used += len(text)
    return Row(tuple(cells), key)
