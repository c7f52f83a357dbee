"""LineView turns rich Text into cells itself (a fast path): it must mean what rich means."""

from __future__ import annotations

import gc

import pytest
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult

from gputui.ui import compat
from gputui.ui.lines import LineView
from tests.conftest import DemoApp

WIDTH = 24


class _OneView(App[None]):
    CSS = "LineView.hot { color: red; background: blue; }"

    def compose(self) -> ComposeResult:
        yield LineView(id="view")


def _expected_cells(app: App[None], text: Text, base: Style) -> list[tuple[str, Style]]:
    """Rich's meaning, cell by cell: the panel's style, the line's, then spans in order."""
    get = app.console.get_style
    plain = text.plain[:WIDTH].ljust(WIDTH)
    cells = []
    for i, char in enumerate(plain):
        style = base + get(text.style, default=Style.null())
        for span in text.spans:
            if span.start <= i < span.end and i < len(text.plain):
                style += get(span.style, default=Style.null())
        cells.append((char, style))
    return cells


def _pieces() -> Text:
    text = Text("GPU ", style="bold")
    text.append("████▌   ", style="#4EBF71 on #333333")
    text.append(" 97%")
    text.append(" 70°C", style="red")
    return text


def _overlapping() -> Text:
    text = Text("  2100 mlteam   60.1 GiB   135")
    text.stylize("dim", 0, 14)
    text.stylize("bold yellow", 8, 20)
    return text


CASES = {
    "spans that follow one another": _pieces(),
    "a line style and no spans": Text("    PID USER  GPU MEM", style="bold"),
    "longer than the panel": Text("x" * 40, style="dim").append("tail", style="red"),
    "spans that overlap": _overlapping(),
    "wide characters": Text("名前 ").append("train.py", style="green"),
    "empty": Text(""),
}


@pytest.mark.parametrize("name", list(CASES))
async def test_a_line_renders_as_rich_would(name: str) -> None:
    app = _OneView()
    async with app.run_test(size=(WIDTH, 5)) as pilot:
        view = app.query_one("#view", LineView)
        text = CASES[name]
        view.set_lines([text])
        await pilot.pause()
        assert view.size.width == WIDTH
        strip = view.render_line(0)
        assert strip.cell_length == WIDTH
        cells = [(char, seg.style) for seg in strip for char in seg.text]
        if name == "wide characters":  # two cells per character: compare the text only
            assert "".join(c for c, _ in cells).startswith("名前 train.py")
            return
        assert cells == _expected_cells(app, text, view.rich_style)


async def test_wide_characters_keep_the_line_style() -> None:
    app = _OneView()
    async with app.run_test(size=(WIDTH, 5)) as pilot:
        view = app.query_one("#view", LineView)
        view.set_lines([Text("名前 python", style="bold")])
        await pilot.pause()
        assert all(seg.style is not None and seg.style.bold for seg in view.render_line(0))


@pytest.mark.parametrize("size", [(160, 50), (80, 24)])
async def test_panels_draw_the_rows_textual_would(demo_app: DemoApp, size: tuple[int, int]) -> None:
    """Every row of every panel, border and title included, as Textual's own styles cache
    draws it: the panels' shortcut must be invisible."""
    from textual.geometry import Region
    from textual.widget import Widget

    app = demo_app(gpus=8)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        views = [v for v in app.query(LineView) if v.display and v.outer_size.area]
        assert len(views) >= 5
        for view in views:
            whole = Region(0, 0, *view.outer_size)
            ours = view.render_lines(whole)
            view.refresh()  # Textual's own path, from a fresh styles cache
            theirs = Widget.render_lines(view, whole)
            assert len(ours) == len(theirs) == view.outer_size.height
            for y, (a, b) in enumerate(zip(ours, theirs, strict=True)):
                cells_a = [(c, s.style) for s in a for c in s.text]
                cells_b = [(c, s.style) for s in b for c in s.text]
                assert cells_a == cells_b, f"{view.id} row {y}"
            part = Region(3, 1, 10, 2)  # a crop inside the panel, as the compositor asks
            assert [r.text for r in view.render_lines(part)] == [
                r.text for r in Widget.render_lines(view, part)
            ]


