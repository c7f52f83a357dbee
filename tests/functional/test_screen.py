"""The screen as a user meets it: the layout follows a resize at once, clicks reach the
row they land on, every GPU process in one view, the source and a replay's position in
the header, and terminals that cannot draw colour or Unicode."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from gputui.formats.recording import read_recording
from gputui.launch import make_replay_app
from gputui.ui.lines import LineView
from gputui.ui.paint import ascii_terminal
from gputui.ui.processes import AllProcessesScreen
from gputui.view.cells import CardsKey, PidKey
from tests.conftest import DemoApp
from tests.functional.test_record_replay import record_demo

PANELS = ("header", "gpus", "detail", "advisor", "procs")


def _text(app: object, name: str) -> str:
    return app.query_one(f"#{name}", LineView).plain  # type: ignore[attr-defined, no-any-return]


async def test_the_layout_follows_a_resize_at_once(demo_app: DemoApp) -> None:
    app = demo_app(None, 8)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        laid_out = app.panels.laid_out
        assert laid_out is not None and laid_out.width == 160
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        done = app.panels.laid_out
        assert done is not None and (done.width, done.height) == (80, 24) and done.stacked
        gpus = _text(app, "gpus").splitlines()
        assert len(gpus) == 1 + 8  # column headers, then every GPU on its own line
        assert app.query_one("#gpus").size.height == 1 + 8


async def test_panels_at_80x24_keep_every_line_inside_the_width(demo_app: DemoApp) -> None:
    app = demo_app(None, 8)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        for name in PANELS:
            for line in _text(app, name).splitlines():
                assert (len(line) <= 80 and line == line.rstrip()) or line.strip() == ""
        procs = _text(app, "procs").splitlines()
        assert procs[0].split()[0] == "PID" and "COMMAND" in procs[0]
        assert "python" in procs[1]  # a process row, not only a header


async def test_clicks_reach_the_row_they_land_on(demo_app: DemoApp) -> None:
    app = demo_app(None, 8)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("o")
        await pilot.pause()
        overview = app.query_one("#overview", LineView)
        key = overview.rows[2].key
        assert isinstance(key, CardsKey) and key.gpus[:2] == (0, 1)
        await pilot.click(overview, offset=(key.card_width + 3, 1 + 2))  # the second card
        assert app.selected == 1
        await pilot.press("o")
        await pilot.pause()
        procs = app.query_one("#procs", LineView)
        assert isinstance(procs.rows[1].key, PidKey)


async def test_every_gpu_process_sorted_and_filtered(demo_app: DemoApp) -> None:
    app = demo_app(None, 8)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, AllProcessesScreen)
        view = screen.query_one("#all", LineView)
        pids = [r.key.pid for r in view.rows if isinstance(r.key, PidKey)]
        frame = app.monitor.latest
        assert frame is not None and set(pids) == {p.pid for p in frame.processes}
        assert "workers (data loaders)" in view.plain
        await pilot.press("t")  # by SM %
        await pilot.pause()
        assert "by SM%" in view.plain
        await pilot.press("u")  # the first user owning a GPU process
        await pilot.pause()
        assert "user:" in view.plain and "user all" not in view.plain
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, AllProcessesScreen)


async def test_the_header_names_the_source_and_a_replays_place(tmp_path: Path) -> None:
    path = tmp_path / "night-run.jsonl"
    record_demo(path, seconds=120)
    app = make_replay_app(read_recording(path), speed=1, start_s=60, name=path.name)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        await pilot.press("p")
        header = _text(app, "header")
        assert "REPLAY 1x" in header and "night-run.jsonl" in header
        assert re.search(r"1 min 0\d s of 1 min 59 s", header)


async def test_start_past_the_end_says_so(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_demo(path, seconds=60)
    app = make_replay_app(read_recording(path), start_s=3600)
    assert any("past the end of the recording" in n for n in app.pending_notices)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        toasts = [n.message for n in app._notifications]
        assert any("--start 1 h" in t or "--start 60 min" in t for t in toasts), toasts


async def test_an_ascii_terminal_gets_only_ascii(demo_app: DemoApp) -> None:
    app = demo_app(None, 8, ascii=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        for name in (*PANELS, "host"):
            text = "".join(line.plain for line in app.query_one(f"#{name}", LineView).lines)
            assert text.isascii(), (name, {c for c in text if not c.isascii()})
        assert app.screen.has_class("-ascii")
        # the whole screen, the footer too (the SVG writes its spaces as no-break spaces)
        drawn = html.unescape(
            "".join(re.findall(r"<text[^>]*>([^<]*)</text>", app.export_screenshot()))
        )
        assert {c for c in drawn.replace("\xa0", " ") if not c.isascii()} == set()


@pytest.mark.parametrize(
    ("environ", "ascii"),
    [
        ({"TERM": "linux"}, True),
        ({"TERM": "xterm-256color", "LANG": "en_US.ISO-8859-1"}, True),
        ({"LC_ALL": "C"}, True),
        ({"LANG": "en_US.UTF-8"}, False),
        ({"LC_ALL": "C.UTF-8", "LANG": "C"}, False),  # LC_ALL wins
        ({}, False),  # no locale at all: a bare container, the terminal is UTF-8
        ({"TERM": "linux", "GPUTUI_ASCII": "0"}, False),
        ({"LANG": "en_US.UTF-8", "GPUTUI_ASCII": "1"}, True),
    ],
)
def test_which_terminals_get_ascii(environ: dict[str, str], ascii: bool) -> None:
    assert ascii_terminal(environ) is ascii


async def test_no_color_draws_in_greys(demo_app: DemoApp, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = demo_app(None, 4)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.no_color
        view = app.query_one("#gpus", LineView)
        from textual.geometry import Region

        colours = set()
        for strip in view.render_lines(Region(0, 0, view.outer_size.width, 8)):
            for segment in strip:
                style = segment.style
                for colour in (style.color, style.bgcolor) if style else ():
                    if colour is not None and colour.triplet is not None:
                        colours.add(colour.triplet)
        assert colours and all(r == g == b for r, g, b in colours)


async def test_toasts_show_outside_text_as_it_is(tmp_path: Path) -> None:
    """Toasts carry file names and key names with brackets: never read as markup."""
    path = tmp_path / "[run] night.jsonl"
    record_demo(path, seconds=20)
    app = make_replay_app(read_recording(path), speed=50, name=path.name)
    assert app.replay is not None
    async with app.run_test(size=(120, 40)) as pilot:
        while not app.replay.at_end:
            await pilot.pause(0.05)
        await pilot.pause(0.3)
        ended = [n for n in app._notifications if "End of the recording" in n.message]
        assert ended and "[ goes back 1 min, { 10 min" in ended[0].message
        assert not any(n.markup for n in app._notifications)
        assert "[run] night.jsonl" in _text(app, "header")
