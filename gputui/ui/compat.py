"""Every private or undocumented Textual name gputui leans on, in one place, with a way out.

gputui takes a handful of shortcuts through Textual's internals to stay cheap while it idles and
redraws a few panels once a second. Each has a public fallback, and setting
``GPUTUI_TEXTUAL_PUBLIC=1`` takes every fallback at once (read once, when this module is
imported): the way out if a Textual release renames one of these.
tests/functional/test_textual_compat.py checks that each name still exists and behaves as
assumed here, and that ``PRIVATE_NAMES`` lists every private Textual name the package
touches (a name outside it, or one it lists that nothing uses, fails).

Private name (who uses it): why / public fallback
- ``textual._xterm_parser.XTermParser`` (driver.py): the quiet driver parses keys exactly
  as Textual does / Textual's own driver (``App.get_driver_class``).
- ``Parser.feed`` / ``Parser.tick`` of that class (driver.py): bytes in, key events out;
  tick gives up a lone Escape / Textual's own driver.
- ``Parser._timeout_time`` (driver.py, through ``escape_pending``): set while the parser
  waits for the rest of an escape sequence, the only time the driver needs to poll /
  Textual's own driver.
- ``LinuxDriver.run_input_thread``, ``.exit_event``, ``Driver._debug`` (driver.py): the
  input loop replaced, the event Textual sets to stop it, the debug flag for the parser /
  Textual's own driver.
- ``LinuxDriver._sigtstp_application`` / ``._sigcont_application`` overrides (here,
  ``SignalsToHooks``, for driver.py): the handlers Textual installs for Ctrl+Z and fg
  suspend and resume inside the signal handler, which can deadlock on the writer's lock
  mid-frame; the quiet driver runs them on the event loop / Textual's own driver (and its
  handlers).
- ``Widget.render_lines`` override (lines.py): the compositor's way into a widget; LineView
  answers content rows from its own row cache / the Line API: ``render_line`` through
  Textual's styles cache.
- ``Strip``'s slots (here, ``BareRow``): the rows LineView hands the compositor are
  made without Strip's constructor, which makes seven caches a row is never asked again;
  used only while the slots are the ones it knows / Strip's own constructor.
- ``DOMNode.notify_style_update`` override (lines.py): the hook Textual calls when CSS
  changes, where LineView drops the styles it resolved / ``rich_style`` read for every line.
- ``textual.keys.unicodedata`` (here, ``spare_unicode_names``): Textual looks key names up
  in Unicode's name database, paging in ~0.8 MB for a few dozen names; gputui hands it a
  stand-in that answers those from a table (keynames.py) and asks the real module for
  anything else / the real module.
- ``Widget._set_dirty``, ``Screen._dirty_widgets``, ``Screen._compositor``,
  ``Screen._on_timer_update``, ``App._batch_count`` (``FastPaint.mark`` and
  ``FastPaint.paint_now``, for LineView and the app): a panel hands its changed rows to
  its screen, and the app has the screen paint them in the handler that changed them,
  where ``Widget.refresh``
  goes through four messages (the widget's prompt and idle, its update to the screen, the
  screen's idle) and the screen's update timer, a loop turn later: a tenth of gputui's
  steady CPU / ``Widget.refresh``, and Textual paints on its timer.
- ``textual._compositor.CompositorUpdate``, ``App._display``, ``Screen._compositor`` and its
  ``visible_widgets``, ``_full_map_invalidated``, ``Screen._layout_required``,
  ``_scroll_required`` and ``_repaint_required`` (``FastPaint.write_rows``): a tick's changed
  rows of a panel nothing covers are written to the terminal as the cells that changed
  (terminal_cells.py: the shortest cursor moves, only the SGR changes between cells),
  through the app's own write with its synchronized update (DEC mode 2026, where the
  terminal answers that it has it); ``FastPaint.watch`` wraps the app's ``_display``, and
  sends the compositor's own updates (``textual._compositor.ChopsUpdate`` and
  ``LayoutUpdate``, their lines read from ``chops``, ``spans`` and ``chop_ends``, and
  ``strips`` and ``region``: ``compositor_rows``) as the cells that changed too (the
  advisor pane, a page, a panel the compositor paints: each line with a reset and a
  restate for every run of text before); of anything else it learns where it draws (a
  partial update's ``spans``, a layout update's ``region``; else everywhere), where rows
  are then written whole again once. The
  compositor's partial update asks every panel between the first and the last changed
  row for all its rows, cuts each line at every panel's edge and joins the pieces again,
  and writes whole runs with a full SGR reset and restate each: a twentieth of gputui's
  steady CPU and five times nvitop's bytes over SSH / the rows marked dirty and painted
  by the compositor (``FastPaint.paint_now``), also whenever any of these does not hold:
  the screen is current, laid out and not resized since, no batch, no inline mode,
  nothing in front of the panel.
- ``App._handle_exception`` (``FastPaint.crash``, for the app): the sampler's frames reach the app
  as a call on its event loop (``loop.call_soon_threadsafe``) instead of a message: a message
  costs the app's queue, its dispatch and an idle pass, and the changed rows' prompt to the
  screen (held back while the frame's handler runs: ``FastPaint.painted_at_end``) another
  message and idle pass, a twentieth of gputui's steady CPU; an error in that call ends the
  app with its traceback as an error in a handler does / the frame posted as a message
  (``FrameReady``).
- ``App._driver`` (app.py, through ``can_suspend``): whether Ctrl+Z can suspend here, as
  Textual's own suspend asks before it sends SIGTSTP / none: Textual's answer is private.
- ``Widget.BLANK`` (main_screen.py, through ``blank``): the screen, covered by the panels,
  answers "only my background" at once / ordinary rendering of its background.
- ``Screen._compositor_refresh``, ``App._display`` (``paint_stages``): the stages
  benchmarks/app_stages.py times; measurement only / a missing one goes untimed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeGuard, TypeVar, runtime_checkable

from rich.segment import Segment
from textual.app import App
from textual.dom import NoScreen
from textual.driver import Driver
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from gputui.ui.terminal_cells import COLOR_SYSTEMS, TerminalRows
from gputui.ui.written import Written, park

if TYPE_CHECKING:
    from rich.console import RenderableType
    from textual._xterm_parser import XTermParser as _XTermParser

#: Strip's per-row state as Textual lays it out (strip.py); a release that adds or renames
#: one builds rows through Strip's own constructor instead.
STRIP_SLOTS: Final = frozenset(
    {
        *("_segments", "_cell_length", "_render_cache", "_link_ids", "_cell_count"),
        *("_divide_cache", "_crop_cache", "_style_cache", "_filter_cache"),
        *("_line_length_cache", "_crop_extend_cache", "_offsets_cache"),
    }
)

#: every private Textual name (a module or an attribute whose name starts with "_") that
#: gputui touches, with the module that touches it; the list above says why
PRIVATE_NAMES: Final[Mapping[str, str]] = {
    "textual._xterm_parser": "compat.py (the quiet driver's parser)",
    "textual._compositor": "compat.py (CompositorUpdate, which says App._display writes "
    "updates whole; ChopsUpdate, LayoutUpdate: compositor_rows; Compositor: paint_stages)",
    "_timeout_time": "compat.py (escape_pending)",
    "_debug": "compat.py (driver_debug)",
    "_sigtstp_application": "compat.py (SignalsToHooks, for driver.py)",
    "_sigcont_application": "compat.py (SignalsToHooks, for driver.py)",
    **dict.fromkeys(sorted(STRIP_SLOTS), "compat.py (BareRow: Strip's slots)"),
    "_set_dirty": "compat.py (FastPaint.mark)",
    "_dirty_widgets": "compat.py (FastPaint.mark, paint_now)",
    "_compositor": "compat.py (FastPaint.mark, write_rows)",
    "_on_timer_update": "compat.py (FastPaint.paint_now)",
    "_batch_count": "compat.py (FastPaint.write_rows, paint_now)",
    "_display": "compat.py (FastPaint.write_rows, FastPaint.watch, paint_stages)",
    "_compositor_refresh": "compat.py (paint_stages)",
    "_full_map_invalidated": "compat.py (FastPaint.write_rows)",
    "_layout_required": "compat.py (FastPaint.write_rows)",
    "_scroll_required": "compat.py (FastPaint.write_rows)",
    "_repaint_required": "compat.py (FastPaint.write_rows)",
    "_handle_exception": "compat.py (FastPaint.crash)",
    "_driver": "compat.py (can_suspend)",
}

ENV_VAR: Final = "GPUTUI_TEXTUAL_PUBLIC"
_TRUE = frozenset({"1", "true", "yes", "on"})

W = TypeVar("W", bound=Widget)


def public_only(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether ``environ`` asks for Textual's public paths only (``GPUTUI_TEXTUAL_PUBLIC=1``)."""
    return environ.get(ENV_VAR, "").strip().lower() in _TRUE


