"""FastPaint.write_rows: a tick's changed rows of a panel nothing covers go to the terminal as
they are, and the screen they leave is the one Textual's compositor draws for the same
state; a panel something covers is painted by the compositor, as before.

Each check reads the terminal output the way a terminal does (cursor moves, SGR, text)
onto the cells of the screen before, and compares the result with the compositor's own
rendering of the whole screen after.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.pilot import Pilot
from textual.widget import Widget

from gputui.core.config import Config
from gputui.launch import make_app
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from gputui.ui import compat
from gputui.ui.lines import LineView
from gputui.ui.paint import Palette
from gputui.ui.written import Written
from gputui.view.cells import Cell, Role, Row
from tests.terminal import Terminal

pytestmark = pytest.mark.skipif(not compat.FAST_WRITE, reason="the shortcut is off")


def _drawn(app: App[Any]) -> Terminal:
    """The whole screen as the compositor renders it now, on a terminal of its size."""
    terminal = Terminal(*app.size)
    for y, strip in enumerate(app.screen._compositor.render_strips()):
        terminal.feed(f"\x1b[{y + 1};1H" + strip.render(app.console))
    return terminal


def _captured(app: App[Any], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What the app hands its terminal from now on (a headless app writes nothing), still
    passed on to its own ``_display`` (and the fast paint watching it)."""
    updates: list[Any] = []
    display = app._display

    def capture(screen: Any, update: Any) -> None:
        updates.append(update)
        display(screen, update)

    monkeypatch.setattr(app, "_display", capture)
    return updates


def _rows(*texts: str) -> list[Row]:
    return [Row((Cell(t[:4], Role.WARN, bold=True), Cell(t[4:], Role.DIM))) for t in texts]


class _Panels(App[None]):
    CSS = """
    Screen { layers: base above; }
    LineView { padding: 0 1; }
    #cover { layer: above; width: 12; height: 2; offset: 3 4; background: #aa0000; }
    """

    def __init__(self, covered: bool) -> None:
        super().__init__()
        self.covered = covered
        self.fast_paint = compat.FastPaint()  # the panels paint through it, as gputui's do
        self.top = LineView(id="top")
        self.left = LineView(id="left")
        self.right = LineView(id="right")

    def compose(self) -> ComposeResult:
        yield self.top
        with Horizontal():
            yield self.left
            yield self.right
        if self.covered:
            yield Widget(id="cover")

    def show(self, shift: int) -> None:
        palette, width = Palette(), 30
        self.top.set_rows(_rows("header line", f"tick {shift}"), 70, palette)
        self.left.set_rows(
            _rows(*(f"gpu {i} util {10 * i + shift}%" for i in range(6))), width, palette
        )
        self.right.set_rows(
            _rows(*(f"spark {'x' * (i + shift)}" for i in range(6))), width, palette
        )


async def _one_tick(
    app: _Panels, pilot: Pilot[None], monkeypatch: pytest.MonkeyPatch
) -> tuple[Terminal, list[Any]]:
    """The screen after a first showing, and what a tick's changes then wrote."""
    app.show(0)
    await pilot.pause()
    before = _drawn(app)
    updates = _captured(app, monkeypatch)
    with app.fast_paint.painted_at_end():
        app.show(1)
    return before, updates


async def test_changed_rows_written_leave_the_screen_the_compositor_draws(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = _Panels(covered=False)
    async with app.run_test(size=(80, 12)) as pilot:
        before, updates = await _one_tick(app, pilot, monkeypatch)
        # one write, of finished rows only, and nothing left for the compositor
        assert len(updates) == 1 and isinstance(updates[0], Written)
        assert not app.screen._dirty_widgets
        text = updates[0].render_segments(app.console)
        # rows that did not change are not written: "header line" stayed, six GPU rows and
        # six spark rows and the tick line changed
        touched = Terminal(*app.size)
        touched.feed(text)
        for view, rows in ((app.top, 1), (app.left, 6), (app.right, 6)):
            area = view.region
            lines = {y for y, x in touched.cells if area.contains(x, y)}
            assert len(lines) == rows, view.id
        before.feed(text)
        assert before.visible() == _drawn(app).visible()


async def test_a_covered_panel_is_painted_by_the_compositor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = _Panels(covered=True)
    async with app.run_test(size=(80, 12)) as pilot:
        before, updates = await _one_tick(app, pilot, monkeypatch)  # the cover is over rows
        assert len(updates) == 1 and not isinstance(updates[0], Written)
        before.feed(updates[0].render_segments(app.console))
        after = _drawn(app)
        assert before.visible() == after.visible()
        cover = after.cells[(4, 3)]
        assert cover.bg == after.cells[(5, 14)].bg is not None  # the cover is still drawn


async def test_the_apps_ticks_leave_the_screen_the_compositor_draws(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real panels over simulated GPUs, frame after frame."""
    clock = [1_000_000.0]
    source = SimulatedSource(resolve_scenarios("thermal", 8), clock=lambda: clock[0])
    app = make_app(source, source.open(), Config(interval_s=3600))  # frames come from here
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        for _ in range(5):
            clock[0] += 1
            app._show_frame(source.read())
        await pilot.pause()
        written = 0
        # One terminal through every tick (the pen a write leaves set is where the next
        # one starts), from the screen as drawn now and a reset pen.
        terminal = _drawn(app)
        terminal.feed(app.fast_paint.terminal.reset())
        updates = _captured(app, monkeypatch)
        for _ in range(4):
            updates.clear()
            clock[0] += 1
            app._show_frame(source.read())
            for update in updates:
                written += isinstance(update, Written)
                terminal.feed(update.render_segments(app.console))
            assert terminal.visible() == _drawn(app).visible()
        assert written == 4


async def test_the_compositors_own_updates_go_out_as_the_cells_that_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the compositor paints (a panel refreshed the public way, a page, the advisor
    pane) goes to the terminal through the same cells as the panels' rows: a line it
    repaints with one digit changed sends that digit, not the line with a reset and a
    restate for every run of text; the screen left is the one it draws."""
    app = _Panels(covered=False)
    async with app.run_test(size=(80, 12)) as pilot:
        app.show(0)
        await pilot.pause()
        beneath = _captured(app, monkeypatch)  # what reaches the terminal, under the watch
        app.fast_paint.watch(app)
        terminal = _drawn(app)
        for shift in (0, 1):  # unknown at first: written whole; then only what changed
            beneath.clear()
            palette = Palette()
            app.left.set_rows(
                _rows(*(f"gpu {i} util {10 * i}%" for i in range(5)), "gpu 5 util 5" + str(shift)),
                30,
                palette,
            )
            await pilot.pause()
            beneath[:] = [u for u in beneath if u is not None]  # None: "nothing to draw"
            assert beneath and all(isinstance(u, Written) for u in beneath)
            for update in beneath:
                terminal.feed(update.render_segments(app.console))
            assert terminal.visible() == _drawn(app).visible()
        sent = "".join(u.render_segments(app.console) for u in beneath)
        assert "1" in sent and "gpu" not in sent and len(sent) < 24, repr(sent)
