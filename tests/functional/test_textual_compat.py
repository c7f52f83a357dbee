"""The private Textual names gputui leans on (gputui/ui/compat.py) still exist and behave as
gputui assumes, and the app works with every shortcut off (GPUTUI_TEXTUAL_PUBLIC=1).

A failure here after a Textual upgrade: users can set GPUTUI_TEXTUAL_PUBLIC=1 at once, and
compat.py is the one place to mend.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rich.segment import Segment
from textual import events
from textual.app import App, ComposeResult
from textual.drivers.linux_driver import LinuxDriver
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from gputui.ui import compat
from gputui.ui.driver import QuietLinuxDriver, quiet_driver
from gputui.ui.lines import LineView
from gputui.ui.main_screen import MainScreen

ROOT = Path(__file__).resolve().parents[2]


# -- the switch ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "on"),
    [("1", True), ("true", True), ("YES", True), (" on ", True), ("0", False), ("", False)],
)
def test_the_switch_reads_the_environment(value: str, on: bool) -> None:
    assert compat.public_only({compat.ENV_VAR: value}) is on
    assert compat.public_only({}) is False


def test_every_shortcut_follows_the_switch() -> None:
    fast = not compat.PUBLIC_ONLY
    assert compat.PUBLIC_ONLY is compat.public_only(os.environ)
    assert compat.FAST_LINES is fast
    assert compat.FAST_PAINT is fast
    assert compat.FAST_FRAMES is fast
    assert compat.FAST_WRITE is fast
    assert ("render_lines" in vars(LineView)) is fast
    assert ("notify_style_update" in vars(LineView)) is fast
    assert getattr(MainScreen, "BLANK", False) is fast
    assert (compat.XTermParser is not None) is fast
    assert (quiet_driver(LinuxDriver) is QuietLinuxDriver) is fast


# -- textual._xterm_parser.XTermParser, its feed, tick and _timeout_time ----------------


def _parser() -> Any:
    parser_class = compat.load_xterm_parser()
    assert parser_class is not None, "textual._xterm_parser.XTermParser is gone"
    assert compat.quiet_input_supported() is not compat.PUBLIC_ONLY
    return parser_class(False)  # what the quiet driver passes: Textual's debug flag


def _keys(messages: Any) -> list[str]:
    return [m.key for m in messages if isinstance(m, events.Key)]


def test_xterm_parser_feed_turns_text_into_keys() -> None:
    parser = _parser()
    assert _keys(parser.feed("q")) == ["q"]
    assert _keys(parser.feed("\x1b[A")) == ["up"]  # a whole sequence: no wait
    assert not compat.escape_pending(parser)
    assert list(parser.tick()) == []
    list(parser.feed(""))  # the end of the input, as the driver's last call


def test_xterm_parser_timeout_time_marks_a_pending_escape_until_tick() -> None:
    parser = _parser()
    assert hasattr(parser, "_timeout_time")
    assert parser._timeout_time is None  # at rest: the quiet driver blocks
    assert not compat.escape_pending(parser)
    assert _keys(parser.feed("\x1b")) == []  # a lone Escape may start a sequence
    assert isinstance(parser._timeout_time, float)
    assert compat.escape_pending(parser)  # the driver polls and ticks meanwhile
    keys: list[str] = []
    deadline = time.monotonic() + 2.0
    while not keys and time.monotonic() < deadline:
        keys = _keys(parser.tick())
        time.sleep(0.01)
    assert keys == ["escape"]
    assert parser._timeout_time is None
    assert not compat.escape_pending(parser)


def test_a_parser_without_timeout_time_is_always_ticked() -> None:
    assert compat.escape_pending(object())  # the safe side: poll as Textual does


# -- LinuxDriver.run_input_thread, .exit_event, Driver._debug --------------------------


async def test_linux_driver_input_loop_and_its_stop_event() -> None:
    assert callable(getattr(LinuxDriver, "run_input_thread", None))
    # Textual stops the input thread by setting exit_event (QuietLinuxDriver wakes on it).
    assert "self.exit_event.set()" in inspect.getsource(LinuxDriver)
    saved = {s: signal.getsignal(s) for s in (signal.SIGTSTP, signal.SIGCONT)}
    try:
        driver = LinuxDriver(object(), debug=True)  # type: ignore[arg-type]
        assert isinstance(driver.exit_event, threading.Event)
        assert compat.driver_debug(driver) is True
        assert compat.driver_debug(LinuxDriver(object())) is False  # type: ignore[arg-type]
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


@pytest.mark.skipif(compat.PUBLIC_ONLY, reason="Textual's own driver with the switch on")
async def test_ctrl_z_and_fg_wait_until_the_main_thread_holds_no_lock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Textual installs its bound ``_sigtstp_application``/``_sigcont_application`` as the
    handlers and suspends inside them; a handler runs between two bytecodes of the main
    thread, which may hold the writer queue's lock mid-frame (the suspend's writes then wait
    on it forever). The quiet driver hands both to the event loop."""
    assert "signal.signal(signal.SIGTSTP, self._sigtstp_application)" in inspect.getsource(
        LinuxDriver
    )
    assert "signal.signal(signal.SIGCONT, self._sigcont_application)" in inspect.getsource(
        LinuxDriver
    )
    writing = threading.Lock()  # stands for the writer queue's lock, as Queue.put holds it
    handled: list[tuple[str, bool]] = []

    def textuals(name: str) -> Any:
        def handle(_driver: LinuxDriver, *_args: object) -> None:
            free = writing.acquire(blocking=False)  # what the suspend's writes need
            handled.append((name, free))
            if free:
                writing.release()

        return handle

    monkeypatch.setattr(LinuxDriver, "_sigtstp_application", textuals("suspend"))
    monkeypatch.setattr(LinuxDriver, "_sigcont_application", textuals("resume"))
    saved = {s: signal.getsignal(s) for s in (signal.SIGTSTP, signal.SIGCONT)}
    try:
        driver = QuietLinuxDriver(object())
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)  # nothing here is sent a signal
        driver._signal_loop = asyncio.get_running_loop()  # as start_application_mode does
        driver._sigcont_application(signal.SIGCONT, None)  # a hangup's, nothing suspended
        await asyncio.sleep(0)
        assert handled == []  # no resume: it would start a second writer on a closed tty
        with writing:  # the main thread in the middle of writing a frame
            driver._sigtstp_application(signal.SIGTSTP, None)
            driver._sigcont_application(signal.SIGCONT, None)
            assert handled == []
        await asyncio.sleep(0)
        assert handled == [("suspend", True), ("resume", True)]
        driver._signal_loop = None  # before application mode: Textual's way, inline
        driver._sigtstp_application(signal.SIGTSTP, None)
        assert handled[-1] == ("suspend", True)
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


