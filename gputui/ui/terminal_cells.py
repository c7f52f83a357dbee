"""What the terminal shows of the rows gputui writes itself, and the shortest output that
brings those cells to new rows: only the cells that changed, the cursor moved the shortest
way between them, and only the colour and attribute changes between neighbouring cells
(what curses and notcurses send), where a whole row with a full colour reset and restate
for every run of text was written before.

Pure: rows in (Rich segments), terminal text out; ``FastPaint`` (compat.py) holds one and
tells it to forget what it knows whenever anything else draws on the screen.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from itertools import compress
from operator import ne, or_
from typing import Final, NamedTuple

from rich.cells import cell_len
from rich.color import ColorSystem
from rich.segment import Segment
from rich.style import Style

from gputui.ui.cursor_moves import Target, across, move_cost, move_to, target

#: Rich's names for a console's colour systems
COLOR_SYSTEMS: Final[dict[str, ColorSystem]] = {
    "standard": ColorSystem.STANDARD,
    "256": ColorSystem.EIGHT_BIT,
    "truecolor": ColorSystem.TRUECOLOR,
    "windows": ColorSystem.WINDOWS,
}

#: an attribute's SGR code -> the code that turns it off (bold and dim share theirs)
_OFF: Final[dict[str, str]] = {
    **dict.fromkeys(("1", "2"), "22"),
    "3": "23",
    **dict.fromkeys(("4", "21"), "24"),
    **dict.fromkeys(("5", "6"), "25"),
    "7": "27",
    "8": "28",
    "9": "29",
    **dict.fromkeys(("51", "52"), "54"),
    "53": "55",
}
RESET: Final = "\x1b[0m"


class Pen(NamedTuple):
    """The terminal's SGR state: attributes on, foreground and background (their codes;
    None: the terminal's default)."""

    flags: frozenset[str]
    fg: str | None
    bg: str | None


PLAIN: Final = Pen(frozenset(), None, None)


def _parse(codes: str) -> Pen:
    """A style's SGR codes ('1;38;5;253;48;5;17') as the pen they leave from a reset."""
    flags: set[str] = set()
    fg = bg = None
    tokens = codes.split(";") if codes else []
    at = 0
    while at < len(tokens):
        token = tokens[at]
        if token in ("38", "48") and at + 1 < len(tokens):
            size = 3 if tokens[at + 1] == "5" else 5
            colour = ";".join(tokens[at : at + size])
            at += size
            if token == "38":
                fg = colour
            else:
                bg = colour
            continue
        number = int(token) if token.isdigit() else -1
        if 30 <= number <= 37 or 90 <= number <= 97:
            fg = token
        elif 40 <= number <= 47 or 100 <= number <= 107:
            bg = token
        elif token in _OFF:
            flags.add(token)
        at += 1
    return Pen(frozenset(flags), fg, bg)


def pen_of(style: Style | None, system: ColorSystem | None) -> Pen:
    """The pen a segment's style draws with, as Rich renders it for ``system`` (the codes
    Rich itself would write, read back from its own rendering)."""
    if style is None or system is None:
        return PLAIN
    rendered = style.render("x", color_system=system)
    if not rendered.startswith("\x1b["):
        return PLAIN
    return _parse(rendered[2 : rendered.index("m")])


@lru_cache(maxsize=8192)
def change(old: Pen, new: Pen) -> str:
    """The shortest SGR sequence that turns pen ``old`` into ``new`` ("" when the same):
    only what differs, or a reset and the new pen whole where that is shorter."""
    if old == new:
        return ""
    whole = ["0", *sorted(new.flags)]
    whole += [c for c in (new.fg, new.bg) if c is not None]
    codes: list[str] = []
    gone = old.flags - new.flags
    if gone:
        codes += sorted({_OFF[flag] for flag in gone})
        # an off code can turn off more than the flag (22: bold and dim): put back the rest
        cleared = {f for f in old.flags if _OFF[f] in codes}
        codes += sorted((cleared & new.flags) | (new.flags - old.flags))
    else:
        codes += sorted(new.flags - old.flags)
    if new.fg != old.fg:
        codes.append(new.fg or "39")
    if new.bg != old.bg:
        codes.append(new.bg or "49")
    shortest = min((";".join(whole), ";".join(codes)), key=len)
    return f"\x1b[{shortest}m"


