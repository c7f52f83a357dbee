"""gputui/ui/terminal_cells.py: the cells that changed, the shortest cursor moves between
them and only the attribute changes between pens, read back by a terminal
(tests/terminal.py) as the same screen as whole rows rendered by Rich."""

from __future__ import annotations

from functools import partial

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cached_cell_len
from rich.color import ColorSystem
from rich.segment import Segment
from rich.style import Style

from gputui.ui.cursor_moves import move_len, move_to
from gputui.ui.terminal_cells import (
    PLAIN,
    Pen,
    TerminalRows,
    change,
    one_cell_each,
    pen_of,
    row_of,
)
from tests.terminal import Terminal

SYSTEM = ColorSystem.EIGHT_BIT
WIDTH, HEIGHT = 40, 6
STYLES = (
    Style(color="color(253)", bgcolor="color(233)"),
    Style(color="color(32)", bgcolor="color(17)"),
    Style(color="color(71)", bgcolor="color(233)", bold=True),
    Style(color="color(214)", bgcolor="color(233)", dim=True),
    Style(color="color(253)", bgcolor="color(233)", underline=True),
    Style(reverse=True, color="red"),
    Style(),
)


def _render(segments: list[Segment]) -> str:
    """A row as Textual renders it: each segment in full SGR, reset after."""
    return "".join(
        style.render(text, color_system=SYSTEM) if style else text for text, style, _ in segments
    )


def _whole(y: int, x: int, segments: list[Segment]) -> str:
    """A row as Textual writes it: the cursor to its place, then the row."""
    return f"\x1b[{y + 1};{x + 1}H{_render(segments)}"


def test_a_pen_change_says_only_what_differs_or_resets_where_that_is_shorter() -> None:
    bold_blue = pen_of(Style(bold=True, color="color(32)"), SYSTEM)
    assert bold_blue == Pen(frozenset({"1"}), "38;5;32", None)
    assert change(bold_blue, bold_blue) == ""
    assert change(PLAIN, bold_blue) == "\x1b[1;38;5;32m"
    # bold off and dim on: 22 turns both off, so dim comes back after it
    dim_blue = Pen(frozenset({"2"}), "38;5;32", None)
    assert change(bold_blue, dim_blue) == "\x1b[22;2m"
    assert change(bold_blue, Pen(frozenset({"1"}), "38;5;71", None)) == "\x1b[38;5;71m"
    assert change(bold_blue, PLAIN) == "\x1b[0m"  # shorter than 22;39
    both = Pen(frozenset(), "38;5;253", "48;5;233")
    assert change(both, Pen(frozenset(), "38;5;253", None)) == "\x1b[49m"


def test_rows_a_cell_cannot_stand_for_are_written_whole() -> None:
    assert row_of([Segment("GPU 0 ", Style(bold=True)), Segment("72 °C")], SYSTEM) is not None
    assert row_of([Segment("任务 train.py")], SYSTEM) is None  # wide characters
    assert row_of([Segment("e\u0301")], SYSTEM) is None  # a combining accent
    assert row_of([Segment("docs", Style(link="https://x"))], SYSTEM) is None
    rows = TerminalRows()
    segments = [Segment("任务 train.py", Style(color="red"))]
    rows.write(2, 0, segments, SYSTEM, WIDTH, partial(_render, segments))
    assert rows.take() == _whole(2, 0, segments)


def test_an_unchanged_row_sends_nothing_and_a_changed_digit_a_few_bytes() -> None:
    rows = TerminalRows()
    text = [Segment(" util ", STYLES[0]), Segment("█████", STYLES[1]), Segment(" 97 %", STYLES[0])]
    rows.write(3, 10, text, SYSTEM, WIDTH, partial(_render, text))
    first = rows.take()
    rows.write(3, 10, text, SYSTEM, WIDTH, partial(_render, text))
    assert rows.take() == ""
    changed = [*text[:2], Segment(" 98 %", STYLES[0])]
    rows.write(3, 10, changed, SYSTEM, WIDTH, partial(_render, changed))
    out = rows.take()
    # the pen the first write left set is this digit's (a new row is written from its
    # first cell to its last), and the cursor it left after the row's end is 3 columns on
    assert out == "\b\b\b8"
    rows.reset()  # something else wrote: the cursor is not known any more
    rows.write(3, 10, text, SYSTEM, WIDTH, partial(_render, text))
    assert rows.take().endswith("\x1b[4;24H7")
    assert len(out) * 4 < len(_whole(3, 10, changed))
    assert len(first) < len(_whole(3, 10, text))


