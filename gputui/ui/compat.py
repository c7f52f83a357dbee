"""Every private or undocumented Textual name gputui leans on, in one place, with a way out.

gputui takes a handful of shortcuts through Textual's internals to stay cheap while it idles and
redraws a few panels once a second. Each has a public fallback, and setting
``GPUTUI_TEXTUAL_PUBLIC=1`` takes every fallback at once (read once, when this module is
imported): the way out if a Textual release renames one of these. tests/test_textual_compat.py
checks that each name still exists and behaves as assumed here.

Private name (who uses it): why / public fallback
- ``textual._xterm_parser.XTermParser`` (driver.py): the quiet driver parses keys exactly
  as Textual does / Textual's own driver (``App.get_driver_class``).
- ``Parser.feed`` / ``Parser.tick`` of that class (driver.py): bytes in, key events out;
  tick gives up a lone Escape / Textual's own driver.
- ``Parser._timeout_time`` (driver.py): set while the parser waits for the rest of an
  escape sequence, the only time the driver needs to poll / Textual's own driver.
- ``LinuxDriver.run_input_thread``, ``.exit_event``, ``Driver._debug`` (driver.py): the
  input loop replaced, the event Textual sets to stop it, the debug flag for the parser /
  Textual's own driver.
- ``LinuxDriver._sigtstp_application`` / ``._sigcont_application`` overrides (driver.py):
  the handlers Textual installs for Ctrl+Z and fg suspend and resume inside the signal
  handler, which can deadlock on the writer's lock mid-frame; the quiet driver runs them
  on the event loop / Textual's own driver (and its handlers).
- ``Widget.render_lines`` override (lines.py): the compositor's way into a widget; LineView
  answers content rows from its own row cache / the Line API: ``render_line`` through
  Textual's styles cache.
- ``Strip``'s slots (lines.py, ``BARE_ROWS``): the rows LineView hands the compositor are
  made without Strip's constructor, which makes seven caches a row is never asked again;
  used only while the slots are the ones it knows / Strip's own constructor.
- ``DOMNode.notify_style_update`` override (lines.py): the hook Textual calls when CSS
  changes, where LineView drops the styles it resolved / ``rich_style`` read for every line.
- ``textual.keys.unicodedata`` (here, ``spare_unicode_names``): Textual looks key names up
  in Unicode's name database, paging in ~0.8 MB for a few dozen names; gputui hands it a
  stand-in that answers those from a table (keynames.py) and asks the real module for
  anything else / the real module.
- ``Widget._set_dirty``, ``Screen._dirty_widgets``, ``Screen._compositor``,
  ``Screen._on_timer_update``, ``App._batch_count`` (lines.py and app.py, through
  ``mark_dirty`` and ``paint_now``): a panel hands its changed rows to its screen, and the
  app has the screen paint them in the handler that changed them, where ``Widget.refresh``
  goes through four messages (the widget's prompt and idle, its update to the screen, the
  screen's idle) and the screen's update timer, a loop turn later: a tenth of gputui's
  steady CPU / ``Widget.refresh``, and Textual paints on its timer.
- ``App._handle_exception`` (app.py, through ``crash``): the sampler's frames reach the app
  as a call on its event loop (``loop.call_soon_threadsafe``) instead of a message: a message
  costs the app's queue, its dispatch and an idle pass, and the changed rows' prompt to the
  screen (held back while the frame's handler runs: ``painted_at_end``) another message and
  idle pass, a twentieth of gputui's steady CPU; an error in that call ends the app with its
  traceback as an error in a handler does / the frame posted as a message (``FrameReady``).
- ``Widget.BLANK`` (containers.py, through ``blank``): the screen, covered by the panels,
  answers "only my background" at once / ordinary rendering of its background (also what
  Textual before 7.1.0, which has no BLANK, does).

benchmarks/app_stages.py also times a few private methods (the compositor's update, the
app's write); that is measurement only, and a stage it cannot find is left out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, TypeVar

from textual.app import App
from textual.dom import NoScreen
from textual.driver import Driver
from textual.geometry import Region
from textual.screen import Screen
from textual.widget import Widget

if TYPE_CHECKING:
    from textual._xterm_parser import XTermParser as _XTermParser

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

FAST_FRAMES: Final[bool] = not PUBLIC_ONLY and callable(getattr(App, "_handle_exception", None))
"""The sampler's frames are calls on the app's event loop, not messages (``crash``)."""


def mark_dirty(widget: Widget, regions: Sequence[Region]) -> bool:
    """Mark ``regions`` of ``widget`` for repainting on its screen, as the screen's own
    handler of the widget's update message would (``Screen._on_update``); False where that
    cannot be done here, and the caller refreshes the widget the public way."""
    if not FAST_PAINT or not widget.is_mounted or not widget.display:
        return False
    try:
        screen = widget.screen
    except NoScreen:
        return False
    dirty = getattr(screen, "_dirty_widgets", None)
    compositor = getattr(screen, "_compositor", None)
    if not isinstance(dirty, set) or compositor is None or screen not in compositor:
        return False
    widget._set_dirty(*regions)
    dirty.add(widget)
    if _held:
        _held[-1].add(screen)  # painted as the handler ends
    else:
        screen.check_idle()  # painted on the screen's timer
    return True


# The screens rows were marked on inside ``painted_at_end``, innermost last.
_held: list[set[Screen[object]]] = []


@contextmanager
def painted_at_end() -> Iterator[None]:
    """Rows marked dirty inside are painted as it ends, where their screen is the current
    one, without the prompt that would wake the screen to paint them on its timer; a
    screen it cannot paint now (inside a batch of updates, or not shown) is prompted
    then, as before."""
    held: set[Screen[object]] = set()
    _held.append(held)
    try:
        yield
    finally:
        _held.pop()
        for screen in held:
            paint_now(screen)
            if getattr(screen, "_dirty_widgets", None):
                screen.check_idle()


def paint_now(screen: Screen[object]) -> None:
    """Paint what is marked dirty on ``screen`` now, as its update timer would next."""
    if not FAST_PAINT or not getattr(screen, "_dirty_widgets", None):
        return
    if screen.is_current and not getattr(screen.app, "_batch_count", 1):
        screen._on_timer_update()


def crash(app: App[Any], error: Exception) -> None:
    """End ``app`` over ``error`` raised in a call its loop made for it, as Textual ends it
    over an error in a message handler: the traceback shown, the return code 1."""
    app._handle_exception(error)


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
