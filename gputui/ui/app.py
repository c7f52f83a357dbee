"""The live monitor: input, focus, timers and painting. What a panel shows, how the keys
move through GPUs and findings, and where the panels go are decided in ``gputui.view``;
this shell asks for the contents with the size it is being given and paints them.

Cost is designed in: a handful of LineView panels created once, only the visible ones
redrawn, within them only the rows that changed painted, and only their lines repainted.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import socket
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.driver import Driver
from textual.geometry import Size
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Footer

from gputui.config import MAX_INTERVAL_S, MIN_INTERVAL_S
from gputui.exporters.snapshot_files import save_snapshot
from gputui.sampling.monitor import Monitor
from gputui.sampling.replay import ReplayController
from gputui.sampling.sampler import Sampler
from gputui.ui import keys
from gputui.ui.commands import GpuTuiCommands
from gputui.ui.containers import _Column, _MainScreen, _Row
from gputui.ui.driver import quiet_driver
from gputui.ui.lines import LineView
from gputui.ui.messages import FrameReady, SampleFailed
from gputui.ui.paint import ASCII, Palette, ascii_terminal, border_title, theme_palette
from gputui.ui.processes import AllProcessesScreen
from gputui.ui.replay_keys import ReplayKeys
from gputui.ui.screens import ClusterScreen, FindingScreen, HelpScreen, RulesScreen
from gputui.ui.svg import local_fonts_only
from gputui.ui.topology import TopologyScreen
from gputui.view.cells import CardsKey, FindingKey, GpuKey, Panel
from gputui.view.choices import Choices
from gputui.view.header import Replaying, header_row, header_state
from gputui.view.layout import Layout
from gputui.view.screen import ScreenView

INTERVALS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
WATCHDOG_S = 2.5
_PANELS = ("gpus", "detail", "advisor", "procs", "overview")
_MODALS = HelpScreen | RulesScreen | FindingScreen | TopologyScreen


class GpuTuiApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "gputui"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = App.COMMANDS | {GpuTuiCommands}
    BINDINGS: ClassVar[list[BindingType]] = list(keys.BINDINGS)

    def __init__(
        self, monitor: Monitor, *, snapshot_dir: Path = Path("."), ascii: bool | None = None
    ) -> None:
        super().__init__()
        self.monitor = monitor
        self.sampler: Sampler | None = None
        self.replay: ReplayController | None = None
        self.start_at: float | None = None  # a replay's first moment to show
        self.pending_notices: list[str] = []
        self.snapshot_dir = snapshot_dir
        #: snapshots keep credentials in command lines (--keep-secrets); masked by default
        self.keep_secrets = False
        self.ascii = ascii_terminal() if ascii is None else ascii
        self.choices = Choices(selected=monitor.devices[0].index if monitor.devices else 0)
        self.paused = False
        self.sample_error: str | None = None
        self.palette = Palette(ascii=self.ascii)
        self.view = ScreenView()
        self._size: Size | None = None  # the size being laid out (a resize's, not the last)
        self._layout_done: Layout | None = None
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

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Toasts carry file names, paths and error text: never parsed as markup here."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def get_default_screen(self) -> Screen[int]:
        return _MainScreen(id="_default")

    def get_driver_class(self) -> type[Driver]:
        return quiet_driver(super().get_driver_class())

    def get_key_display(self, binding: Binding) -> str:
        shown = super().get_key_display(binding)
        return shown.translate(ASCII) if self.ascii else shown

    def compose(self) -> ComposeResult:
        yield LineView(id="header")
        yield LineView(id="host")
        with _Column(id="body"):
            with _Row(id="top"):
                yield LineView(id="gpus", classes="panel")
                yield LineView(id="detail", classes="panel")
            with _Row(id="bottom"):
                yield LineView(id="advisor", classes="panel")
                yield LineView(id="procs", classes="panel")
        yield LineView(id="overview", classes="panel")
        yield Footer()

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
        if self.handle_signals:  # SIGTERM (a scheduler), SIGHUP (SSH dropped): end as q does
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGHUP):
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

    def on_line_view_clicked(self, message: LineView.Clicked) -> None:
        """The mouse, for those who reach for it: a row's key says what it stands for."""
        key = message.key
        if isinstance(key, GpuKey):
            self._choose(self.choices.jump(self._indices(), key.index))
        elif isinstance(key, FindingKey):
            self._choose(replace(self.choices, finding=key.position))
        elif isinstance(key, CardsKey) and (gpu := key.gpu_at(message.x)) is not None:
            self._choose(self.choices.jump(self._indices(), gpu))

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
        """Draw the visible panels from the monitor's current state."""
        if not self._drawable:
            return
        size = self._size or self.size
        self._draw_header(size.width)
        if isinstance(self.screen, ClusterScreen | AllProcessesScreen):
            self.screen.refresh_rows()  # these follow the frames while shown
            return
        if isinstance(self.screen, _MODALS):
            return  # hidden panels do no work; they catch up when the screen closes
        contents = self.view.contents(self.monitor, self.choices, self._interval(), *size)
        self._apply_layout(contents.layout)
        if contents.host is not None:
            host = self.query_one("#host", LineView)
            host.set_rows([contents.host], size.width - 2, self.palette)
        for name in _PANELS:
            panel: Panel | None = getattr(contents, name)
            if panel is not None:
                view = self.query_one(f"#{name}", LineView)
                title = border_title(panel, self.ascii)
                if view.border_title != title:  # each set repaints the whole panel
                    view.border_title = title
                view.set_rows(panel.rows, getattr(contents.layout, name).inner[0], self.palette)

    def _apply_layout(self, layout: Layout) -> None:
        """Panel sizes from the layout; styles are set only when the layout changed."""
        if layout == self._layout_done:
            return
        self._layout_done = layout
        self.screen.set_class(self.choices.overview, "-overview")
        self.screen.set_class(layout.stacked, "-stacked")
        self.screen.set_class(layout.bottom_stacked, "-bottom-stacked")
        self.query_one("#host").display = layout.host
        for name in ("gpus", "detail", "advisor", "procs"):
            box = getattr(layout, name)
            styles = self.query_one(f"#{name}").styles
            styles.width, styles.height = box.width, box.height
        top, bottom = layout.gpus.height, layout.advisor.height
        self.query_one("#top").styles.height = top + layout.detail.height * layout.stacked
        self.query_one("#bottom").styles.height = (
            bottom + layout.procs.height * layout.bottom_stacked
        )

    # -- actions ----------------------------------------------------------------------
    def _indices(self) -> list[int]:
        return [d.index for d in self.monitor.devices]

    def _choose(self, choices: Choices) -> None:
        if choices.overview != self.choices.overview:
            self._layout_done = None
        self.choices = choices
        self.redraw()

    def action_gpu(self, step: int) -> None:
        self._choose(self.choices.step_gpu(self._indices(), step))

    def action_jump(self, index: int) -> None:
        self._choose(self.choices.jump(self._indices(), index))

    def action_overview(self) -> None:
        self._choose(self.choices.toggle_overview())

    def action_finding(self, step: int) -> None:
        self._choose(self.choices.step_finding(len(self.monitor.findings), step))

    def action_window(self) -> None:
        self._choose(self.choices.next_window())

    def action_sort(self) -> None:
        self._choose(self.choices.next_sort())

    def action_goto_finding(self) -> None:
        at = self.choices.finding_at(len(self.monitor.findings))
        gpu = self.monitor.findings[at].gpu if at is not None else None
        if gpu is not None:
            self._choose(self.choices.show_gpu(gpu))

    def action_open_finding(self) -> None:
        at = self.choices.finding_at(len(self.monitor.findings))
        if at is not None:
            self.push_screen(FindingScreen(self.monitor.findings[at]), self._after_modal)

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

    def action_help(self) -> None:
        self.push_screen(
            HelpScreen(keys.BINDINGS, replay=self.replay is not None), self._after_modal
        )

    def action_cluster(self) -> None:
        """Every node as a row, worst first (remote sources); Enter opens its GPUs."""
        p = self.palette
        colours = {"ok": p.ok, "warn": p.warn, "crit": p.crit, "dim": "dim"}
        self.push_screen(ClusterScreen(self.monitor, colours), self._after_cluster)

    def _after_cluster(self, gpu: int | None) -> None:
        self._choose(self.choices if gpu is None else self.choices.show_gpu(gpu))

    def action_all_processes(self) -> None:
        self.push_screen(AllProcessesScreen(self.monitor, self.palette), self._after_modal)

    def action_topology(self) -> None:
        self.push_screen(TopologyScreen(self.monitor), self._after_modal)

    def action_rules(self) -> None:
        self.push_screen(RulesScreen(self.monitor.advisor.thresholds), self._after_modal)

    def _after_modal(self, _result: object) -> None:
        self.redraw()

    def action_snapshot(self) -> None:
        try:
            base = save_snapshot(
                self.monitor, self.snapshot_dir, self._screenshot_for_a_file, self.keep_secrets
            )
        except OSError as exc:
            reason = exc.strerror or str(exc)
            self.notify(
                f"Snapshot not saved: cannot write to {self.snapshot_dir}: {reason}",
                title="Snapshot failed",
                severity="error",
                timeout=8,
            )
            return
        self.notify(f"{base}.json (+ .md, .svg)", title="Snapshot saved", timeout=6)

    def _screenshot_for_a_file(self) -> str:
        """The screen as SVG for a file that travels: credentials masked, local fonts only."""
        shown = self.choices
        self.choices = replace(shown, mask=not self.keep_secrets)
        try:
            self.redraw()
            svg = self.export_screenshot(title="gputui snapshot")
        finally:
            self.choices = shown
            self.redraw()
        return local_fonts_only(svg)

    def action_quit(self) -> None:  # type: ignore[override]
        self.exit(0)

    # -- replay -----------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return keys.in_mode(action, replay=self.replay is not None)

    def _replay_keys(self) -> ReplayKeys:
        assert self.replay is not None  # check_action offers these keys only in a replay
        return ReplayKeys(
            self.replay,
            lambda text, title: self.notify(text, title=title, timeout=3),
            self.redraw,
            self.action_pause,
            lambda: self.paused,
        )

    def action_step(self) -> None:
        self._replay_keys().step()

    def action_seek(self, seconds: float) -> None:
        self._replay_keys().seek_by(seconds)

    def action_speed(self, factor: float) -> None:
        self._replay_keys().speed(factor)