#: characters the panels draw with that rich agrees take one cell each: a row made of
#: these needs no width lookup (which rich caches by the whole text: a tick's changed rows
#: would fill its cache)
_NARROW: Final = "".join(
    c for c in (*map(chr, range(32, 127)), *"▏▎▍▌▋▊▉█▁▂▃▄▅▆▇✖▲●▶·…─│╭╮╯╰→✓°±×") if cell_len(c) == 1
)
_NOT_NARROW: Final = re.compile(f"[^{re.escape(_NARROW)}]")


def one_cell_each(text: str) -> bool:
    """Whether every character of ``text`` takes one terminal cell."""
    return _NOT_NARROW.search(text) is None or len(text) == cell_len(text)


class Pens:
    """Each style's pen, kept by the style object. Rich keeps a style's SGR codes on the
    object itself, worked out for the first colour system asked, and Textual's rows render
    through them: a pen read from that object says what its rows say (an equal style
    rendered elsewhere for another system might not)."""

    def __init__(self) -> None:
        #: id of a style -> the style and its pen (None: the style carries a link)
        self._by_id: dict[int, tuple[Style, Pen | None]] = {}
        self._system: ColorSystem | None = None

    def _for(self, system: ColorSystem | None) -> None:
        """The pens known are for ``system``: another system's are forgotten."""
        if system is not self._system:
            self._by_id.clear()
            self._system = system

    def __call__(self, style: Style | None, system: ColorSystem | None) -> Pen:
        if style is None or system is None:
            return PLAIN
        return self._pen(style, system) or PLAIN

    def _pen(self, style: Style, system: ColorSystem | None) -> Pen | None:
        self._for(system)
        found = self._by_id.get(id(style))
        if found is not None and found[0] is style:
            return found[1]
        pen = None if style.link else pen_of(style, system)
        if len(self._by_id) > 4096:  # styles come from a palette; this is a backstop
            self._by_id.clear()
        self._by_id[id(style)] = (style, pen)
        return pen

    def row(self, segments: Iterable[Segment], system: ColorSystem | None) -> Row | None:
        """``row_of``, each style's pen (and whether it carries a link) looked up once."""
        self._for(system)
        by_id = self._by_id
        texts: list[str] = []
        cells: list[Pen] = []
        for text, style, control in segments:
            if control or not text:
                continue
            pen = PLAIN
            if style is not None:
                found = by_id.get(id(style))
                drawn = found[1] if found is not None and found[0] is style else None
                if drawn is None:
                    drawn = self._pen(style, system)
                    if drawn is None:
                        return None  # a link
                if system is not None:
                    pen = drawn
            texts.append(text)
            cells += [pen] * len(text)
        joined = "".join(texts)
        return Row(joined, tuple(cells)) if one_cell_each(joined) else None


class Row(NamedTuple):
    """A row of cells as the terminal shows them: one character a column, and the pen of
    each."""

    text: str
    pens: tuple[Pen, ...]


def _cut(row: Row, start: int, end: int) -> Row:
    return Row(row.text[start:end], row.pens[start:end])


def row_of(
    segments: Iterable[Segment], system: ColorSystem | None, pens: Pens | None = None
) -> Row | None:
    """Segments as one cell a character; None where a character is not one cell wide (a
    wide or combining one) or a style carries a link: such a row is written whole."""
    return (pens or Pens()).row(segments, system)


#: attributes a space shows (its foreground, bold, dim, italics and blink show nothing)
SPACE_SHOWS: Final = frozenset({"4", "21", "7", "9", "51", "52", "53"})


def _space_pen(pen: Pen) -> tuple[str | None, frozenset[str]]:
    """What of ``pen`` a space shows: its background and the attributes that draw on it."""
    return pen.bg, pen.flags & SPACE_SHOWS