PUBLIC_ONLY: Final[bool] = public_only()
"""Read once: every shortcut below is off, and gputui uses Textual's public paths only."""

FAST_LINES: Final[bool] = not PUBLIC_ONLY
"""LineView overrides ``render_lines`` and ``notify_style_update`` (lines.py)."""

FAST_PAINT: Final[bool] = (
    not PUBLIC_ONLY
    and callable(getattr(Widget, "_set_dirty", None))
    and callable(getattr(Screen, "_on_timer_update", None))
)
"""Changed rows go to the screen directly and are painted at once (``mark_dirty``,
``paint_now``)."""


def _update_type() -> type[Any] | None:
    """The class App._display writes as it is (its own updates'), or None where missing."""
    try:
        from textual._compositor import CompositorUpdate
    except ImportError:
        return None
    return CompositorUpdate if callable(getattr(App, "_display", None)) else None


_UPDATE: Final = None if PUBLIC_ONLY else _update_type()


def _update_kinds() -> tuple[type[Any] | None, type[Any] | None]:
    """The compositor's partial and layout updates, each None where missing or not of the
    shape ``compositor_rows`` reads."""
    try:
        from textual._compositor import ChopsUpdate, LayoutUpdate
    except ImportError:
        return None, None
    chops = ChopsUpdate if {"chops", "spans", "chop_ends"} <= _init_names(ChopsUpdate) else None
    layout = LayoutUpdate if {"strips", "region"} <= _init_names(LayoutUpdate) else None
    return chops, layout


