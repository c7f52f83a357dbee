"""The cursor moved the shortest way between two cells of the screen, and the lengths of
those moves worked out without writing them: the order of a tick's changed runs
(``terminal_cells``) is chosen by comparing the moves of many orders, and only the chosen
one is written."""

from __future__ import annotations

from typing import Final, NamedTuple


def _count(n: int, final: str) -> str:
    """A cursor sequence with its count, the count left out where it is 1."""
    return f"\x1b[{final}" if n == 1 else f"\x1b[{n}{final}"


def across(from_x: int, x: int) -> str:
    """The cursor from column ``from_x`` to ``x`` on its line, the shortest way: carriage
    return, forward (CUF), back (backspaces or CUB), or to the column (CHA)."""
    if x == from_x:
        return ""
    options = [f"\x1b[{x + 1}G"]
    if x == 0:
        options.append("\r")
    elif x > from_x:
        options.append(_count(x - from_x, "C"))
        options.append("\r" + _count(x, "C"))
    else:
        back = from_x - x
        options.append("\b" * back if back <= 3 else _count(back, "D"))
    return min(options, key=len)


def move_to(y: int, x: int, cursor: tuple[int, int] | None) -> str:
    """The cursor to line ``y``, column ``x`` (from 0), the shortest way from ``cursor``
    (None: unknown, so a move to the place itself). Never a line feed: the terminal's
    line discipline may add a carriage return to it (ONLCR), and at the foot it scrolls."""
    place = f"\x1b[{y + 1}H" if x == 0 else f"\x1b[{y + 1};{x + 1}H"
    if cursor is None or move_len(y, x, cursor) == len(place):
        return place  # ties go to the place itself
    from_y, from_x = cursor
    return (_vertical(y - from_y) if from_y != y else "") + across(from_x, x)


def _vertical(lines: int) -> str:
    """The cursor ``lines`` down (up where negative), same column. One line is IND or RI
    (ESC D, ESC M: two bytes where CUD and CUU take three; a column of changed figures
    down the GPU list is one each): they scroll only when they leave the bottom or top
    margin, and the cursor never leaves the screen here, whose margins are the whole
    screen (nothing sets a scroll region: Textual draws every line where it goes)."""
    if lines == 1:
        return "\x1bD"
    if lines == -1:
        return "\x1bM"
    return _count(lines, "B") if lines > 0 else _count(-lines, "A")


#: the decimal digits of each number a cursor sequence may carry (a column or line of a
#: screen up to 999 wide or high; past that, worked out)
_DIGITS: Final = tuple(len(str(n)) for n in range(1000))


def _digits(n: int) -> int:
    return _DIGITS[n] if n < 1000 else len(str(n))


class Target(NamedTuple):
    """A cell the cursor is moved to, with the lengths of the moves to it that do not
    depend on where the cursor is: worked out once, however many places it is compared
    from (the order of a tick's runs compares hundreds of moves)."""

    y: int
    x: int
    #: the move to the place itself (CUP)
    place: int
    #: the move to the column on the same line (CHA)
    column: int
    #: the shortest move forward to it on the same line that does not depend on how far:
    #: to the column, or a carriage return and forward
    forward: int


def target(y: int, x: int) -> Target:
    """Line ``y``, column ``x`` (from 0) as a ``Target``."""
    if x == 0:
        return Target(y, 0, 3 + _digits(y + 1), 4, 1)
    column = 3 + _digits(x + 1)
    from_start = 4 if x == 1 else 4 + _digits(x)
    return Target(y, x, 4 + _digits(y + 1) + _digits(x + 1), column, min(column, from_start))


def move_cost(to: Target, cursor: tuple[int, int] | None) -> int:
    """``len(move_to(to.y, to.x, cursor))``."""
    if cursor is None:
        return to.place
    from_y, from_x = cursor
    x = to.x
    if x == from_x:
        sideways = 0
    elif x == 0:
        sideways = 1
    elif x > from_x:
        forward = x - from_x
        cuf = 3 if forward == 1 else 3 + _digits(forward)
        sideways = cuf if cuf < to.forward else to.forward
    else:
        back = from_x - x
        if back > 3:
            back = 3 + _digits(back)
        sideways = back if back < to.column else to.column
    y = to.y
    if from_y != y:
        lines = y - from_y if y > from_y else from_y - y
        sideways += 2 if lines == 1 else 3 + _digits(lines)
    return sideways if sideways < to.place else to.place


def move_len(y: int, x: int, cursor: tuple[int, int] | None) -> int:
    """``len(move_to(y, x, cursor))``."""
    return move_cost(target(y, x), cursor)