class _Run(NamedTuple):
    """Changed cells of one pen, side by side: columns ``start`` to ``end`` of ``row``,
    which is shown from column ``x`` of line ``y``."""

    y: int
    x: int
    row: Row
    start: int
    end: int

    @property
    def pen(self) -> Pen:
        return self.row.pens[self.start]

    @property
    def blank(self) -> bool:
        return self.row.text[self.start : self.end].strip(" ") == ""

    def move_from(self, cursor: tuple[int, int] | None) -> str:
        """The cursor from ``cursor`` to this run's first cell, the shortest way."""
        return move_to(self.y, self.x + self.start, cursor)

    def cursor_after(self, width: int) -> tuple[int, int] | None:
        """Where the cursor is once this run is written: after its last cell, or not known
        where that was the screen's last column (the terminal waits there to wrap)."""
        right = self.x + self.end
        return None if right >= width else (self.y, right)


class TerminalRows:
    """The cells the terminal shows where gputui wrote rows itself, by screen line; what
    it does not know (never written, or drawn over since) is written whole.

    A write's changed cells go out grouped by pen: each pen set once, then every run of
    its cells reached with the shortest cursor move (a panel's bars and figures alternate
    colours along a row: one colour change a pen a tick, not one a run); a run of spaces
    goes with any pen of its background."""

    def __init__(self) -> None:
        #: (screen line, first column) -> the row as last written there (panels side by
        #: side share a line: each its own stretch of it)
        self._known: dict[tuple[int, int], Row] = {}
        self._pens = Pens()
        self._runs: list[_Run] = []
        #: rows the terminal shows nothing known of (screen line, first column, row): each
        #: written from its first cell to its last, the pen changed between neighbours
        self._fresh: list[tuple[int, int, Row]] = []
        self._whole: list[str] = []  # rows written whole, each from its place, pen reset
        self._width = 0
        #: the terminal's pen after the last take: kept, not reset, between writes (a tick
        #: starts where the last one left off); ``reset`` before anything else writes.
        #: None: not known (the terminal was away: a suspend), so reset first. On leaving,
        #: the alternate screen's exit (DECRC) gives the shell back its own.
        self._pen: Pen | None = PLAIN
        #: where the cursor is after the last take, while nothing else has moved it: the
        #: next take's first move is from there (None: not known, so a move to the place)
        self._cursor: tuple[int, int] | None = None

    def forget(self) -> None:
        """Something else drew on the screen, or the terminal was away: nothing known is
        trusted any more, its pen and the cursor included."""
        self._known.clear()
        self._pen = None
        self._cursor = None

    def moved(self) -> None:
        """The cursor was moved after the last take (parked elsewhere)."""
        self._cursor = None

    def drawn_over(self, y: int, start: int, end: int) -> None:
        """Something else drew columns ``start`` to ``end`` of line ``y``: the rows known
        there are written whole next time."""
        for x, _ in self._crossing(y, start, end):
            del self._known[(y, x)]

    def _crossing(self, y: int, start: int, end: int) -> list[tuple[int, Row]]:
        """The stretches known on line ``y`` with a cell from ``start`` to ``end``: each
        its first column and row."""
        return [
            (key[1], row)
            for key, row in self._known.items()
            if key[0] == y and key[1] < end and key[1] + len(row.text) > start
        ]

    def _taken_over(self, y: int, start: int, end: int) -> Row | None:
        """The cells from ``start`` to ``end`` of line ``y`` as the stretches known there
        show them, as one row (None where any of them is not known); those stretches keep
        only what lies outside, each as a stretch of its own."""
        pieces: list[tuple[int, Row]] = []
        for x, row in self._crossing(y, start, end):
            right = x + len(row.text)
            del self._known[(y, x)]
            if x < start:
                self._known[(y, x)] = _cut(row, 0, start - x)
            if right > end:
                self._known[(y, end)] = _cut(row, end - x, right - x)
            low = max(x, start)
            pieces.append((low, _cut(row, low - x, min(right, end) - x)))
        pieces.sort(key=lambda piece: piece[0])
        at = start
        texts: list[str] = []
        pens: list[Pen] = []
        for low, piece in pieces:
            if low != at:
                return None
            texts.append(piece.text)
            pens += piece.pens
            at += len(piece.text)
        return Row("".join(texts), tuple(pens)) if at == end else None

    def write(
        self,
        y: int,
        x: int,
        segments: Iterable[Segment],
        system: ColorSystem | None,
        screen_width: int,
        whole: Callable[[], str],
    ) -> None:
        """Bring screen line ``y`` from column ``x`` to ``segments`` at the next ``take``:
        the cells that changed, or ``whole()`` (the row as Rich renders it, from a reset
        pen) where the row cannot be told cell by cell. A row whose stretch is not one
        written before (the compositor's lines across panels, a panel's row after them) is
        compared with the cells the stretches under it show, where they show all of them;
        each cell has one owner. Rows written between two takes do not overlap (one
        compositor update, or the app's own rows)."""
        self._width = screen_width
        segments = list(segments)
        new = self._pens.row(segments, system)
        if new is None:  # what it covers is forgotten
            cells = sum(cell_len(text) for text, _, control in segments if not control)
            self.drawn_over(y, x, x + cells)
            self._whole.append(f"\x1b[{y + 1};{x + 1}H{whole()}")
            return
        old = self._known.get((y, x))
        if old is None or len(old.text) != len(new.text):
            old = self._taken_over(y, x, x + len(new.text))  # None, or of the same length
        self._known[(y, x)] = new
        if old is None:
            # every cell changes: the order of its runs is the row's own (a first paint is
            # the whole screen of them; nothing is gained by choosing among orders)
            self._fresh.append((y, x, new))
            return
        if old == new:
            return
        changed = _changed_runs(old, new)
        pens = new.pens
        for start, end in changed:
            run = start
            for column in range(start + 1, end):
                if pens[column] != pens[run]:
                    self._runs.append(_Run(y, x, new, run, column))
                    run = column
            self._runs.append(_Run(y, x, new, run, end))

    def reset(self) -> str:
        """The SGR reset the terminal needs before anyone else writes to it (Textual's
        output assumes a reset pen); "" where it has one. What else writes moves the
        cursor too."""
        self._cursor = None
        if self._pen == PLAIN:
            return ""
        self._pen = PLAIN
        return RESET

    def take(self) -> str:
        """The output for everything written since the last take. The pen it leaves set
        and the cursor where it leaves it are the next take's start (``reset`` gives the
        pen back and forgets the cursor)."""
        out = [RESET] if self._pen is None or (self._whole and self._pen != PLAIN) else []
        out += self._whole
        pen = PLAIN if self._whole or self._pen is None else self._pen
        cursor = None if self._whole else self._cursor
        self._whole.clear()
        for y, x, row in self._fresh:
            out.append(move_to(y, x, cursor))
            pen = _write_row(row, pen, out)
            right = x + len(row.text)
            cursor = None if right >= self._width else (y, right)
        self._fresh.clear()
        groups = _by_pen(self._runs)
        while groups:  # the pen the fewest bytes away next
            group = min(groups, key=lambda other: len(change(pen, other)))
            out.append(change(pen, group))
            pen = group
            cursor = self._visit(_shorter_path(groups.pop(group), cursor, self._width), cursor, out)
        self._runs.clear()
        self._pen, self._cursor = pen, cursor
        return "".join(out)

    def _visit(
        self, runs: list[_Run], cursor: tuple[int, int] | None, out: list[str]
    ) -> tuple[int, int] | None:
        """Each run written where it goes, in turn; the cursor after the last."""
        for run in runs:
            out.append(run.move_from(cursor))
            out.append(run.row.text[run.start : run.end])
            cursor = run.cursor_after(self._width)
        return cursor