def _init_names(kind: type[Any]) -> set[str]:
    """The attributes ``kind.__init__`` sets on ``self``."""
    code = getattr(kind.__init__, "__code__", None)
    return set(code.co_names) if code is not None else set()


_CHOPS, _LAYOUT = (None, None) if _UPDATE is None else _update_kinds()

FAST_WRITE: Final[bool] = FAST_PAINT and _UPDATE is not None
"""A tick's changed rows go to the terminal without the compositor (``write_rows``)."""

FAST_FRAMES: Final[bool] = not PUBLIC_ONLY and callable(getattr(App, "_handle_exception", None))
"""The sampler's frames are calls on the app's event loop, not messages (``crash``)."""


class _NoCache:
    """A cache that keeps nothing: every lookup misses, every store is dropped."""

    __slots__ = ()

    def get(self, key: object, default: None = None) -> None:
        return None

    def __setitem__(self, key: object, value: object) -> None:
        pass


_NO_CACHE = _NoCache()
BARE_ROWS: Final = FAST_LINES and frozenset(Strip.__slots__) == STRIP_SLOTS


class BareRow(Strip):
    """A row LineView hands the compositor, which asks a panel for every row each tick (a
    hundred) and keeps each for one frame. A Strip makes seven caches when it is made,
    for crops and styles it may be asked for again; a row is asked once, so here they are
    one shared cache that keeps nothing (``BARE_ROWS``). And Strip.divide keeps its answer
    in the strip's own cache, for the usual single cut at its end ``[self]``: a reference
    cycle; here that answer is given without keeping it, so reference counting frees the
    row as soon as the frame is written."""

    __slots__ = ()

    if BARE_ROWS:

        def __init__(self, segments: list[Segment], cell_length: int) -> None:
            self._segments = segments
            self._cell_length = cell_length
            self._render_cache = self._link_ids = self._cell_count = None
            self._divide_cache = self._crop_cache = self._style_cache = _NO_CACHE  # type: ignore[assignment]
            self._filter_cache = self._line_length_cache = _NO_CACHE  # type: ignore[assignment]
            self._crop_extend_cache = self._offsets_cache = _NO_CACHE  # type: ignore[assignment]

    def divide(self, cuts: Iterable[int]) -> Sequence[Strip]:
        cuts = list(cuts)
        if cuts == [self.cell_length]:
            return [self]
        return super().divide(cuts)


class RowSource(Protocol):
    """A widget that can hand over some of its rows as finished strips (``write_rows``)."""

    def rows_now(self, regions: Sequence[Region]) -> list[tuple[int, Strip]] | None:
        """The widget's rows under ``regions`` (content coordinates, as marked dirty) as
        (row of the widget, the whole row); None where it cannot say."""


