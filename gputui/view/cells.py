"""The vocabulary of the view model: cells, rows, panels, and fitting a row to a width."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import NamedTuple

from gputui.core.records import frozen

ELLIPSIS = "…"


class Role(Enum):
    """What a piece of text means; the screen's palette turns it into a colour."""

    PLAIN = "plain"
    DIM = "dim"
    OK = "ok"
    WARN = "warn"
    CRIT = "crit"
    ACCENT = "accent"
    KEY = "key"  # a key to press, as Textual draws one in a footer

    # Hashed as the one object each member is (Enum's own hash is Python code): the
    # palette looks a role up for every cell it paints.
    __hash__ = object.__hash__


class Cell(NamedTuple):
    """A piece of a row (a named tuple: some hundreds are built and compared every tick,
    and a tuple is built and compared in C).

    ``drop``: the width priority. 0 is always kept; when a row is too wide, cells with the
    highest ``drop`` go first. ``flex``: the cell that is cut (with an ellipsis) before
    anything is dropped, such as a command line or a GPU name. ``track``: a bar, drawn in
    its colour on the bar's track."""

    text: str
    role: Role = Role.PLAIN
    bold: bool = False
    drop: int = 0
    flex: bool = False
    track: bool = False
    reverse: bool = False

    @property
    def width(self) -> int:
        return len(self.text)


@frozen
class GpuKey:
    index: int


@frozen
class FindingKey:
    position: int  # in the advisor's order (most severe first)
    rule: str
    gpu: int | None


@frozen
class PidKey:
    pid: int


@frozen
class CardsKey:
    """A line across a row of overview cards: the column says which GPU."""

    gpus: tuple[int, ...]
    card_width: int

    def gpu_at(self, x: int) -> int | None:
        column = x // self.card_width if self.card_width > 0 else -1
        return self.gpus[column] if 0 <= column < len(self.gpus) else None


@frozen
class KeysKey:
    """The footer's row: which key each stretch of columns stands for."""

    spans: tuple[tuple[int, int, str], ...]  # from column, to column, the key pressed

    def key_at(self, x: int) -> str | None:
        return next((key for start, end, key in self.spans if start <= x < end), None)


RowKey = GpuKey | FindingKey | PidKey | CardsKey | KeysKey | None


class Row(NamedTuple):
    cells: tuple[Cell, ...]
    key: RowKey = None
    bold: bool = False  # the selected row

    @property
    def plain(self) -> str:
        return "".join(c.text for c in self.cells)


@frozen
class Panel:
    """A panel's contents: its border title and subtitle (plain text), and its rows."""

    title: str
    rows: tuple[Row, ...]
    subtitle: str = ""


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, an ellipsis marking a cut."""
    if len(text) <= width:
        return text
    if width <= 0:
        return ""
    return text[: width - 1] + ELLIPSIS


def fit(cells: Sequence[Cell], width: int) -> tuple[Cell, ...]:
    """The cells that show in ``width`` columns: the least important dropped first, then
    a flexible cell shortened (the rightmost), then the end cut, every cut marked with an
    ellipsis."""
    total = sum([len(c.text) for c in cells])
    if total <= width:
        return tuple(cells)
    kept = list(cells)
    droppable = sorted(
        (i for i, c in enumerate(cells) if c.drop > 0), key=lambda i: (-cells[i].drop, -i)
    )
    gone: set[int] = set()
    for i in droppable:
        if total <= width:
            break
        gone.add(i)
        total -= cells[i].width
    kept = [c for i, c in enumerate(cells) if i not in gone]
    if total > width:  # the rightmost flexible cell gives way first
        for i, c in reversed(list(enumerate(kept))):
            if c.flex:
                room = max(1, c.width - (total - width))
                kept[i] = c._replace(text=cut(c.text, room))
                total -= c.width - room
                break
    if total > width:  # still too wide: cut the end
        out: list[Cell] = []
        used = 0
        for c in kept:
            if used + c.width <= width:
                out.append(c)
                used += c.width
                continue
            room = width - used
            if room > 0:
                out.append(c._replace(text=cut(c.text, room)))
            elif out:  # the cut falls between two cells: the ellipsis ends the last one
                last = out[-1]
                out[-1] = last._replace(text=cut(last.text + " ", last.width))
            break
        kept = out
    return tuple(kept)


def wrap(text: str, width: int, indent: str = "", first: str = "") -> list[str]:
    """``text`` in lines of at most ``width``: ``first`` leads the first line, ``indent``
    the others (a hanging indent); a word longer than a line is cut."""
    lines: list[str] = []
    line = first
    lead = len(first)
    for word in text.split():
        if len(line) > lead and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = indent
            lead = len(indent)
        if len(line) > lead:
            line += " "
        room = width - len(line)
        line += word if len(word) <= room else cut(word, max(1, room))
    if len(line) > lead or not lines:
        lines.append(line.rstrip())
    return lines


#: the nouns the panels count whose plural is not theirs with an -s or -es
_IRREGULAR = {"child": "children"}


def plural(count: int, noun: str) -> str:
    """'1 GPU', '4 GPUs', '2 processes', '2 children'."""
    if count == 1:
        return f"{count} {noun}"
    if noun in _IRREGULAR:
        return f"{count} {_IRREGULAR[noun]}"
    return f"{count} {noun}es" if noun.endswith("s") else f"{count} {noun}s"


def more_row(
    hidden: int, noun: str, *, arrow: str = "", critical: int = 0, above: bool = False
) -> Row:
    """'+4 GPUs ↓', '↑ +2 GPUs', '+3 findings, 1 critical': a cut that says what it hides
    (``above``: the arrow leads, for rows hidden above the first shown)."""
    text = "+" + plural(hidden, noun)
    if critical:
        text += f", {critical} critical"
    if arrow:
        text = f"{arrow} {text}" if above else f"{text} {arrow}"
    return Row((Cell(text, Role.CRIT if critical else Role.DIM, bold=bool(critical)),))


def plain_lines(panel: Panel, width: int) -> list[str]:
    """The panel's rows as the screen shows them, without styles (files and tests)."""
    return ["".join(c.text for c in fit(r.cells, width)) for r in panel.rows]
