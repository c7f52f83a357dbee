"""The live monitor: frames, timers, the header and the sampler's keys. What a panel shows,
how the keys move through GPUs and findings, and where the panels go are decided in
``gputui.view``; this shell asks for the contents with the size it is being given and
``Panels`` paints them. The other keys are groups of their own (navigation, modals,
snapshot_key, replay_keys) on the shared ``Shell``.

Cost is designed in: a handful of LineView panels created once, only the visible ones
redrawn, within them only the rows that changed painted, and only their lines repainted.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import socket
from pathlib import Path
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.driver import Driver
from textual.geometry import Size
from textual.screen import Screen

from gputui.config import MAX_INTERVAL_S, MIN_INTERVAL_S
from gputui.sampling.monitor import Monitor
from gputui.ui import keys
from gputui.ui.commands import GpuTuiCommands
from gputui.ui.containers import KeysFooter, _MainScreen
from gputui.ui.driver import quiet_driver
from gputui.ui.lines import LineView
from gputui.ui.messages import FrameReady, SampleFailed
from gputui.ui.modals import LIVE_SCREENS, MODALS, ModalKeys
from gputui.ui.navigation import NavigationKeys
from gputui.ui.paint import ASCII, theme_palette
from gputui.ui.panels import Panels
from gputui.ui.replay_keys import ReplayActions
from gputui.ui.snapshot_key import SnapshotKey
from gputui.view.choices import Choices
from gputui.view.header import Replaying, header_row, header_state
from gputui.view.screen import ScreenView

INTERVALS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
WATCHDOG_S = 2.5


class GpuTuiApp(NavigationKeys, ModalKeys, SnapshotKey, ReplayActions):
    CSS_PATH = "app.tcss"
    TITLE = "gputui"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = ModalKeys.COMMANDS | {GpuTuiCommands}
    BINDINGS: ClassVar[list[BindingType]] = list(keys.BINDINGS)

    def __init__(
        self, monitor: Monitor, *, snapshot_dir: Path = Path("."), ascii: bool | None = None
    ) -> None:
        super().__init__(monitor, snapshot_dir, ascii)
        self.sample_error: str | None = None
        self.view = ScreenView()
        self.panels = Panels()
        self._size: Size | None = None  # the size being laid out (a resize's, not the last)
        self._drawable = False
        self._hostname = socket.gethostname()  # the header's, for a local source
        # Set where the app owns the process (the CLI); tests run many apps in one.
        self.freeze_startup_heap = False
        self.handle_signals = False

    @property
    def selected(self) -> int:
        return self.choices.selected

    @property
    def finding_index(self) -> int:
        return self.choices.finding

    def get_default_screen(self) -> Screen[int]:
        return _MainScreen(id="_default")

    def get_driver_class(self) -> type[Driver]:
        return quiet_driver(super().get_driver_class())

    def get_key_display(self, binding: Binding) -> str:
        shown = super().get_key_display(binding)
        return shown.translate(ASCII) if self.ascii else shown

    def compose(self) -> ComposeResult:
        yield LineView(id="header")
        yield from self.panels.compose()
        yield KeysFooter()

    def on_mount(self) -> None:
        self._drawable = True
        self.screen.set_class(self.ascii, "-ascii")
        self.palette = theme_palette(self.get_css_variables(), self.ascii)
        self.theme_changed_signal.subscribe(self, lambda _theme: self._on_theme())
        if self.start_at is not None and self.replay is not None:
            self._replay_keys().seek_to(self.start_at)
        self.redraw()
        for notice in self.pending_notices:
            self.notify(notice, title="Replay", severity="warning", timeout=8)
        # A watchdog, not a clock: frames redraw the header themselves; this only notices
        # when they stop coming (a hung driver call). Slow, because every tick costs.
        self.set_interval(WATCHDOG_S, self._tick_header)
        if self.sampler is not None:
            self.sampler.start()
        if self.freeze_startup_heap:
            self.call_after_refresh(self._freeze_startup_heap)
        # SIGTERM (a scheduler), SIGHUP (SSH dropped), SIGINT (kill -INT; ctrl+c is a key in
        # the app): end as q does. Left to Python, SIGINT raised KeyboardInterrupt wherever
        # the main thread was, and one landing inside Textual's startup could leave it running.
        if self.handle_signals:
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(signum, self.exit, 128 + signum)

    def on_unmount(self) -> None:
        self._drawable = False

    def _freeze_startup_heap(self) -> None:
        # Textual's startup leaves a few hundred thousand objects that live as long as the
        # app. Left to the collector, every full collection walks them all (~60 ms, about
        # once a minute); frozen, the collector looks only at what ticks allocate.
        gc.collect()
        gc.freeze()
        # A tick allocates a few thousand short-lived objects (rows, cells, segments) and
        # frees them by reference counting; at the default threshold of 700 the collector
        # ran several times a tick to find no cycles among them.
        gc.set_threshold(20_000, 10, 10)

    def _on_theme(self) -> None:
        self.palette = theme_palette(self.get_css_variables(), self.ascii)
        self.redraw()

    def on_resize(self, event: events.Resize) -> None:
        self._size = event.size
        self.redraw()

    # -- frames -----------------------------------------------------------------------
    def on_frame_ready(self, message: FrameReady) -> None:
        self.monitor.ingest(message.frame)
        self.sample_error = None
        # A read that was hung while the app closed can still arrive: draw nothing then.
        with contextlib.suppress(NoMatches):
            self.redraw()

    def on_sample_failed(self, message: SampleFailed) -> None:
        if self.replay is not None and self.replay.at_end:
            self._replay_keys().ended()
            return
        self.sample_error = message.error
        with contextlib.suppress(NoMatches):
            self._tick_header()

    def _interval(self) -> float:
        """The sampling interval now (the sampler's, which +/- change)."""
        return self.monitor.config.interval_s if self.sampler is None else self.sampler.interval_s

    def _tick_header(self) -> None:
        if not self._drawable or self.sampler is None or self.paused:
            return
        age = self.sampler.age()
        if age is None or age >= 2 * self.sampler.interval_s:
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
        )
        width = (self._size or self.size).width if width is None else width
        self.query_one("#header", LineView).set_rows([header_row(state)], width, self.palette)

    def redraw(self) -> None:
        if not self._drawable:
            return
        size = self._size or self.size
        self._draw_header(size.width)
        if isinstance(self.screen, LIVE_SCREENS):
            self.screen.refresh_rows()
            return
        if isinstance(self.screen, MODALS):
            return  # hidden panels do no work; they catch up when the screen closes
        contents = self.view.contents(self.monitor, self.choices, self._interval(), *size)
        self.panels.show(contents, self.palette, self.ascii)

    # -- the keys the app keeps (the rest: navigation, modals, snapshot_key, replay_keys)
    def _choose(self, choices: Choices) -> None:
        self.choices = choices
        self.redraw()

    def action_pause(self) -> None:
        self.paused = not self.paused
        if self.sampler is not None:
            self.sampler.set_paused(self.paused)
        self._draw_header()

    def action_interval(self, step: int) -> None:
        if self.sampler is None:
            return
        current = self.sampler.interval_s
        position = min(range(len(INTERVALS)), key=lambda i: abs(INTERVALS[i] - current))
        new = INTERVALS[max(0, min(len(INTERVALS) - 1, position + step))]
        new = max(MIN_INTERVAL_S, min(MAX_INTERVAL_S, new))
        self.sampler.set_interval(new)
        self.notify(f"Refresh every {new:g} s", timeout=2)
        self.redraw()

    def action_quit(self) -> None:  # type: ignore[override]
        self.exit(0)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return keys.in_mode(action, replay=self.replay is not None)
