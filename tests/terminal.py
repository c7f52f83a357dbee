"""A terminal for the tests: takes what gputui writes (cursor moves, SGR sequences, text) and
keeps every cell's character and its attributes and colours as a terminal would, so two
outputs are compared by the screen they leave, not by their bytes.

Written apart from gputui's own output code (gputui/ui/terminal_cells.py), as a terminal
reads the sequences (ECMA-48: CUP, CUF, SGR with its off codes and 256-colour and
true-colour forms), so that a mistake there shows here as a wrong cell.
"""

from __future__ import annotations

import re
from typing import NamedTuple

#: SGR code -> the attribute it sets (a terminal's names)
_ON = {
    1: "bold",
    2: "dim",
    3: "italic",
    4: "underline",
    5: "blink",
    6: "blink",
    7: "reverse",
    8: "conceal",
    9: "strike",
    21: "underline2",
    51: "frame",
    52: "frame",
    53: "overline",
}
#: SGR code -> the attributes it turns off
_OFF = {
    22: {"bold", "dim"},
    23: {"italic"},
    24: {"underline", "underline2"},
    25: {"blink"},
    27: {"reverse"},
    28: {"conceal"},
    29: {"strike"},
    54: {"frame"},
    55: {"overline"},
}
_SEQUENCE = re.compile(
    r"(?P<cup>\x1b\[(?P<line>\d*);?(?P<column>\d*)H)"
    r"|\x1b\[(?P<count>\d*)(?P<move>[ABCDGd])"
    r"|\x1b(?P<index>[DM])"
    r"|\x1b\[(?P<codes>[0-9;]*)m"
    r"|\x1b\[(?P<erase>[0-3]?)(?P<erases>[JK])"
    # what draws nothing: modes, queries, keyboard protocols, titles and other OSC strings
    r"|\x1b\[[0-9;?$>=!<]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]"
    r"|(?P<char>.)",
    re.S,
)


class Cell(NamedTuple):
    char: str
    attributes: frozenset[str]
    fg: str | None
    bg: str | None


class Terminal:
    """``width`` x ``height`` cells, blank at first."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.cells: dict[tuple[int, int], Cell] = {}
        self.y = self.x = 0
        self.wrap_pending = False
        self._attributes: set[str] = set()
        self._fg: str | None = None
        self._bg: str | None = None

    def feed(self, text: str) -> None:
        for found in _SEQUENCE.finditer(text):
            line, column = found.group("line"), found.group("column")
            codes, char = found.group("codes"), found.group("char")
            if found.group("cup") is not None:
                self.y = int(line or 1) - 1
                self.x = int(column or 1) - 1
                self.wrap_pending = False
            elif found.group("move") is not None:
                self._move(found.group("move"), int(found.group("count") or 1))
            elif found.group("index") is not None:
                self._index(found.group("index") == "D")
            elif found.group("erases") is not None:
                self._erase(found.group("erases"), int(found.group("erase") or 0))
            elif codes is not None:
                self._sgr([int(c) if c else 0 for c in codes.split(";")])
            elif char == "\n":  # as a terminal in raw mode without ONLCR: down, same column
                self.y, self.wrap_pending = self.y + 1, False
            elif char == "\r":
                self.x, self.wrap_pending = 0, False
            elif char == "\b":
                self.x, self.wrap_pending = max(0, self.x - 1), False
            elif char is not None:
                assert char != "\x1b", f"unexpected control in the output: {text!r}"
                self._put(char)

    def _move(self, final: str, count: int) -> None:
        """CUU, CUD, CUF, CUB (stopping at the edges), CHA and VPA (absolute, from 1)."""
        top, right = self.height - 1, self.width - 1
        if final == "A":
            self.y = max(0, self.y - count)
        elif final == "B":
            self.y = min(top, self.y + count)
        elif final == "C":
            self.x = min(right, self.x + count)
        elif final == "D":
            self.x = max(0, self.x - count)
        elif final == "G":
            self.x = min(right, count - 1)
        else:
            self.y = min(top, count - 1)
        self.wrap_pending = False

    def _index(self, down: bool) -> None:
        """IND (down a line) and RI (up a line), same column: past the bottom or the top
        line the screen scrolls instead (what a mistaken one shows as)."""
        edge = self.height - 1 if down else 0
        if self.y != edge:
            self.y += 1 if down else -1
        else:
            step = -1 if down else 1
            moved = {(y + step, x): c for (y, x), c in self.cells.items()}
            self.cells = {k: c for k, c in moved.items() if 0 <= k[0] < self.height}
        self.wrap_pending = False

    def _erase(self, what: str, mode: int) -> None:
        """ED (J) and EL (K): to the end (0), from the start (1), or all (2, 3)."""
        here = (self.y, self.x)
        for key in list(self.cells):
            same_line = key[0] == self.y
            if what == "K" and not same_line:
                continue
            after = key >= here if what == "J" else key[1] >= self.x
            before = key <= here if what == "J" else key[1] <= self.x
            if mode >= 2 or (mode == 0 and after) or (mode == 1 and before):
                del self.cells[key]

    def _put(self, char: str) -> None:
        if self.wrap_pending:  # a character after the last column goes to the next line
            self.y, self.x, self.wrap_pending = self.y + 1, 0, False
        cell = Cell(char, frozenset(self._attributes), self._fg, self._bg)
        self.cells[(self.y, self.x)] = cell
        if self.x == self.width - 1:
            self.wrap_pending = True
        else:
            self.x += 1

    def _sgr(self, codes: list[int]) -> None:
        at = 0
        while at < len(codes):
            code = codes[at]
            if code in (38, 48) and at + 1 < len(codes):
                size = 3 if codes[at + 1] == 5 else 5
                colour = ";".join(map(str, codes[at + 1 : at + size]))
                if code == 38:
                    self._fg = colour
                else:
                    self._bg = colour
                at += size
                continue
            if code == 0:
                self._attributes.clear()
                self._fg = self._bg = None
            elif code in _ON:
                self._attributes.add(_ON[code])
            elif code in _OFF:
                self._attributes -= _OFF[code]
            elif 30 <= code <= 37 or 90 <= code <= 97:
                self._fg = str(code)
            elif code == 39:
                self._fg = None
            elif 40 <= code <= 47 or 100 <= code <= 107:
                self._bg = str(code)
            elif code == 49:
                self._bg = None
            at += 1

    def visible(self) -> dict[tuple[int, int], Cell]:
        """The cells as a person sees them: a space shows no foreground, and of the
        attributes only those that draw on it (underline, reverse, strike...)."""
        return {key: _seen(cell) for key, cell in self.cells.items()}

    @property
    def plain(self) -> str:
        """The plain text on screen, a line a row."""
        return "\n".join(
            "".join(
                self.cells[(y, x)].char if (y, x) in self.cells else " " for x in range(self.width)
            )
            for y in range(self.height)
        )

    def changed_cells(self, before: dict[tuple[int, int], Cell]) -> int:
        """How many cells differ from ``before`` (a copy of ``cells``)."""
        return sum(
            1 for key in self.cells.keys() | before.keys() if self.cells.get(key) != before.get(key)
        )


#: what a space shows of its attributes
_SPACE_SHOWS = frozenset({"underline", "underline2", "reverse", "strike", "frame", "overline"})


def _seen(cell: Cell) -> Cell:
    if cell.char != " ":
        return cell
    return Cell(" ", cell.attributes & _SPACE_SHOWS, None, cell.bg)