Marks = list[tuple[Widget, Sequence[Region]]]


class FastPaint:
    """The fast paths of painting, in one object the app holds and hands its panels: a
    panel's changed rows go to its screen directly (``mark``), a frame's rows are painted
    as its handler ends (``painted_at_end``), where nothing covers them written to the
    terminal as they are (``write_rows``), and the sampler's frames arrive as calls on the
    app's loop (``frames``, ``crash``). ``enabled=False`` (``GPUTUI_TEXTUAL_PUBLIC=1``) takes
    Textual's public path for each: ``mark`` answers False and the caller refreshes the
    widget, and nothing is held or written here."""

    def __init__(self, enabled: bool = not PUBLIC_ONLY) -> None:
        #: changed rows go to the screen directly and are painted at once
        self.paint = enabled and FAST_PAINT
        #: a tick's changed rows go to the terminal without the compositor
        self.write = enabled and FAST_WRITE
        #: the sampler's frames are calls on the app's event loop, not messages
        self.frames = enabled and FAST_FRAMES
        # the rows marked inside ``painted_at_end``, by screen, innermost last
        self._held: list[dict[Screen[object], Marks]] = []
        #: the cells of the rows written here, as the terminal shows them
        self.terminal = TerminalRows()
        self._watched: App[Any] | None = None  # the app whose other output is followed

    def mark(self, widget: Widget, regions: Sequence[Region]) -> bool:
        """Mark ``regions`` of ``widget`` for repainting on its screen, as the screen's own
        handler of the widget's update message would (``Screen._on_update``); False where
        that cannot be done here, and the caller refreshes the widget the public way."""
        if not self.paint or not widget.is_mounted or not widget.display:
            return False
        try:
            screen = widget.screen
        except NoScreen:
            return False
        dirty = getattr(screen, "_dirty_widgets", None)
        compositor = getattr(screen, "_compositor", None)
        if not isinstance(dirty, set) or compositor is None or screen not in compositor:
            return False
        if self._held:
            self._held[-1].setdefault(screen, []).append((widget, regions))  # at the end
            return True
        _set_dirty(screen, widget, regions)
        screen.check_idle()  # painted on the screen's timer
        return True

    @contextmanager
    def painted_at_end(self) -> Iterator[None]:
        """Rows marked dirty inside are painted as it ends, where their screen is the
        current one, without the prompt that would wake the screen to paint them on its
        timer: written as they are where nothing covers them (``write_rows``), else by the
        compositor. A screen it cannot paint now (inside a batch of updates, or not shown)
        is prompted then, as before."""
        held: dict[Screen[object], Marks] = {}
        self._held.append(held)
        try:
            yield
        finally:
            self._held.pop()
            for screen, marks in held.items():
                if not self.write_rows(screen, marks):
                    for widget, regions in marks:
                        _set_dirty(screen, widget, regions)
                self.paint_now(screen)
                if getattr(screen, "_dirty_widgets", None):
                    screen.check_idle()

    def write_rows(self, screen: Screen[object], marks: Marks) -> bool:
        """Write the marked rows to the terminal now, each where its widget is on the
        screen, as the cells that changed (``watch``); False (nothing written) where any of
        them cannot be written so (see the list above)."""
        app = screen.app
        compositor = getattr(screen, "_compositor", None)
        if (
            not self.write
            or compositor is None
            or not screen.is_current
            or getattr(app, "_batch_count", 1) != 0
            or getattr(app, "is_inline", True)
            or any(
                getattr(screen, name, True)
                for name in ("_layout_required", "_scroll_required", "_repaint_required")
            )
            or getattr(compositor, "_full_map_invalidated", True)
            or compositor.size != screen.size
        ):
            return False
        visible: dict[Widget, tuple[Region, Region]] = compositor.visible_widgets
        rows: list[tuple[int, int, Strip]] = []  # (screen line, column, row)
        for widget, regions in marks:
            at = _in_front(visible, widget)
            found = widget.rows_now(regions) if at is not None and _rows_source(widget) else None
            if at is None or found is None:
                return False
            rows += [(at.y + y, at.x, strip) for y, strip in found if 0 <= y < at.height]
        if self._watched is not app:
            self.terminal.forget()  # what else draws on this app's screen goes unseen
        text = self._cells(screen, rows)
        if text:
            app._display(screen, Written(text))
        return True

    def _cells(self, screen: Screen[object], rows: list[tuple[int, int, Strip]]) -> str:
        """The output that brings the terminal to ``rows`` (screen line, column, row), the
        app's own or the compositor's: the cells that changed."""
        console = screen.app.console
        system = COLOR_SYSTEMS.get(console.color_system or "")
        width = screen.size.width
        for y, x, strip in rows:
            whole = partial(strip.render, console)
            self.terminal.write(y, x, strip, system, width, whole)
        text = self.terminal.take()
        move = park(screen.app) if text else ""
        if move:
            self.terminal.moved()  # the next take starts from a place it does not know
        return text + move

    def forget(self) -> None:
        """The terminal was away (a suspend) or resized: the next rows are written whole."""
        self.terminal.forget()

    def watch(self, app: App[Any]) -> None:
        """Follow what else ``app`` writes to its terminal (its compositor's updates): from
        then on a row written here is sent as the cells that changed since it was last
        written, until anything else draws; before, each row is written whole."""
        if not self.write or self._watched is app:
            return
        display = app._display
        terminal = self.terminal

        def watched(screen: Screen[object], renderable: RenderableType | None) -> None:
            if renderable is None:  # a refresh that found nothing to draw draws nothing
                display(screen, renderable)
                return
            rows = None if app.is_inline else compositor_rows(renderable)
            if rows is not None:  # the compositor's rows as the cells that changed
                text = self._cells(screen, rows)
                if text:
                    display(screen, Written(text))
                return
            if not isinstance(renderable, Written):
                _drawn_over(terminal, renderable)
                reset = terminal.reset()  # Textual's output begins from a reset pen
                if reset and _UPDATE is not None and isinstance(renderable, _UPDATE):
                    renderable = Written(
                        reset + renderable.render_segments(app.console) + park(app)
                    )
                elif reset:
                    display(screen, Written(reset))
            display(screen, renderable)

        app._display = watched  # type: ignore[method-assign]
        self._watched = app

    def paint_now(self, screen: Screen[object]) -> None:
        """Paint what is marked dirty on ``screen`` now, as its update timer would next."""
        if not self.paint or not getattr(screen, "_dirty_widgets", None):
            return
        if screen.is_current and not getattr(screen.app, "_batch_count", 1):
            screen._on_timer_update()

    @staticmethod
    def crash(app: App[Any], error: Exception) -> None:
        """End ``app`` over ``error`` raised in a call its loop made for it, as Textual ends
        it over an error in a message handler: the traceback shown, the return code 1."""
        app._handle_exception(error)


