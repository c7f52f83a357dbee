"""The keys as a person meets them: the help screen (honest per mode), the footer at 80x24,
and the command palette (Ctrl+P), through Textual's pilot."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from textual import events
from textual.containers import ScrollableContainer
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import OptionList

from gputui.formats.recording import read_recording
from gputui.launch import make_replay_app
from gputui.ui import keys
from gputui.ui.commands import GpuTuiCommands
from gputui.ui.lines import LineView
from gputui.ui.main_screen import MainScreen
from gputui.ui.paint import Palette
from gputui.ui.screens import HelpScreen
from tests.conftest import DemoApp
from tests.functional.test_record_replay import record_demo

REPLAY_KEYS = (".", "[ ] / { }", "< >")
LIVE_KEYS = ("+ / =", "-")


def plain(renderable: object, width: int = 100) -> str:
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def help_text(screen: HelpScreen) -> str:
    """The help screen's key table and legend as drawn, in plain text."""
    return screen.plain


def key_cells(rows: list[tuple[str, str]]) -> set[str]:
    return {key for key, _ in rows}


# -- the help screen ------------------------------------------------------------------------


def test_the_help_screen_lists_only_what_works_in_its_mode() -> None:
    live = HelpScreen(keys.BINDINGS, Palette(), replay=False)
    replay = HelpScreen(keys.BINDINGS, Palette(), replay=True)
    assert not key_cells(live.rows) & set(REPLAY_KEYS)
    assert set(LIVE_KEYS) <= key_cells(live.rows)
    assert set(REPLAY_KEYS) <= key_cells(replay.rows)
    assert not key_cells(replay.rows) & set(LIVE_KEYS)
    assert not any(d.startswith("replay:") for _, d in live.rows)


@pytest.mark.parametrize("replay", [False, True])
def test_every_action_of_the_mode_is_in_the_help_rows(replay: bool) -> None:
    rows = keys.help_rows(keys.BINDINGS, replay)
    shown = [action for row in rows for action in row.actions]
    assert len(shown) == len(set(shown)), "an action listed twice"
    for binding in keys.BINDINGS:
        works = keys.in_mode(binding.action, replay)
        assert (binding.action in shown) is works, binding.action
        if works and not binding.action.startswith("jump("):
            row = next(r for r in rows if binding.action in r.actions)
            cell = set(row.keys.replace(" / ", " ").split())
            assert set(keys.binding_keys(binding)) <= cell, (binding.action, row.keys)
    assert sum(1 for row in rows if row.keys == "0 … 9") == 1


async def test_question_mark_opens_the_live_help(demo_app: DemoApp) -> None:
    app = demo_app(None, 4)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        assert screen.replay is False
        text = help_text(screen)
        for key, _ in keys.key_rows(keys.BINDINGS, replay=False):
            assert key in text
        for key in REPLAY_KEYS[1:]:
            assert key not in text
        for term in ("✖ ▲ ●", "▶", "+N GPUs ↓", "<1 min", "WORKERS", "GIL-bound", "SM%"):
            assert term in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        assert app.is_running