async def test_a_new_title_or_size_repaints_the_cached_rows(demo_app: DemoApp) -> None:
    from textual.geometry import Region

    app = demo_app(gpus=2)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        view = app.query_one("#advisor", LineView)
        width = view.outer_size.width
        assert "Advisor" in view.render_lines(Region(0, 0, width, 1))[0].text
        view.border_title = "Something else"
        assert "Something else" in view.render_lines(Region(0, 0, width, 1))[0].text
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert view.outer_size.width != width
        rows = view.render_lines(Region(0, 0, *view.outer_size))
        assert all(row.cell_length == view.outer_size.width for row in rows)


async def test_a_css_change_recolours_the_lines() -> None:
    """A class that changes the panel's colours shows on the lines already drawn, on the
    fast path (which caches resolved styles) and on Textual's public one alike."""
    app = _OneView()
    async with app.run_test(size=(WIDTH, 5)) as pilot:
        view = app.query_one("#view", LineView)
        view.set_lines([Text("GPU 0")])
        await pilot.pause()
        before = next(iter(view.render_line(0))).style
        view.add_class("hot")
        await pilot.pause()
        after = next(iter(view.render_line(0))).style
        assert after is not None and after != before
        assert after.color is not None and after.color.triplet == (255, 0, 0)
        assert after.bgcolor is not None and after.bgcolor.triplet == (0, 0, 255)


async def test_a_painted_row_is_its_text_in_as_few_segments_as_styles() -> None:
    """set_rows paints runs, not rich Text: the same cells as the row's Text would give,
    cut at the panel's width, and neighbouring runs of one style joined."""
    from gputui.ui.paint import Palette, paint
    from gputui.view.cells import Cell, Role, Row

    row = Row(
        (
            Cell("GPU "),
            Cell("0 "),
            Cell("97%", Role.OK),
            Cell(" 70°C "),
            Cell("x" * 30, flex=True),
        )
    )
    app = _OneView()
    async with app.run_test(size=(WIDTH, 5)) as pilot:
        view = app.query_one("#view", LineView)
        palette = Palette()
        view.set_rows([row], WIDTH, palette)
        await pilot.pause()
        strip = view.render_line(0)
        assert strip.cell_length == WIDTH
        cells = [(char, seg.style) for seg in strip for char in seg.text]
        text = paint(row, WIDTH, palette).text()
        assert cells == _expected_cells(app, text, view.rich_style)
        assert [seg.text for seg in strip][:2] == ["GPU 0 ", "97%"]
        # a row painted wider than the panel (its width changed since) is cut at its edge
        wide = Row((Cell("GPU 0 "), Cell("97%", Role.OK), Cell("y" * (2 * WIDTH))))
        view.set_rows([wide], 2 * WIDTH, palette)
        await pilot.pause()
        strip = view.render_line(0)
        assert strip.cell_length == WIDTH
        assert [seg.text for seg in strip] == ["GPU 0 ", "97%", "y" * (WIDTH - 9)]


@pytest.mark.skipif(not compat.FAST_LINES, reason="Textual's own rows: its strips, its caches")
async def test_a_repainted_row_is_freed_without_the_garbage_collector(demo_app: DemoApp) -> None:
    """The compositor divides every row it repaints at the panel's edges; a row that
    kept ``[itself]`` as the answer would be a reference cycle, and a tick's worth of rows
    (each with seven caches) would wait for the collector."""
    from textual.geometry import Region

    app = demo_app(gpus=2)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        views = [v for v in app.query(LineView) if v.display and v.outer_size.area]
        gc.collect()
        gc.disable()
        try:
            for view in views:
                width = view.outer_size.width
                for row in view.render_lines(Region(0, 0, *view.outer_size)):
                    assert row.divide([width]) == [row]
                    assert [s.cell_length for s in row.divide([2, width])] == [2, width - 2]
            found = gc.collect()
        finally:
            gc.enable()
        assert found == 0