def compositor_rows(update: object) -> list[tuple[int, int, Strip]] | None:
    """What a compositor ``update`` draws, as (screen line, column, row) in the order it
    draws them: a partial update's pieces of lines (each chop from its column to the end of
    its span, as Textual writes it), a layout update's lines; None for anything else."""
    if _CHOPS is not None and isinstance(update, _CHOPS):
        rows: list[tuple[int, int, Strip]] = []
        for y, x1, x2 in update.spans:
            for end, (x, strip) in zip(update.chop_ends[y], update.chops[y].items(), strict=False):
                if strip is None or x > x2 or end <= x1:
                    continue
                piece = strip if end <= x2 else strip.crop(0, min(end, x2) - x)
                if piece.cell_length:
                    rows.append((y, x, piece))
        return rows
    if _LAYOUT is not None and isinstance(update, _LAYOUT):
        x = update.region.x
        return [(y, x, Strip.join(line)) for y, line in enumerate(update.strips, update.region.y)]
    return None


def _drawn_over(terminal: TerminalRows, update: object) -> None:
    """What the compositor's ``update`` draws over, forgotten: the lines and columns of a
    partial update (its ``spans``), the region of a layout's, else everything."""
    spans = getattr(update, "spans", None)
    region = getattr(update, "region", None)
    if isinstance(spans, list):
        for y, start, end in spans:
            terminal.drawn_over(y, start, end)
    elif isinstance(region, Region):
        for y in region.line_range:
            terminal.drawn_over(y, region.x, region.right)
    else:
        terminal.forget()


def _set_dirty(screen: Screen[object], widget: Widget, regions: Sequence[Region]) -> None:
    widget._set_dirty(*regions)
    screen._dirty_widgets.add(widget)


def _rows_source(widget: Widget) -> TypeGuard[RowSource]:
    return callable(getattr(widget, "rows_now", None))