# -- Widget.render_lines, DOMNode.notify_style_update, Widget.BLANK ---------------------


class _Marked(Widget):
    """Answers the compositor itself, as LineView does."""

    DEFAULT_CSS = "_Marked { height: 3; width: 20; border-top: solid red; }"

    def __init__(self) -> None:
        super().__init__()
        self.crops: list[Region] = []

    def render_lines(self, crop: Region) -> list[Strip]:
        self.crops.append(crop)
        return [Strip([Segment("#" * crop.width)], crop.width) for _ in crop.line_range]


class _Styled(Widget):
    DEFAULT_CSS = "_Styled { height: 1; color: #00ff00; } _Styled.-hot { color: #ff0000; }"

    def __init__(self) -> None:
        super().__init__()
        self.updates = 0

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.updates += 1


class _Blank(Widget):
    BLANK = True
    DEFAULT_CSS = "_Blank { height: 2; background: #0000ff; }"

    def render(self) -> str:
        raise AssertionError("a BLANK widget is not asked for its content")


class _Probe(App[None]):
    """One probe widget per app: a probe that fails cannot take the others down."""

    def __init__(self, probe: Widget) -> None:
        super().__init__()
        self.probe = probe

    def compose(self) -> ComposeResult:
        yield self.probe


async def test_the_compositor_asks_render_lines_for_rows_in_widget_coordinates() -> None:
    marked = _Marked()
    app = _Probe(marked)
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        assert marked.crops, "the compositor no longer calls render_lines"
        whole = Region(0, 0, *marked.outer_size)
        assert all(whole.contains_region(crop) for crop in marked.crops)
        assert "#" * 20 in app.export_screenshot()  # what it returned is on the screen
        marked.crops.clear()
        marked.refresh(Region(0, 0, 20, 1))  # a content row, as LineView.set_lines does
        await pilot.pause()
        assert marked.crops and all(whole.contains_region(crop) for crop in marked.crops)