def test_the_pen_is_kept_between_writes_and_reset_before_anything_else_writes() -> None:
    rows = TerminalRows()
    text = [Segment("42", STYLES[1])]
    rows.write(0, 0, text, SYSTEM, WIDTH, partial(_render, text))
    assert rows.take() == "\x1b[1H\x1b[38;5;32;48;5;17m42"
    assert rows.reset() == "\x1b[0m" and rows.reset() == ""
    rows.write(0, 0, [Segment("43", STYLES[1])], SYSTEM, WIDTH, partial(_render, text))
    assert rows.take() == "\x1b[38;5;32;48;5;17m\x1b[1;2H3"  # from the reset pen
    rows.forget()  # the terminal was away (a suspend): its pen unknown
    rows.write(0, 0, [Segment("44", STYLES[1])], SYSTEM, WIDTH, partial(_render, text))
    assert rows.take().startswith("\x1b[0m\x1b[1H\x1b[38;5;32;48;5;17m")


def test_what_something_else_drew_over_is_written_whole_again() -> None:
    rows = TerminalRows()
    text = [Segment("left ", STYLES[0])]
    right = [Segment("right", STYLES[2])]
    rows.write(1, 0, text, SYSTEM, WIDTH, partial(_render, text))
    rows.write(1, 20, right, SYSTEM, WIDTH, partial(_render, right))
    rows.take()
    rows.drawn_over(1, 0, 10)  # a toast over the left panel only
    rows.write(1, 0, text, SYSTEM, WIDTH, partial(_render, text))
    rows.write(1, 20, right, SYSTEM, WIDTH, partial(_render, right))
    out = rows.take()
    assert "left" in out and "right" not in out
    rows.forget()
    rows.write(1, 20, right, SYSTEM, WIDTH, partial(_render, right))
    assert "right" in rows.take()


def test_a_row_across_other_rows_is_compared_with_the_cells_they_show() -> None:
    """The compositor's line over two panels' stretches and the gap between: the gap is
    not known, so the line is written whole and owns its cells; drawn again unchanged it
    sends nothing; a panel's row written back over part of it sends only what differs."""
    rows, terminal, whole = TerminalRows(), Terminal(WIDTH, HEIGHT), Terminal(WIDTH, HEIGHT)
    left, right = [Segment("left ", STYLES[0])], [Segment("right", STYLES[2])]
    line = [Segment("a toast over both panels", STYLES[1])]

    def tick(*writes: tuple[int, list[Segment]]) -> str:
        for x, segments in writes:
            rows.write(1, x, segments, SYSTEM, WIDTH, partial(_render, segments))
            whole.feed(_whole(1, x, segments))
        out = rows.take()
        terminal.feed(out)
        assert terminal.visible() == whole.visible()
        return out

    tick((0, left), (20, right))
    assert "toast" in tick((2, line))
    assert tick((2, line)) == ""
    out = tick((0, left), (20, right))
    assert "ft " in out and "left" not in out  # "le" never changed under the toast
    assert "right" in out
    assert tick((0, left), (20, right)) == ""


cells = st.tuples(st.sampled_from("ab █▍·9"), st.integers(0, len(STYLES) - 1))
panel_rows = st.lists(cells, min_size=12, max_size=12)
# a tick: new rows for some of the panels' lines (two panels side by side, 12 cells each)
ticks = st.lists(
    st.dictionaries(
        st.tuples(st.integers(0, HEIGHT - 1), st.sampled_from((0, 14, 28))), panel_rows
    ),
    min_size=1,
    max_size=6,
)