def _write_row(row: Row, pen: Pen, out: list[str]) -> Pen:
    """``row`` from its first cell to its last, from ``pen``: the pen changed where the
    next cells' differs, but not for spaces that show the same in the pen already set;
    the pen it leaves set."""
    text, pens = row.text, row.pens
    start, end = 0, len(text)
    while start < end:
        want = pens[start]
        stop = start + 1
        while stop < end and pens[stop] == want:
            stop += 1
        chunk = text[start:stop]
        if want != pen and not (chunk.strip(" ") == "" and _space_pen(want) == _space_pen(pen)):
            out.append(change(pen, want))
            pen = want
        out.append(chunk)
        start = stop
    return pen


#: a run and the cell its first move goes to
Aimed = tuple[Target, _Run]


def _path_cost(path: list[Aimed], cursor: tuple[int, int] | None, width: int) -> int:
    """The bytes of the cursor moves that visit the runs of ``path`` in its order."""
    cost = 0
    for to, run in path:
        cost += move_cost(to, cursor)
        right = run.x + run.end
        cursor = None if right >= width else (run.y, right)
    return cost


def _shorter_path(runs: list[_Run], cursor: tuple[int, int] | None, width: int) -> list[_Run]:
    """The order of ``runs`` whose cursor moves cost the fewest bytes of three: line by
    line (as they come), column by column (a column of figures down the GPU list: one
    short move each), or each time the run nearest in bytes from where the cursor is."""
    if len(runs) < 2:
        return runs
    aimed = [(target(run.y, run.x + run.start), run) for run in runs]
    paths = [aimed, sorted(aimed, key=lambda pair: (pair[0].x, pair[0].y))]
    if len(runs) <= NEAREST_UP_TO:
        paths.append(_nearest_first(aimed, cursor, width))
    return [run for _, run in min(paths, key=lambda path: _path_cost(path, cursor, width))]