@pytest.mark.skipif(compat.PUBLIC_ONLY, reason="the shortcuts are off")
async def test_rows_marked_on_the_screen_are_painted_in_the_same_call() -> None:
    marked = _Marked()
    app = _Probe(marked)
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        marked.crops.clear()
        fast = compat.FastPaint()
        assert fast.mark(marked, [Region(0, 1, 20, 1)])  # a row, in its own terms
        assert marked in app.screen._dirty_widgets
        fast.paint_now(app.screen)
        # the compositor asked for the row within the call, and nothing is left to paint
        assert marked.crops and not app.screen._dirty_widgets
        whole = Region(0, 0, *marked.outer_size)
        assert all(whole.contains_region(crop) for crop in marked.crops)
        marked.display = False
        await pilot.pause()
        assert not fast.mark(marked, [Region(0, 1, 20, 1)])  # hidden: refresh
        assert not compat.FastPaint(enabled=False).mark(marked, [Region(0, 1, 20, 1)])


@pytest.mark.skipif(compat.PUBLIC_ONLY, reason="the shortcuts are off")
async def test_rows_marked_in_a_handler_are_painted_as_it_ends_without_waking_the_screen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    marked = _Marked()
    app = _Probe(marked)
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        prompts: list[object] = []
        monkeypatch.setattr(app.screen, "check_idle", lambda: prompts.append(app.screen))
        marked.crops.clear()
        fast = compat.FastPaint()
        with fast.painted_at_end():
            assert fast.mark(marked, [Region(0, 1, 20, 1)])
            assert not marked.crops  # held until the handler ends
        assert marked.crops and not app.screen._dirty_widgets  # painted as it ended
        assert prompts == []  # and the screen was never woken to paint it later
        # a screen that cannot be painted now (inside a batch of updates) is woken to
        # paint it later, as outside
        with app.batch_update():
            with fast.painted_at_end():
                assert fast.mark(marked, [Region(0, 1, 20, 1)])
            assert marked in app.screen._dirty_widgets and prompts == [app.screen]