def _segments(row: list[tuple[str, int]]) -> list[Segment]:
    return [Segment(char, STYLES[style]) for char, style in row]


@settings(max_examples=150, deadline=None)
@given(ticks=ticks)
def test_cells_written_leave_the_screen_whole_rows_would(
    ticks: list[dict[tuple[int, int], list[tuple[str, int]]]],
) -> None:
    """Whatever rows change, tick after tick: the terminal shows what whole rows show."""
    rows = TerminalRows()
    cells_written, whole_rows = Terminal(WIDTH, HEIGHT), Terminal(WIDTH, HEIGHT)
    for tick in ticks:
        for (y, x), row in tick.items():
            segments = _segments(row)
            rows.write(y, x, segments, SYSTEM, WIDTH, partial(_render, segments))
            whole_rows.feed(_whole(y, x, segments))
        cells_written.feed(rows.take())
        assert cells_written.visible() == whole_rows.visible()
    # whatever writes next (Textual's compositor) starts from a reset pen
    cells_written.feed(rows.reset() + "\x1b[1;1Hx")
    whole_rows.feed("\x1b[0m\x1b[1;1Hx")
    assert cells_written.visible() == whole_rows.visible()


# a write anywhere on a line: a panel's row, the compositor's line across panels, a
# toast over part of them (start column, cells)
stretches = st.tuples(
    st.integers(0, HEIGHT - 1),
    st.integers(0, WIDTH - 1),
    st.lists(cells, min_size=1, max_size=WIDTH),
)


@settings(max_examples=150, deadline=None)
@given(ticks=st.lists(st.lists(stretches, min_size=1, max_size=6), min_size=1, max_size=6))
def test_rows_written_over_one_another_leave_the_screen_whole_rows_would(
    ticks: list[list[tuple[int, int, list[tuple[str, int]]]]],
) -> None:
    """Rows of any length and place, over the stretches of others: each compared with the
    cells under it where they are known, the terminal shows what whole rows show. (Rows
    written between two takes do not overlap: one compositor update, or the app's rows.)"""
    rows = TerminalRows()
    cells_written, whole_rows = Terminal(WIDTH, HEIGHT), Terminal(WIDTH, HEIGHT)
    for tick in ticks:
        taken: set[tuple[int, int]] = set()
        for y, x, row in tick:
            row = row[: WIDTH - x]
            if any((y, c) in taken for c in range(x, x + len(row))):
                continue
            taken.update((y, c) for c in range(x, x + len(row)))
            segments = _segments(row)
            rows.write(y, x, segments, SYSTEM, WIDTH, partial(_render, segments))
            whole_rows.feed(_whole(y, x, segments))
        cells_written.feed(rows.take())
        assert cells_written.visible() == whole_rows.visible()


def test_a_row_at_the_right_edge_moves_the_cursor_anew_after_it() -> None:
    """After the last column the cursor waits to wrap: the next run is placed absolutely."""
    rows = TerminalRows()
    terminal = Terminal(WIDTH, HEIGHT)
    edge = [Segment("x" * 10, STYLES[0])]
    below = [Segment("y" * 10, STYLES[0])]
    for y, x, segments in ((0, 30, edge), (1, 30, below)):
        rows.write(y, x, segments, SYSTEM, WIDTH, partial(_render, segments))
    terminal.feed(rows.take())
    assert terminal.plain.splitlines()[0].endswith("x" * 10)
    assert terminal.plain.splitlines()[1].endswith("y" * 10)