#: the runs of a pen past which the nearest-first order is not tried (its cost grows with
#: their square; a screen changed that much is a new page, not a tick)
NEAREST_UP_TO: Final = 48


def _nearest_first(aimed: list[Aimed], cursor: tuple[int, int] | None, width: int) -> list[Aimed]:
    """The runs visited each time the cheapest move away first (ties: screen order)."""
    left = list(aimed)
    path: list[Aimed] = []
    while left:
        best, least = 0, -1
        for at, (to, _) in enumerate(left):
            cost = move_cost(to, cursor)
            if least < 0 or cost < least:
                best, least = at, cost
                if cost == 0:
                    break
        pair = left.pop(best)
        path.append(pair)
        cursor = pair[1].cursor_after(width)
    return path


def _by_pen(runs: list[_Run]) -> dict[Pen, list[_Run]]:
    """The runs grouped by the pen they are written with, each group in screen order and
    its runs joined where the cells between them show the same in that pen and cost less
    to write again than to jump over. A run of spaces goes with the first pen of its
    background (and underline, reverse...), where there is one."""
    groups: dict[Pen, list[_Run]] = {}
    spaces: list[_Run] = []
    for run in runs:
        (spaces if run.blank else groups.setdefault(run.pen, [])).append(run)
    by_space: dict[tuple[str | None, frozenset[str]], Pen] = {}
    for pen in groups:
        by_space.setdefault(_space_pen(pen), pen)
    for run in spaces:
        groups.setdefault(by_space.get(_space_pen(run.pen), run.pen), []).append(run)
    for pen, group in groups.items():
        group.sort(key=lambda run: (run.y, run.x + run.start))
        groups[pen] = _joined(group, pen)
    return groups


def _joined(runs: list[_Run], pen: Pen) -> list[_Run]:
    """Runs of one row a few cells apart joined, where the cells between show the same in
    ``pen`` and are cheaper to write again than the cursor move over them."""
    joined = [runs[0]]
    for run in runs[1:]:
        last = joined[-1]
        if run.row is last.row and run.y == last.y and _rewritable(last, run.start, pen):
            joined[-1] = last._replace(end=run.end)
        else:
            joined.append(run)
    return joined


def _rewritable(run: _Run, start: int, pen: Pen) -> bool:
    """Whether the cells from the end of ``run`` to ``start`` (of the same row) look the
    same written in ``pen``, and cost fewer bytes than moving over them."""
    row, gap = run.row, range(run.end, start)
    text = row.text[run.end : start]
    if len(text.encode()) > len(across(run.end, start)):
        return False
    space = _space_pen(pen)
    return all(
        row.pens[c] == pen or (row.text[c] == " " and _space_pen(row.pens[c]) == space) for c in gap
    )


def _changed_runs(old: Row, new: Row) -> list[tuple[int, int]]:
    """The columns where ``new`` differs from ``old`` (of the same length), as (start, end)
    runs; at least one."""
    # compared cell by cell in C (a row is some hundred cells, a tick's change a few)
    differs = map(ne, old.text, new.text)
    if old.pens != new.pens:  # mostly equal: figures changed, their colours did not
        differs = map(or_, differs, map(ne, old.pens, new.pens))
    changed = compress(range(len(new.text)), differs)
    runs: list[tuple[int, int]] = []
    start = end = -1
    for column in changed:
        if column != end:
            if start >= 0:
                runs.append((start, end))
            start = column
        end = column + 1
    runs.append((start, end))
    return runs
