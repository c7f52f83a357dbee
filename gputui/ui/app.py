"""The live monitor: frames, timers, the header and the sampler's keys. What a panel shows,
how the keys move through GPUs and findings, and where the panels go are decided in
``gputui.view``; this app asks for the contents with the size it is being given and
``Panels`` paints them. It is built from its parts (``AppParts``); the panels' keys are the
main screen's (``main_screen.MainScreen``), which asks the view's key groups for new
choices or an effect, and the app carries them out (``apply``): it is the screens'
``Shell``.

Cost is designed in: a handful of LineView panels created once, only the visible ones
redrawn, within them only the rows that changed painted, and only their lines repainted.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import signal
import socket
import sys
from collections.abc import Iterable
from typing import Any, ClassVar

from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.driver import Driver
from textual.geometry import Size
from textual.notifications import SeverityLevel
from textual.screen import Screen

from gputui.core.config import MAX_INTERVAL_S, MIN_INTERVAL_S
from gputui.core.model import Frame
from gputui.ui import compat, keys
from gputui.ui.driver import job_control, quiet_driver
from gputui.ui.footer import KeysLine
from gputui.ui.lines import LineView
from gputui.ui.main_screen import MainScreen
from gputui.ui.messages import FrameReady, SampleFailed
from gputui.ui.modals import open_page, overlays
from gputui.ui.paint import TEXTUAL_THEMES, Palette, ascii_terminal, theme_palette, to_ascii
from gputui.ui.panels import Panels
from gputui.ui.parts import AppParts
from gputui.view.choices import Choices
from gputui.view.cluster import shown_nodes
from gputui.view.effects import Effect, Notify, PressKey
from gputui.view.header import Replaying, header_row, header_state
from gputui.view.layout import Layout
from gputui.view.replay_keys import ReplayKeys
from gputui.view.screen import ScreenView

INTERVALS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
WATCHDOG_S = 2.5
STARTUP_SWITCH_S = 0.0005  # the GIL's switch interval until the first paint


class GpuTuiApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "gputui"
    ENABLE_COMMAND_PALETTE = True
    #: the keys that work over every page too; the rest are the main screen's
    BINDINGS: ClassVar[list[BindingType]] = list(keys.APP_BINDINGS)

    def __init__(self, parts: AppParts) -> None:
        super().__init__()
        self.monitor = parts.monitor
        self.sampler = parts.sampler
        self.replay = parts.replay
        self.snapshot_dir = parts.snapshot_dir
        self.keep_secrets = parts.keep_secrets
        self.pending_notices = list(parts.notices)
        self._parts = parts
        self.theme = TEXTUAL_THEMES[parts.theme]
        self.ascii = ascii_terminal() if parts.ascii is None else parts.ascii
        self.process_access = parts.process_access
        self.choices = Choices(
            selected=self.monitor.devices[0].index if self.monitor.devices else 0,
            mask=not parts.keep_secrets,
        )
        self.paused = False
        self.panicked = False
        self.palette = Palette(ascii=self.ascii)
        self.sample_error: str | None = None
        self.view = ScreenView()
        self.panels = Panels()
        #: the fast paths of painting (compat.py), or Textual's public ones where switched off
        self.fast_paint = compat.FastPaint()
        self.replay_keys = (
            ReplayKeys(self.replay, self.apply, self.redraw, self.toggle_pause, lambda: self.paused)
            if self.replay is not None
            else None
        )
        self.main = MainScreen(
            self,
            snapshot_dir=parts.snapshot_dir,
            keep_secrets=parts.keep_secrets,
            replay_keys=self.replay_keys,
        )
        self._drawable = False
        self._switch_interval = sys.getswitchinterval()  # Python's, restored after the start
        # where the sampler's frames are handed (the app's loop, and its context: Textual
        # finds the active app in a context variable), once it is running
        self._frames_to: tuple[asyncio.AbstractEventLoop, contextvars.Context] | None = None
        self._hostname = socket.gethostname()  # the header's, for a local source
        if self.sampler is not None:
            self.sampler.connect(
                on_frame=self._frame_from_sampler,
                on_error=lambda exc: self.post_message(
                    SampleFailed(f"{type(exc).__name__}: {exc}")
                ),
            )

    @property
    def selected(self) -> int:
        return self.choices.selected

    @property
    def finding_index(self) -> int:
        return self.choices.finding

    @property
    def replaying(self) -> bool:
        return self.replay is not None

    @property
    def laid_out(self) -> Layout | None:
        return self.panels.laid_out

    def get_default_screen(self) -> Screen[int]:
        return self.main

    def get_driver_class(self) -> type[Driver]:
        return quiet_driver(super().get_driver_class())

    def get_key_display(self, binding: Binding) -> str:
        shown = super().get_key_display(binding)
        return to_ascii(shown) if self.ascii else shown

    def compose(self) -> ComposeResult:
        yield LineView(id="header")
        yield from self.panels.compose()
        yield KeysLine(self, id="footer")

    def on_mount(self) -> None:
        self._drawable = True
        self.fast_paint.watch(self)
        if self.fast_paint.frames:
            self._frames_to = (asyncio.get_running_loop(), contextvars.copy_context())
        self.screen.set_class(self.ascii, "-ascii")
        self.palette = theme_palette(self.get_css_variables(), self.ascii)
        self.theme_changed_signal.subscribe(self, lambda _theme: self._on_theme())
        self.app_resume_signal.subscribe(self, lambda _app: self._repaint_all())
        if self._parts.start_at is not None and self.replay_keys is not None:
            self.replay_keys.seek_to(self._parts.start_at)
        self.redraw()
        for notice in self.pending_notices:
            self.notify(notice, title="Replay", severity="warning", timeout=8)
        # A watchdog, not a clock: frames redraw the header themselves; this only notices
        # when they stop coming (a hung driver call). Slow, because every tick costs.
        self.set_interval(WATCHDOG_S, self._tick_header)
        if self.sampler is not None:
            # after the first paint: the first read (each process's environment and
            # libraries, the job's settings) would hold the GIL while the screen is drawn
            self.call_after_refresh(self.sampler.start)
        if self._parts.owns_process:
            # Textual's writer thread puts the first screen on the terminal, and waits for
            # the GIL while this thread goes on drawing: for Python's switch interval (5 ms)
            # unless this thread gives it up sooner. Until the first paint it is 0.5 ms.
            sys.setswitchinterval(min(self._switch_interval, STARTUP_SWITCH_S))
            self.call_after_refresh(self._after_first_paint)
        # SIGTERM (a scheduler), SIGHUP (SSH dropped), SIGINT (kill -INT; ctrl+c is a key in
        # the app): end as q does. Left to Python, SIGINT raised KeyboardInterrupt wherever
        # the main thread was, and one landing inside Textual's startup could leave it running.
        if self._parts.owns_process:
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(signum, self.exit, 128 + signum)

    def _repaint_all(self) -> None:
        """Back from Ctrl+Z (fg): the terminal's screen is blank, and the panels only ever
        repaint the lines that changed: every line of every panel is painted again."""
        self.fast_paint.forget()
        for view in self.query(LineView):
            view.refresh()
        self.screen.refresh(layout=True)
        self.redraw()
        self.query_one(KeysLine).draw()

    def on_unmount(self) -> None:
        self._drawable = False

    def _after_first_paint(self) -> None:
        """The start's own settings undone: the GIL's switch interval back to Python's,
        and the collector on, over a frozen startup heap."""
        sys.setswitchinterval(self._switch_interval)
        # Textual's startup leaves a few hundred thousand objects that live as long as the
        # app. Left to the collector, every full collection walks them all (~60 ms, about
        # once a minute); frozen, the collector looks only at what ticks allocate.
        gc.collect()
        gc.freeze()
        # A tick's rows, cells and segments go by reference counting; what Textual's
        # messages and timers leave in cycles waits for the young collection. At 1,000 it
        # runs about every other tick over the young objects only (the rest is frozen); at
        # 20,000 it kept ~1.4 MB of such garbage waiting for no CPU saved (8 GPUs, 1 s).
        gc.set_threshold(1_000, 10, 10)
        gc.enable()  # the CLI starts an app with it off (gputui.cli._start_without_collector)

    def _on_theme(self) -> None:
        self.palette = theme_palette(self.get_css_variables(), self.ascii)
        self.redraw()
        self.query_one(KeysLine).draw()

    def on_resize(self, event: events.Resize) -> None:
        # A resized terminal may have cut, moved or blanked what it showed (each emulator
        # its own way): the rows that follow are written whole, as Textual repaints.
        self.fast_paint.forget()
        # before Textual's own handler: the app's size is still the old one
        self.redraw(event.size)

    # -- frames -----------------------------------------------------------------------
    def _frame_from_sampler(self, frame: Frame) -> None:
        """On the sampler's thread: the frame to the app's loop (``FastPaint.frames``), else
        as a message."""
        to = self._frames_to
        if to is None:
            self.post_message(FrameReady(frame))
            return
        with contextlib.suppress(RuntimeError):  # the loop closed: the app has ended
            to[0].call_soon_threadsafe(self._take_frame, frame, context=to[1])

    def _take_frame(self, frame: Frame) -> None:
        if not self.is_running:
            return  # a read that was under way as the app closed
        try:
            self._show_frame(frame)
        except Exception as error:
            self.fast_paint.crash(self, error)

    def on_frame_ready(self, message: FrameReady) -> None:
        self._show_frame(message.frame)

    def _show_frame(self, frame: Frame) -> None:
        self.monitor.ingest(frame)
        self.sample_error = None
        # A read that was hung while the app closed can still arrive: draw nothing then.
        # The tick's rows are painted as the handler ends, not on the screen's timer a
        # loop turn later (the start and the keys keep Textual's own pace).
        with contextlib.suppress(NoMatches), self.fast_paint.painted_at_end():
            self.redraw()

    def on_sample_failed(self, message: SampleFailed) -> None:
        if self.replay_keys is not None and self.replay_keys.replay.at_end:
            self.replay_keys.ended()
            return
        self.sample_error = message.error
        with contextlib.suppress(NoMatches):
            self._tick_header()

    def _interval(self) -> float:
        """How often frames come: the monitor's interval (a replay: its pace)."""
        return self.replay.pace_s if self.replay is not None else self.monitor.interval_s

    def _tick_header(self) -> None:
        if not self._drawable or self.sampler is None or self.paused:
            return
        age = self.sampler.age()
        if age is None or age >= 2 * self._interval():
            self._draw_header()  # frames stopped coming: say how old the data is

    # -- drawing ----------------------------------------------------------------------
    def _draw_header(self, width: int | None = None) -> None:
        replay = self.replay
        state = header_state(
            self.monitor,
            hostname=self._hostname,
            interval_s=self._interval(),
            age_s=self.sampler.age() if self.sampler is not None else None,
            paused=self.paused,
            replay=None
            if replay is None
            else Replaying(replay.speed, replay.interval_s, replay.start_time, replay.end_time),
            error=self.sample_error,
            readonly=self._parts.readonly,
        )
        width = self.size.width if width is None else width
        self.query_one("#header", LineView).set_rows([header_row(state)], width, self.palette)

    def redraw(self, size: Size | None = None) -> None:
        """Show the monitor's state at ``size`` (a resize's), else the app's size."""
        if not self._drawable:
            return
        self.monitor.shown_nodes = shown_nodes(self.monitor.devices, self.selected)
        size = size or self.size
        self._draw_header(size.width)
        over = self.screen_stack[1:]
        if over:
            hiding, live = overlays()
            for screen in over:
                if isinstance(screen, live):
                    screen.refresh_rows()
            if any(isinstance(screen, hiding + live) for screen in over):
                return  # hidden panels do no work; they catch up when the screen closes
        contents = self.view.contents(self.monitor, self.choices, self._interval(), *size)
        self.panels.show(contents, self.palette, self.ascii)
        if self.main.update_paging():
            self.refresh_bindings()  # PgUp PgDn changed lists: the footer says so

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Toasts carry file names, paths and error text: never parsed as markup here. Over
        a dialog the message goes on the dialog's own border, never over its text."""
        if len(self.screen_stack) > 1:  # a page's module loads with the first of them
            from gputui.ui.screens import PageScreen

            screen = self.screen
            if isinstance(screen, PageScreen):
                screen.say(f"{title}: {message}" if title else message, timeout or 5.0)
                return
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def push_screen(self, *args: Any, **kwargs: Any) -> Any:
        """A screen over the panels opens clear: no toast left over it."""
        self.clear_notifications()
        return super().push_screen(*args, **kwargs)

    def panic(self, *renderables: Any) -> None:
        """Textual ends the app this way when its input thread dies; it leaves the return
        code at 0. A crash never exits 0: ``panicked`` tells the CLI."""
        self.panicked = True
        super().panic(*renderables)

    def choose(self, choices: Choices) -> None:
        """Take the user's new choices and show them."""
        self.choices = choices
        self.redraw()

    def apply(self, effect: Effect) -> None:
        """Carry out what a key asked for (``view.effects``)."""
        if isinstance(effect, Choices):
            self.choose(effect)
        elif isinstance(effect, Notify):
            title, tone, timeout = effect.title, effect.tone, effect.timeout
            self.notify(effect.text, title=title, severity=tone, timeout=timeout)
        elif isinstance(effect, PressKey):
            self.simulate_key(effect.key)
        else:
            open_page(self, effect)

    # -- the sampler's keys ------------------------------------------------------------
    def toggle_pause(self) -> None:
        self.paused = not self.paused
        if self.sampler is not None:
            self.sampler.set_paused(self.paused)
        self._draw_header()

    def change_interval(self, step: int) -> None:
        if self.sampler is None or self.replay is not None:
            return
        current = self.monitor.interval_s
        position = min(range(len(INTERVALS)), key=lambda i: abs(INTERVALS[i] - current))
        new = INTERVALS[max(0, min(len(INTERVALS) - 1, position + step))]
        new = max(MIN_INTERVAL_S, min(MAX_INTERVAL_S, new))
        if new == current:
            end = "slowest" if step > 0 else "fastest"
            self.notify(f"Already refreshing every {new:g} s, the {end} (+ slower, - faster)")
            return
        self.monitor.set_interval(new)  # the history keeps its length in seconds
        self.sampler.wake()
        way = "less often" if new > current else "more often"
        self.notify(f"Refreshing every {new:g} s now, {way} (+ slower, - faster)", timeout=3)
        self.redraw()

    def action_suspend_process(self) -> None:
        """Ctrl+Z (a key in raw mode): back to the shell, as Textual suspends; ``fg``
        resumes and repaints. Where no shell can resume it (no job control), it stays."""
        if not compat.can_suspend(self):
            return
        if not job_control():
            self.notify("Not suspended: no shell with job control here to resume it (fg)")
            return
        super().action_suspend_process()

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Of Textual's own palette commands, only those that work here (gputui's own
        are in ``commands``): the theme, and quit."""
        from gputui.ui.commands import system_commands

        return system_commands(self)