def test_a_column_of_changed_figures_goes_down_and_up_a_line_at_a_time() -> None:
    """A figure changed on each GPU row: one line down (IND) or up (RI) and back a column
    between them, three bytes a figure, never a scroll (the test terminal scrolls where an
    IND leaves the bottom line or an RI the top)."""
    rows = TerminalRows()
    terminal = Terminal(WIDTH, HEIGHT)

    def tick(digit: str) -> str:
        for y in range(HEIGHT):
            figure = [Segment(f"GPU{y} ", STYLES[0]), Segment(digit, STYLES[0])]
            rows.write(y, 0, figure, SYSTEM, WIDTH, partial(_render, figure))
        return rows.take()

    terminal.feed(tick("1"))
    out = tick("2")
    assert out.count("\x1bD\b") + out.count("\x1bM\b") == HEIGHT - 1, repr(out)
    terminal.feed(out)
    shown = [line.rstrip() for line in terminal.plain.splitlines()]
    assert shown == [f"GPU{y} 2" for y in range(HEIGHT)]


@settings(max_examples=400)
@given(
    y=st.integers(0, 1200),
    x=st.integers(0, 1200),
    cursor=st.none() | st.tuples(st.integers(0, 1200), st.integers(0, 1200)),
)
def test_the_orders_compared_by_length_cost_what_the_moves_written_cost(
    y: int, x: int, cursor: tuple[int, int] | None
) -> None:
    """A tick's runs are ordered by the lengths of their cursor moves, worked out without
    writing them: each length is that of the move then written, on screens past 999 too."""
    assert move_len(y, x, cursor) == len(move_to(y, x, cursor))
    near = None if cursor is None else (cursor[0] + (y % 3) - 1, cursor[1] + (x % 5) - 2)
    if near is not None and min(near) >= 0:
        assert move_len(y, x, near) == len(move_to(y, x, near))


def test_rows_written_do_not_fill_richs_width_cache() -> None:
    """rich caches the width of every text it is asked about (4,096 of them): a tick's
    changed rows of sparklines and figures, each a new text, would fill it with whole
    rows. A row of characters known to take one cell is told so without asking."""
    rows = TerminalRows()
    style = Style(color="color(253)")
    before = cached_cell_len.cache_info().currsize
    for tick in range(50):
        spark = "".join("▁▂▃▄▅▆▇█"[(tick + i) % 8] for i in range(30))
        rows.write(0, 0, [Segment(f"{tick:>4}% {spark} ─│°")], SYSTEM, WIDTH, str)
        rows.write(1, 0, [Segment(f"GPU {tick} ", style), Segment("72 °C")], SYSTEM, WIDTH, str)
        rows.take()
    assert cached_cell_len.cache_info().currsize == before
    assert one_cell_each("▶0 A100 ████▉  97% 66°C")
    assert not one_cell_each("任务") and not one_cell_each("e\u0301")


def test_a_row_sends_the_cells_whose_text_or_colour_changed_and_no_other() -> None:
    """The changed cells of a row are found from its text where its colours stayed (most
    ticks: figures moved), and from text and colours where a colour changed: a colour
    alone changed under the same text is sent too, and nothing else is."""
    terminal = Terminal(WIDTH, HEIGHT)
    rows = TerminalRows()
    warm, hot = Style(color="color(208)"), Style(color="color(196)")
    sent = []
    for segments in (
        [Segment("temp "), Segment("72", warm), Segment(" C  fan 40%")],
        [Segment("temp "), Segment("73", warm), Segment(" C  fan 41%")],  # two digits
        [Segment("temp "), Segment("73", hot), Segment(" C  fan 41%")],  # a colour alone
    ):
        before = dict(terminal.cells)
        rows.write(2, 0, segments, SYSTEM, WIDTH, partial(_render, segments))
        terminal.feed(rows.take())
        sent.append(terminal.changed_cells(before))
        whole = Terminal(WIDTH, HEIGHT)
        whole.feed(f"\x1b[3;1H{Segment.get_line_length(segments) * ' '}")
        whole.feed(
            "\x1b[3;1H"
            + "".join(
                s.style.render(s.text, color_system=SYSTEM) if s.style else s.text for s in segments
            )
        )
        assert terminal.visible() == whole.visible()
    assert sent[1:] == [2, 2]  # "3" and "1"; then "73" in its new colour
