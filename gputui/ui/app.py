"""The live monitor: input, focus, timers and painting. What a panel shows is decided in
``gputui.view`` (rows with keys, the layout); this shell asks for it and paints it.

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
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal
from textual.css.query import NoMatches
from textual.driver import Driver
from textual.geometry import Size
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Footer

from gputui.config import MAX_INTERVAL_S, MIN_INTERVAL_S
from gputui.exporters.snapshot_files import save_snapshot
from gputui.model import Frame
from gputui.names import NoteKind, Severity, SourceKind
from gputui.sampling.monitor import Monitor
from gputui.sampling.replay import ReplayController
from gputui.sampling.sampler import Sampler
from gputui.ui import compat, keys
from gputui.ui.commands import GpuTuiCommands
from gputui.ui.driver import quiet_driver
from gputui.ui.lines import LineView
from gputui.ui.paint import ASCII, Palette, ascii_terminal, border_title
from gputui.ui.processes import AllProcessesScreen
from gputui.ui.replay_keys import ReplayKeys, moment, position_text
from gputui.ui.screens import ClusterScreen, FindingScreen, HelpScreen, RulesScreen
from gputui.ui.svg import local_fonts_only
from gputui.ui.topology import TopologyScreen
from gputui.view.cells import CardsKey, FindingKey, GpuKey, Panel
from gputui.view.detail import WINDOWS_S
from gputui.view.header import HeaderState, header_row
from gputui.view.layout import Layout
from gputui.view.processes import SORT_KEYS
from gputui.view.screen import Choices, Contents, ScreenView

INTERVALS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
WATCHDOG_S = 2.5
_PANELS = ("gpus", "detail", "advisor", "procs", "overview")


class FrameReady(Message):
    """A new frame from the sampler thread."""

    def __init__(self, frame: Frame) -> None:
        super().__init__()
        self.frame = frame


class SampleFailed(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


# The screen and the containers are covered edge to edge by the panels: they have nothing
# of their own to show, yet the compositor asks each for every repainted row, and a plain
# widget answers through the styles cache. compat.blank sets Textual's BLANK, its way of
# saying "only my background", answered at once (unless GPUTUI_TEXTUAL_PUBLIC=1).
@compat.blank
class _MainScreen(Screen[int]):
    pass


@compat.blank
class _Column(Container):
    pass


@compat.blank
class _Row(Horizontal):
    pass


class GpuTuiApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "gputui"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = App.COMMANDS | {GpuTuiCommands}
    BINDINGS: ClassVar[list[BindingType]] = list(keys.BINDINGS)

    def __init__(
        self,
        monitor: Monitor,
        *,
        snapshot_dir: Path = Path("."),
        hostname: str | None = None,
        ascii: bool | None = None,
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
        self._masking = False  # the screen is being drawn for a file: credentials masked
        self._hostname = hostname
        self.ascii = ascii_terminal() if ascii is None else ascii
        self.selected = monitor.devices[0].index if monitor.devices else 0
        self.finding_index = 0
        self.overview = False
        self.paused = False
        self.window_index = 0
        self.sort_index = 0
        self.sample_error: str | None = None
        self.palette = Palette(ascii=self.ascii)
        self.view = ScreenView()
        self._size: Size | None = None  # the size being laid out (a resize's, not the last)
        self._layout_done: Layout | None = None
        self._drawable = False
        # Set where the app owns the process (the CLI); tests run many apps in one.
        self.freeze_startup_heap = False
        self.handle_signals = False

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

    # -- composition ------------------------------------------------------------------
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
        self._read_palette()
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
        if self.handle_signals:
            self._end_on_signals()

    def on_unmount(self) -> None:
        self._drawable = False

    def _end_on_signals(self) -> None:
        """SIGTERM (a kill, a scheduler) and SIGHUP (the SSH session dropped) end the app
        as ``q`` does: the terminal gets its screen, cursor and mouse back."""
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, self.exit, 128 + signum)

    def _freeze_startup_heap(self) -> None:
        # Textual's startup leaves a few hundred thousand objects that live as long as the
        # app. Left to the collector, every full collection walks them all (~60 ms, about
        # once a minute); frozen, the collector looks only at what ticks allocate.
        gc.collect()
        gc.freeze()

    def _read_palette(self) -> None:
        v = self.get_css_variables()
        self.palette = Palette(
            ok=v.get("success", "green"),
            warn=v.get("warning", "yellow"),
            crit=v.get("error", "red"),
            accent=v.get("primary", "blue"),
            bar_bg=v.get("panel", "#333333"),
            ascii=self.ascii,
        )

    def _on_theme(self) -> None:
        self._read_palette()
        self.redraw()

    def on_resize(self, event: events.Resize) -> None:
        self._size = event.size
        self.redraw()

    # -- input --------------------------------------------------------------------------
    def on_line_view_clicked(self, message: LineView.Clicked) -> None:
        """The mouse, for those who reach for it: a GPU row or an overview card selects its
        GPU, a finding selects the finding."""
        key = message.key
        if isinstance(key, GpuKey):
            self.selected = key.index
        elif isinstance(key, FindingKey):
            self.finding_index = key.position
        elif isinstance(key, CardsKey):
            gpu = key.gpu_at(message.x)
            if gpu is not None:
                self.selected = gpu
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
        if age is not None and age < 2 * self.sampler.interval_s:
            return  # frames are flowing: the last one already drew the header
        self._draw_header()

    # -- drawing ----------------------------------------------------------------------
    def _header_state(self) -> HeaderState:
        monitor, replay = self.monitor, self.replay
        frame = monitor.latest
        first = monitor.devices[0] if monitor.devices else None
        interval = replay.interval_s if replay is not None else self._interval()
        age = self.sampler.age() if self.sampler is not None and replay is None else None
        stale = age is not None and age > max(5.0, 3 * interval) and not self.paused
        nodes = list(dict.fromkeys(d.node for d in monitor.devices if d.node is not None))
        host = (
            self._hostname
            or ", ".join(nodes)  # remote: the nodes shown, not the machine gputui runs on
            or (frame.host.hostname if frame and frame.host else None)
            or socket.gethostname()
        )
        source = monitor.source
        return HeaderState(
            hostname=host,
            driver=first.driver_version if first else None,
            cuda=first.cuda_driver_version if first else None,
            gpus=len(monitor.devices),
            interval_s=interval,
            age_s=None
            if frame is None
            else (age if age is not None and age >= 2 * interval else 0),
            stale=stale,
            source=f"REPLAY {replay.speed:g}x" if replay is not None else source.label,
            source_detail=source.detail,
            live=source.kind is SourceKind.LIVE,
            paused=self.paused,
            findings=len(monitor.findings),
            critical=sum(1 for f in monitor.findings if f.severity is Severity.CRITICAL),
            moment=moment(frame.time) if replay is not None and frame is not None else None,
            position=position_text(replay, frame.time if frame else None) if replay else None,
            nodes=len(nodes),
            down=sum(
                1
                for n in (frame.notes if frame else ())
                if n.kind in (NoteKind.NODE_DOWN, NoteKind.NODE_EMPTY)
            ),
            error=self.sample_error if stale else None,
        )

    def _draw_header(self, width: int | None = None) -> None:
        width = (self._size or self.size).width if width is None else width
        header = self.query_one("#header", LineView)
        header.set_rows([header_row(self._header_state())], width, self.palette)

    def _choices(self) -> Choices:
        return Choices(
            selected=self.selected,
            finding=self.finding_index,
            overview=self.overview,
            window_s=WINDOWS_S[self.window_index],
            sort_key=SORT_KEYS[self.sort_index],
            mask=self._masking,
        )

    def redraw(self) -> None:
        """Draw the visible panels from the monitor's current state."""
        if not self._drawable:
            return
        size = self._size or self.size
        self._draw_header(size.width)
        if isinstance(self.screen, ClusterScreen | AllProcessesScreen):
            self.screen.refresh_rows()  # these follow the frames while shown
            return
        if isinstance(self.screen, HelpScreen | RulesScreen | FindingScreen | TopologyScreen):
            return  # hidden panels do no work; they catch up when the screen closes
        contents = self.view.contents(self.monitor, self._choices(), self._interval(), *size)
        self._apply_layout(contents.layout)
        host = self.query_one("#host", LineView)
        if contents.host is not None:
            host.set_rows([contents.host], size.width - 2, self.palette)
        for name in _PANELS:
            panel: Panel | None = getattr(contents, name)
            if panel is not None:
                self._paint(name, panel, contents)

    def _paint(self, name: str, panel: Panel, contents: Contents) -> None:
        view = self.query_one(f"#{name}", LineView)
        box = getattr(contents.layout, name)
        title = border_title(panel, self.ascii)
        if view.border_title != title:  # each set repaints the whole panel
            view.border_title = title
        view.set_rows(panel.rows, box.inner[0], self.palette)

    def _apply_layout(self, layout: Layout) -> None:
        """Panel sizes from the layout; styles are set only when the layout changed."""
        if layout == self._layout_done:
            return
        self._layout_done = layout
        self.screen.set_class(self.overview, "-overview")
        self.screen.set_class(layout.stacked, "-stacked")
        self.screen.set_class(layout.bottom_stacked, "-bottom-stacked")
        self.query_one("#host").display = layout.host
        for name in ("gpus", "detail", "advisor", "procs"):
            box = getattr(layout, name)
            styles = self.query_one(f"#{name}").styles
            styles.width, styles.height = box.width, box.height
        top = self.query_one("#top").styles
        bottom = self.query_one("#bottom").styles
        if layout.stacked:
            top.height = layout.gpus.height + layout.detail.height
        else:
            top.height = layout.gpus.height
        if layout.bottom_stacked:
            bottom.height = layout.advisor.height + layout.procs.height
        else:
            bottom.height = layout.advisor.height

    # -- actions ----------------------------------------------------------------------
    def _indices(self) -> list[int]:
        return [d.index for d in self.monitor.devices]

    def action_gpu(self, step: int) -> None:
        indices = self._indices()
        if indices:
            position = indices.index(self.selected) if self.selected in indices else 0
            self.selected = indices[(position + step) % len(indices)]
            self.redraw()

    def action_jump(self, index: int) -> None:
        if index in self._indices():
            self.selected = index
            self.redraw()

    def action_overview(self) -> None:
        self.overview = not self.overview
        self._layout_done = None
        self.redraw()

    def action_finding(self, step: int) -> None:
        count = len(self.monitor.findings)
        if count:
            self.finding_index = (min(self.finding_index, count - 1) + step) % count
            self.redraw()

    def _selected_finding(self) -> int | None:
        count = len(self.monitor.findings)
        return min(self.finding_index, count - 1) if count else None

    def action_goto_finding(self) -> None:
        position = self._selected_finding()
        gpu = self.monitor.findings[position].gpu if position is not None else None
        if gpu is not None:
            self._show_gpu(gpu)

    def _show_gpu(self, gpu: int) -> None:
        self.selected = gpu
        if self.overview:
            self.action_overview()
        else:
            self.redraw()

    def action_open_finding(self) -> None:
        position = self._selected_finding()
        if position is not None:
            self.push_screen(FindingScreen(self.monitor.findings[position]), self._after_modal)

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

    def action_window(self) -> None:
        self.window_index = (self.window_index + 1) % len(WINDOWS_S)
        self.redraw()

    def action_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(SORT_KEYS)
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
        if gpu is not None:
            self._show_gpu(gpu)
        else:
            self.redraw()

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
        self._masking = not self.keep_secrets
        try:
            self.redraw()
            svg = self.export_screenshot(title="gputui snapshot")
        finally:
            self._masking = False
            self.redraw()
        return local_fonts_only(svg)

    def action_quit(self) -> None:  # type: ignore[override]
        self.exit(0)

    # -- replay -----------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in keys.REPLAY_ACTIONS:
            return self.replay is not None
        if action in keys.LIVE_ACTIONS:
            return self.replay is None
        return True

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