async def test_the_samplers_frames_are_drawn_and_an_error_drawing_one_ends_the_app(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Frames come from the sampler's thread as calls on the app's loop (FAST_FRAMES) or
    as messages; either way each is drawn, with every row painted by the time the
    handler returns, and an error drawing one ends the app as an error in a handler
    does, never a sampler thread left to die alone."""
    from gputui.core.config import Config
    from gputui.launch import make_app
    from gputui.sources.simulated import SimulatedSource, resolve_scenarios

    source = SimulatedSource(resolve_scenarios("healthy", 2))
    app = make_app(source, source.open(), Config(interval_s=0.25))
    assert app.sampler is not None
    with pytest.raises(ZeroDivisionError):
        async with app.run_test(size=(120, 40)) as pilot:
            for _ in range(40):
                await pilot.pause(0.05)
                if len(app.monitor.history) >= 2:
                    break
            assert len(app.monitor.history) >= 2
            assert "util" in app.query_one("#gpus", LineView).plain.lower()

            def broken(_frame: object) -> None:
                raise ZeroDivisionError("drawing failed")

            monkeypatch.setattr(app.monitor, "ingest", broken)
            for _ in range(40):
                await pilot.pause(0.05)
                if not app.is_running:
                    break
            assert app.return_code == 1
    assert app.sampler.stop(timeout=1.0)


def test_a_bare_row_behaves_as_a_strip_of_the_same_segments() -> None:
    """Strip's private slots (compat.BARE_ROWS): a row built without Strip's constructor
    crops, divides, styles, joins and renders as Textual's own strip does."""
    from rich.console import Console
    from rich.style import Style

    assert compat.BARE_ROWS is compat.FAST_LINES, (
        f"Strip's slots changed: {sorted(set(Strip.__slots__) ^ compat.STRIP_SLOTS)}"
    )
    segments = [Segment("GPU 0 ", Style(bold=True)), Segment("72 °C", Style(color="red"))]
    row, strip = compat.BareRow(list(segments), 11), Strip(list(segments), 11)
    console = Console(width=40, color_system="truecolor", force_terminal=True)
    assert row.render(console) == strip.render(console)
    for _ in range(2):  # the second time from the cache, where a strip keeps one
        assert list(row.crop(2, 9)) == list(strip.crop(2, 9))
        assert [list(s) for s in row.divide([3, 11])] == [list(s) for s in strip.divide([3, 11])]
        assert list(row.crop_extend(1, 14, None)) == list(strip.crop_extend(1, 14, None))
        assert list(row.apply_style(Style(dim=True))) == list(strip.apply_style(Style(dim=True)))
        assert list(row.adjust_cell_length(14)) == list(strip.adjust_cell_length(14))
        assert list(row.apply_offsets(1, 2)) == list(strip.apply_offsets(1, 2))
    assert row.cell_length == strip.cell_length == 11
    assert list(Strip.join([row, row])) == list(Strip.join([strip, strip]))
    assert list(row) == segments  # nothing above changed the row's own segments


async def test_notify_style_update_is_called_when_the_css_changes() -> None:
    styled = _Styled()
    app = _Probe(styled)
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        before = styled.updates
        colour = styled.rich_style.color
        styled.add_class("-hot")
        await pilot.pause()
        assert styled.updates > before
        assert styled.rich_style.color != colour


async def test_blank_draws_only_the_background() -> None:
    assert Widget.BLANK is False  # Textual 7.1.0 and later
    blank = _Blank()
    app = _Probe(blank)
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()  # rendering would raise in _Blank.render
        rows = blank.render_lines(Region(0, 0, 40, 2))
        assert [row.text for row in rows] == [" " * 40] * 2
        assert all(
            seg.style is not None
            and seg.style.bgcolor is not None
            and seg.style.bgcolor.triplet is not None
            and seg.style.bgcolor.triplet.hex == "#0000ff"
            for row in rows
            for seg in row
        )


# -- the app on Textual's public paths --------------------------------------------------

_RUN_DEMO = """
import asyncio, json
from textual.drivers.linux_driver import LinuxDriver
from textual.geometry import Region
from textual.widget import Widget

from gputui.launch import make_demo_app
from gputui.ui import compat
from gputui.ui.main_screen import MainScreen
from gputui.ui.driver import quiet_driver
from gputui.ui.lines import LineView


def rows(app):
    shown = {}
    for view in app.query(LineView):
        if view.region.area:  # on the screen (the overview hides some panels)
            lines = view.render_lines(Region(0, 0, *view.outer_size))
            shown[view.id] = [[(s.text, str(s.style)) for s in line] for line in lines]
    return shown


async def main():
    app = make_demo_app(None, 8)
    out = {
        "public": compat.PUBLIC_ONLY,
        "own render_lines": LineView.render_lines is not Widget.render_lines,
        "blank": getattr(MainScreen, "BLANK", False),
        "quiet driver": quiet_driver(LinuxDriver) is not LinuxDriver,
    }
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        out["panels"] = rows(app)
        await pilot.press("right")
        await pilot.pause()
        out["selected"] = app.selected
        out["detail"] = str(app.query_one("#detail").border_title)
        out["after right"] = rows(app)
        await pilot.press("o")
        await pilot.pause()
        out["overview"] = app.query_one("#overview").display
        out["after o"] = rows(app)
    print(json.dumps(out))


asyncio.run(main())
"""


def _run_demo(public: bool) -> dict[str, Any]:
    env = dict(os.environ)
    env[compat.ENV_VAR] = "1" if public else "0"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", _RUN_DEMO],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_app_works_on_textual_public_paths_alone() -> None:
    public = _run_demo(public=True)
    assert public["public"] is True
    assert not public["own render_lines"] and not public["blank"] and not public["quiet driver"]
    panels = public["panels"]
    assert len(panels) >= 5
    text = "\n".join("".join(t for t, _ in row) for rows in panels.values() for row in rows)
    assert "Util" in text and "H100" in text and "Advisor" in text
    assert public["selected"] == 1 and public["detail"].startswith("GPU 1 ")
    assert public["overview"] is True
    assert "╭ 7 " in "".join(t for rows in public["after o"].values() for r in rows for t, _ in r)

    # ... and it draws what the shortcuts draw, cell for cell and style for style.
    fast = _run_demo(public=False)
    assert fast["public"] is False
    assert fast["own render_lines"] and fast["blank"] and fast["quiet driver"]
    for key in ("panels", "after right", "after o", "selected", "detail", "overview"):
        assert public[key] == fast[key], key


# -- compat lists every private Textual name the package touches ---------------------------

UI = ROOT / "gputui" / "ui"


def _textual_privates() -> set[str]:
    """The private names ("_x", not dunder) of the Textual classes the screen works with
    and of every class above them: class attributes, and what their code sets on self."""
    import textual.app
    import textual.command
    import textual.containers
    import textual.drivers.linux_driver
    import textual.screen
    import textual.strip
    import textual.widget
    import textual.widgets

    classes: list[type] = [
        textual.app.App,
        textual.screen.Screen,
        textual.screen.ModalScreen,
        textual.widget.Widget,
        textual.strip.Strip,
        textual.drivers.linux_driver.LinuxDriver,
        textual.containers.VerticalScroll,
        textual.containers.Horizontal,
        textual.widgets.Input,
        textual.widgets.Label,
        textual.command.Provider,
    ]
    parser = compat.load_xterm_parser()
    if parser is not None:
        classes.append(parser)
    try:
        from textual._compositor import Compositor, CompositorUpdate
    except ImportError:
        pass
    else:
        classes += [Compositor, CompositorUpdate]
    names: set[str] = set()
    for cls in {base for c in classes for base in c.__mro__}:
        if not cls.__module__.startswith("textual"):
            continue
        names.update(n for n in vars(cls) if n.startswith("_") and not n.startswith("__"))
        try:
            tree = ast.parse(inspect.getsource(cls))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                names.add(node.attr)
    return names


def _private_textual_uses() -> dict[str, set[str]]:
    """Every private Textual name gputui/ui touches: its private modules imported, and
    Textual's private attributes read, set or named (getattr) -> the files that do."""
    privates = _textual_privates()
    assert {"_display", "_compositor", "_size"} <= privates  # the walk saw Textual's
    used: dict[str, set[str]] = {}
    for path in sorted(UI.glob("*.py")):
        tree = ast.parse(path.read_text())
        for statement in list(tree.body):  # the list itself names them: not a use
            if isinstance(statement, ast.AnnAssign) and ast.unparse(statement.target) == (
                "PRIVATE_NAMES"
            ):
                tree.body.remove(statement)
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] if node.module.startswith("textual._") else []
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.startswith("textual._")]
            elif isinstance(node, ast.Attribute) and node.attr in privates:
                names = [node.attr]
            elif isinstance(node, ast.Constant) and node.value in privates:
                names = [str(node.value)]
            for name in names:
                used.setdefault(name, set()).add(path.name)
    return used


def test_compat_lists_every_private_textual_name_the_screen_touches() -> None:
    used = _private_textual_uses()
    unlisted = {name: files for name, files in used.items() if name not in compat.PRIVATE_NAMES}
    assert not unlisted, (
        f"private Textual names outside compat.PRIVATE_NAMES: {unlisted} (list each with its "
        "reason and a public fallback in compat.py, or rename a gputui name that collides)"
    )
    stale = set(compat.PRIVATE_NAMES) - set(used)
    assert not stale, f"compat.PRIVATE_NAMES lists names nothing uses now: {sorted(stale)}"
    # each only where its entry says (mostly compat.py itself)
    misplaced = {
        name: files
        for name, files in used.items()
        if any(file not in compat.PRIVATE_NAMES[name].split(" ")[0] for file in files)
    }
    assert not misplaced, f"private Textual names used where compat does not say: {misplaced}"


def test_the_guard_knows_textuals_private_names_from_gputuis_own() -> None:
    privates = _textual_privates()
    assert {"_driver", "_size", "_batch_count", "_timeout_time"} <= privates
    assert "_size" not in compat.PRIVATE_NAMES  # the app no longer writes App._size
    assert not {"_fast", "_lines", "_model", "_line_segments"} & privates  # LineView's own