def _in_front(visible: Mapping[Widget, tuple[Region, Region]], widget: Widget) -> Region | None:
    """The widget's region on the screen where all of it is shown and nothing is in front
    of any of it (``visible`` is in the compositor's order, front first); else None."""
    found = visible.get(widget)
    if found is None or not found[1].contains_region(found[0]):
        return None
    region = found[0]
    for other, (where, clip) in visible.items():
        if other is widget:
            return region
        if where.intersection(clip).overlaps(region):
            return None
    return None


@runtime_checkable
class PaintsFast(Protocol):
    """An app whose panels paint through its ``FastPaint`` (gputui's)."""

    fast_paint: FastPaint


class SignalsToHooks:
    """Put before ``LinuxDriver`` in a driver's bases: Textual's Ctrl+Z and fg handlers
    (the private ``_sigtstp_application`` and ``_sigcont_application`` it installs for
    SIGTSTP and SIGCONT) call ``stop_signalled`` and ``continue_signalled``, which a
    driver overrides; ``textual_stop`` and ``textual_continue`` are Textual's own."""

    def _sigtstp_application(self, *_: Any) -> None:
        self.stop_signalled()

    def _sigcont_application(self, *_: Any) -> None:
        self.continue_signalled()

    def stop_signalled(self) -> None:
        self.textual_stop()

    def continue_signalled(self) -> None:
        self.textual_continue()

    def textual_stop(self) -> None:
        """Textual's suspend (the driver's next base's handler)."""
        super()._sigtstp_application()  # type: ignore[misc]

    def textual_continue(self) -> None:
        """Textual's resume."""
        super()._sigcont_application()  # type: ignore[misc]


def can_suspend(app: App[Any]) -> bool:
    """Whether the app's driver can suspend the process (Ctrl+Z): Textual asks its driver,
    which it keeps private, the same before it suspends."""
    driver = app._driver
    return driver is not None and driver.can_suspend


def paint_stages() -> list[tuple[type[Any], str]]:
    """Textual's paint stages (class, method) as they run, timed by app_stages.py."""
    stages: list[tuple[type[Any], str]] = [(Screen, "_compositor_refresh"), (App, "_display")]
    with suppress(ImportError):  # a Textual without this module: that stage goes untimed
        from textual._compositor import Compositor

        stages.insert(1, (Compositor, "render_update"))
    return stages


def load_xterm_parser() -> type[_XTermParser] | None:
    """Textual's key parser class, or None where this Textual has no such module."""
    try:
        from textual._xterm_parser import XTermParser
    except ImportError:
        return None
    return XTermParser


XTermParser: Final = None if PUBLIC_ONLY else load_xterm_parser()
"""The parser the quiet driver uses; None with the switch on or where it is missing."""


def escape_pending(parser: object) -> bool:
    """Whether the parser waits for the rest of an escape sequence (and must be ticked).

    A parser without ``_timeout_time`` counts as always waiting: the driver then polls as
    often as Textual's own does."""
    return getattr(parser, "_timeout_time", 0.0) is not None


def driver_debug(driver: Driver) -> bool:
    """The debug flag Textual gives its drivers (its parser then logs keys to keys.log)."""
    return bool(getattr(driver, "_debug", False))


def quiet_input_supported() -> bool:
    """Whether the quiet driver can run on this Textual: switch off and every name present."""
    if XTermParser is None:
        return False
    from textual.drivers.linux_driver import LinuxDriver

    probe = XTermParser()
    return (
        hasattr(probe, "_timeout_time")
        and callable(getattr(probe, "tick", None))
        and callable(getattr(probe, "feed", None))
        and callable(getattr(LinuxDriver, "run_input_thread", None))
    )


def blank(cls: type[W]) -> type[W]:
    """Class decorator: the widget draws only its background (``BLANK``), switch permitting."""
    if not PUBLIC_ONLY:
        cls.BLANK = True
    return cls


def spare_unicode_names() -> None:
    """Textual's key names answered from gputui's table (keynames.py), switch permitting."""
    if PUBLIC_ONLY:
        return
    import textual.keys

    from gputui.ui.keynames import KeyNames

    current = getattr(textual.keys, "unicodedata", None)
    if isinstance(current, ModuleType):
        setattr(textual.keys, "unicodedata", KeyNames(current))  # noqa: B010


spare_unicode_names()