async def test_question_mark_opens_the_replay_help_while_a_recording_plays(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    record_demo(path, seconds=30)
    app = make_replay_app(read_recording(path), snapshot_dir=tmp_path)
    assert app.replay is not None
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        assert screen.replay is True
        text = help_text(screen)
        for key in REPLAY_KEYS:
            assert key in key_cells(screen.rows)
        assert "[ ] / { }" in text and "< >" in text
        assert "+ / =" not in text


# -- the footer -----------------------------------------------------------------------------


async def test_the_footer_at_80x24_shows_help_and_quit(demo_app: DemoApp) -> None:
    app = demo_app(None, 4)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        footer = app.query_one("#footer", LineView)
        assert footer.region == Region(0, 23, 80, 1)  # the bottom row, whole
        line = footer.plain
        assert line.startswith(" ? help  q quit ")
        assert line.rstrip().endswith("^p palette") and len(line) == 80


async def test_a_click_on_a_footer_key_presses_it(demo_app: DemoApp) -> None:
    app = demo_app(None, 4)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        line = app.query_one("#footer", LineView).plain
        await pilot.click("#footer", offset=(line.index("o overview"), 0))
        await pilot.pause()
        assert app.choices.overview
        await pilot.click("#footer", offset=(line.index("? help"), 0))
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


# -- the command palette ------------------------------------------------------------------


def test_the_main_screen_offers_gputui_commands_in_the_palette() -> None:
    offered = [c if isinstance(c, type) else c() for c in MainScreen.COMMANDS]
    assert GpuTuiCommands in offered


async def _open_palette(pilot: Pilot[int], query: str) -> OptionList:
    await pilot.press("ctrl+p")
    await pilot.press(*("space" if c == " " else c for c in query))
    options = pilot.app.screen.query_one(OptionList)
    for _ in range(100):  # the palette gathers hits in a worker
        await pilot.pause(0.02)
        if options.option_count:
            await pilot.pause(0.1)  # the rest of the batch
            break
    return options


def _prompts(options: OptionList) -> list[str]:
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def test_the_palette_goes_to_a_gpu(demo_app: DemoApp) -> None:
    app = demo_app(None, 4)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.selected == 0
        options = await _open_palette(pilot, "GPU 2")
        assert any(p.startswith("Go to GPU 2") for p in _prompts(options))
        await pilot.press("enter")
        await pilot.pause()
        assert app.selected == 2


async def test_the_palette_offers_the_snapshot_and_keeps_textual_themes(
    demo_app: DemoApp,
) -> None:
    app = demo_app(None, 4)
    async with app.run_test(size=(120, 40)) as pilot:
        options = await _open_palette(pilot, "snapshot")
        prompts = _prompts(options)
        assert any(
            p.startswith("Snapshot: save JSON, Markdown, SVG and the report") for p in prompts
        )
        await pilot.press("escape")
        await pilot.pause()
        options = await _open_palette(pilot, "theme")
        assert any("theme" in p.lower() for p in _prompts(options))


async def test_the_palette_runs_the_snapshot(demo_app: DemoApp, tmp_path: Path) -> None:
    app = demo_app(None, 4, snapshot_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open_palette(pilot, "snapshot save")
        await pilot.press("enter")
        for _ in range(50):
            await pilot.pause(0.05)
            if len(list(tmp_path.iterdir())) == 4:
                break
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".html", ".json", ".md", ".svg"]


async def test_the_palette_lists_every_command_before_anything_is_typed(
    demo_app: DemoApp,
) -> None:
    app = demo_app(None, 4)
    async with app.run_test(size=(120, 40)) as pilot:
        options = await _open_palette(pilot, "")
        prompts = _prompts(options)
        for name in ("Snapshot: save JSON", "Go to GPU 0", "Go to GPU 3", "Help", "Topology"):
            assert any(p.startswith(name) for p in prompts), name


@pytest.mark.parametrize("keys", [["y"], ["a"], ["r"], ["question_mark"], ["down", "i"]])
async def test_q_closes_every_page_over_the_panels_and_a_second_q_quits(
    demo_app: DemoApp, keys: list[str]
) -> None:
    """q inside the topology, every-process, rules, help and process pages goes back
    (issue 27: it did nothing there; the cluster page's: test_cluster_view); on the main
    screen it quits."""
    app = demo_app(None, 4)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press(*keys)
        await pilot.pause()
        assert app.screen is not app.screen_stack[0]
        await pilot.press("q")
        await pilot.pause()
        assert app.screen is app.screen_stack[0] and app.is_running
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


async def test_the_palette_offers_no_textual_command_that_fails_or_does_not_fit(
    demo_app: DemoApp,
) -> None:
    """Textual's Screenshot wrote to ~/Downloads (absent on many servers: it failed) and
    Keys opened its own key panel over gputui's help; gputui's snapshot is s. Theme and
    Quit stay, with gputui's own commands."""
    app = demo_app(None, 4)
    async with app.run_test(size=(120, 40)) as pilot:
        prompts = _prompts(await _open_palette(pilot, ""))
        names = {p.split("\n")[0] for p in prompts}
        assert {"Theme", "Quit", "Help", "Go to GPU 3"} <= names
        assert not names & {"Screenshot", "Keys", "Maximize", "Minimize"}
        for query in ("screensh", "keys"):  # not found by a search either
            await pilot.press("escape")
            found = {p.split("\n")[0] for p in _prompts(await _open_palette(pilot, query))}
            assert not found & {"Screenshot", "Keys"}, found


async def test_the_palette_theme_and_quit_work(demo_app: DemoApp) -> None:
    app = demo_app(None, 4)
    async with app.run_test(size=(120, 40)) as pilot:
        before = app.theme
        await _open_palette(pilot, "theme")
        await pilot.press("enter")  # Textual's theme picker
        await pilot.pause(0.2)
        await pilot.press("down", "enter")
        await pilot.pause(0.2)
        assert app.theme != before
        await _open_palette(pilot, "quit")
        await pilot.press("enter")
        await pilot.pause(0.2)
    assert app.return_value == 0


async def test_the_help_scrolls_a_line_for_every_arrow_however_fast_they_come(
    demo_app: DemoApp,
) -> None:
    """↓ held or typed fast arrives as several keys before the next repaint (the pilot
    waits after each key, so they are posted here as the driver posts them): each scrolls
    one line. Textual's animated scroll started each from the same place: 5 ↓, 1 line."""
    app = demo_app(None, 4)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        dialog = app.screen.query_one("#dialog", ScrollableContainer)
        assert dialog.max_scroll_y > 12
        for _ in range(5):
            app.post_message(events.Key("down", None))
        await pilot.pause(0.3)
        assert dialog.scroll_y == 5
        for _ in range(2):
            app.post_message(events.Key("up", None))
        await pilot.pause(0.3)
        assert dialog.scroll_y == 3
        page = dialog.scrollable_content_region.height
        for _ in range(2):
            app.post_message(events.Key("pagedown", None))
        await pilot.pause(0.3)
        assert dialog.scroll_y == min(3 + 2 * page, dialog.max_scroll_y)
        app.post_message(events.Key("end", None))
        app.post_message(events.Key("up", None))
        await pilot.pause(0.3)
        assert dialog.scroll_y == dialog.max_scroll_y - 1
        await pilot.press("home")
        assert dialog.scroll_y == 0 and app.selected == 0  # Home is the page's, not a GPU's
