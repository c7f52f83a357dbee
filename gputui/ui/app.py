"""The live monitor. Frames arrive as messages from the sampler thread; the app only draws.

Cost is designed in: a handful of LineView panels created once, only the visible ones
redrawn, and within them only the lines that changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import re
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal
from textual.css.query import NoMatches
from textual.driver import Driver
from textual.markup import escape as escape_markup
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Footer

from gputui.advisor import judgement_of
from gputui.config import MAX_INTERVAL_S, MIN_INTERVAL_S
from gputui.exporters.files import write_atomic
from gputui.exporters.markdown import markdown_report
from gputui.formats.snapshot import dumps, snapshot_of
from gputui.model import Finding, Frame
from gputui.names import NoteKind, SourceKind
from gputui.sampling.monitor import Monitor
from gputui.sampling.replay import ReplayController
from gputui.sampling.sampler import Sampler
from gputui.ui import compat, render
from gputui.ui.driver import quiet_driver
from gputui.ui.lines import LineView
from gputui.ui.screens import ClusterScreen, FindingScreen, HelpScreen, RulesScreen
from gputui.ui.svg import local_fonts_only
from gputui.ui.topology import TopologyScreen
from gputui.units import fmt_age

INTERVALS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
NARROW_WIDTH = 110
WATCHDOG_S = 2.5


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

    BINDINGS: ClassVar[list[BindingType]] = [
        # priority: nothing here takes focus, so Tab moves between GPUs, not widgets
        Binding("left,h,shift+tab", "gpu(-1)", "prev GPU", key_display="←", priority=True),
        Binding("right,l,tab", "gpu(1)", "next GPU", key_display="→", priority=True),
        Binding("o", "overview", "overview"),
        Binding("n", "finding(1)", "next finding"),
        Binding("N", "finding(-1)", "prev finding", show=False),
        Binding("g", "goto_finding", "go to its GPU"),
        Binding("enter", "open_finding", "finding details", show=False),
        Binding("p", "pause", "pause"),
        Binding("plus,equals_sign", "interval(1)", "refresh slower", key_display="+"),
        Binding("minus", "interval(-1)", "refresh faster", key_display="-"),
        Binding("w", "window", "history window"),
        Binding("t", "sort", "sort processes", show=False),
        Binding("s", "snapshot", "snapshot"),
        Binding("r", "rules", "advisor rules", show=False),
        Binding("y", "topology", "topology: NUMA, PCIe, NVLink", show=False),
        Binding("c", "cluster", "cluster: every node", show=False),
        Binding("question_mark", "help", "help", key_display="?"),
        Binding("q,ctrl+c", "quit", "quit"),
        # replay only (check_action hides them otherwise)
        Binding("full_stop", "step", "replay: step", key_display="."),
        Binding("left_square_bracket", "seek(-60)", "replay: -1 min", key_display="["),
        Binding("right_square_bracket", "seek(60)", "replay: +1 min", key_display="]"),
        Binding("left_curly_bracket", "seek(-600)", "replay: -10 min", key_display="{", show=False),
        Binding("right_curly_bracket", "seek(600)", "replay: +10 min", key_display="}", show=False),
        Binding("less_than_sign", "speed(0.5)", "replay: slower", key_display="<"),
        Binding("greater_than_sign", "speed(2)", "replay: faster", key_display=">"),
        # GPUs are numbered from 0, as NVML and nvidia-smi number them: key 3 is GPU 3
        *(Binding(str(d), f"jump({d})", show=False) for d in range(10)),
    ]

    def __init__(
        self,
        monitor: Monitor,
        *,
        snapshot_dir: Path = Path("."),
        monotonic: Callable[[], float] = time.monotonic,
        hostname: str | None = None,
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
        self._monotonic = monotonic
        self._hostname = hostname
        self.selected = monitor.devices[0].index if monitor.devices else 0
        self.finding_index = 0
        self.overview = False
        self.paused = False
        self.window_index = 0
        self.sort_index = 0
        self.sample_error: str | None = None
        self.palette_colours = render.Palette(limits=monitor.advisor.thresholds)
        self._redraw_pending = False
        self._drawable = False
        self._advisor_drawn: object = None  # what the advisor pane shows now
        self._header_drawn: object = None  # likewise the header
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

    # -- composition ------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield LineView(id="header")
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
        self._read_palette()
        self.theme_changed_signal.subscribe(self, lambda _theme: self._on_theme())
        self.query_one("#gpus").border_title = "GPUs"
        self.query_one("#advisor").border_title = "Advisor"
        self.query_one("#overview").border_title = "Overview (o: back to detail)"
        self._layout()
        if self.start_at is not None:
            self.seek_to(self.start_at)
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
        self.palette_colours = render.Palette(
            ok=v.get("success", "green"),
            warn=v.get("warning", "yellow"),
            crit=v.get("error", "red"),
            accent=v.get("primary", "blue"),
            bar_bg=v.get("panel", "#333333"),
            limits=self.monitor.advisor.thresholds,
        )

    def _on_theme(self) -> None:
        self._read_palette()
        self.redraw()

    def on_resize(self) -> None:
        self._layout()

    def on_line_view_resized(self, message: LineView.Resized) -> None:
        # Several panels resize at once: draw once, after the layout settled.
        message.stop()
        if not self._redraw_pending:
            self._redraw_pending = True
            self.call_after_refresh(self._redraw_after_resize)

    def on_line_view_clicked(self, message: LineView.Clicked) -> None:
        """The mouse, for those who reach for it: a GPU row selects it, a finding selects it,
        an overview card selects its GPU."""
        text = message.line.plain
        panel = message.view.id
        if panel == "gpus":
            match = re.match(r"[▶ ](\d+)", text)
            if match:
                self.selected = int(match.group(1))
        elif panel == "advisor":
            match = re.search(r"(GPU(\d+)|host) (\S+) ", text)
            if match:
                gpu = int(match.group(2)) if match.group(2) else None
                for i, f in enumerate(self.monitor.findings):
                    if f.gpu == gpu and f.rule == match.group(3):
                        self.finding_index = i
        elif panel == "overview":
            match = re.search(r"╭ (\d+) ", text)
            if match:
                self.selected = int(match.group(1))
        self.redraw()

    def _redraw_after_resize(self) -> None:
        self._redraw_pending = False
        self.redraw()

    def _layout(self) -> None:
        """Panel sizes for this terminal: side by side when wide, stacked when narrow."""
        width, height = self.size
        rows = max(4, height - 2)  # header and footer
        gpus = len(self.monitor.devices)
        narrow = width < NARROW_WIDTH
        self.screen.set_class(narrow, "-narrow")
        self.screen.set_class(self.overview, "-overview")
        top = self.query_one("#top")
        if narrow:
            gpu_rows = 1 + min(gpus, 4 if rows < 30 else 8)
            detail_rows = 8 if rows < 30 else 16
            rest = max(2, rows - gpu_rows - detail_rows)
            advisor_rows = max(2, (rest + 1) // 2 + (1 if rest >= 6 else 0))
            self.query_one("#gpus").styles.height = gpu_rows
            self.query_one("#detail").styles.height = detail_rows
            top.styles.height = gpu_rows + detail_rows
            self.query_one("#advisor").styles.height = advisor_rows
            self.query_one("#procs").styles.height = max(1, rest - advisor_rows)
        else:
            top_rows = min(max(gpus + 1, 17), max(8, rows - 10))
            top.styles.height = top_rows
            for panel in ("#gpus", "#detail"):
                self.query_one(panel).styles.height = top_rows
            for panel in ("#advisor", "#procs"):
                self.query_one(panel).styles.height = "1fr"

    # -- frames -----------------------------------------------------------------------
    def on_frame_ready(self, message: FrameReady) -> None:
        self.monitor.ingest(message.frame)
        self.sample_error = None
        # A read that was hung while the app closed can still arrive: draw nothing then.
        with contextlib.suppress(NoMatches):
            self.redraw()

    def on_sample_failed(self, message: SampleFailed) -> None:
        if self.replay is not None and self.replay.at_end:
            if not self.paused:
                self.action_pause()
                self.notify("End of the recording: [ and ] seek back", title="Replay", timeout=6)
            return
        self.sample_error = message.error
        with contextlib.suppress(NoMatches):
            self._tick_header()

    def _interval(self) -> float:
        """The sampling interval now (the sampler's, which +/- change)."""
        return self.monitor.config.interval_s if self.sampler is None else self.sampler.interval_s

    def _age(self) -> float | None:
        return None if self.sampler is None else self.sampler.age()

    def _tick_header(self) -> None:
        if not self._drawable or self.sampler is None or self.paused:
            return
        age = self.sampler.age()
        if age is not None and age < 2 * self.sampler.interval_s:
            return  # frames are flowing: the last one already drew the header
        self._draw_header()

    def on_unmount(self) -> None:
        self._drawable = False

    def _draw_header(self) -> None:
        header = self.query_one("#header", LineView)
        frame = self.monitor.latest
        first = self.monitor.devices[0] if self.monitor.devices else None
        interval = self._interval()
        if self.replay is not None:
            interval = self.replay.interval_s  # as recorded; the speed is in the label
        age = None if self.replay is not None else self._age()
        stale = age is not None and age > max(5.0, 3 * interval) and not self.paused
        nodes = list(dict.fromkeys(d.node for d in self.monitor.devices if d.node is not None))
        host = (
            self._hostname
            or ", ".join(nodes)  # remote: the nodes shown, not the machine gputui runs on
            or (frame.host.hostname if frame and frame.host else None)
            or socket.gethostname()
        )
        state = render.HeaderState(
            hostname=host,
            driver=first.driver_version if first else None,
            cuda=first.cuda_driver_version if first else None,
            gpus=len(self.monitor.devices),
            interval_s=interval,
            age_s=None
            if frame is None
            else (age if age is not None and age >= 2 * interval else 0.0),
            stale=stale,
            source_label=(
                f"REPLAY {self.replay.speed:g}x"
                if self.replay is not None
                else self.monitor.source.label
            ),
            live=self.monitor.source.kind is SourceKind.LIVE,
            moment=(
                time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(frame.time))
                if self.replay is not None and frame is not None
                else None
            ),
            paused=self.paused,
            findings=len(self.monitor.findings),
            nodes=len(nodes),
            down=sum(
                1
                for n in (frame.notes if frame else ())
                if n.kind in (NoteKind.NODE_DOWN, NoteKind.NODE_EMPTY)
            ),
        )
        key = (state, self.size.width, self.palette_colours, self.sample_error if stale else None)
        if key == self._header_drawn:
            return  # most ticks: the same header
        self._header_drawn = key
        line = render.header_line(state, self.size.width, self.palette_colours)
        if self.sample_error and stale:
            line.append(f"  last error: {self.sample_error}", style="dim")
        header.set_lines([line])

    # -- drawing ----------------------------------------------------------------------
    def redraw(self) -> None:
        """Draw the visible panels from the monitor's current state."""
        if not self._drawable:
            return
        self._draw_header()
        if isinstance(self.screen, ClusterScreen):
            self.screen.refresh_rows()  # the cluster follows the frames while shown
            return
        if isinstance(self.screen, HelpScreen | RulesScreen | FindingScreen | TopologyScreen):
            return  # hidden panels do no work; they catch up when the screen closes
        p = self.palette_colours
        monitor = self.monitor
        frame = monitor.latest
        findings = monitor.findings
        if self.overview:
            view = self.query_one("#overview", LineView)
            view.set_lines(
                render.overview_lines(
                    frame,
                    monitor.devices,
                    findings,
                    monitor.history,
                    self.selected,
                    view.size.width,
                    view.size.height,
                    p,
                )
            )
            return
        gpus = self.query_one("#gpus", LineView)
        gpus.set_lines(
            render.gpu_list(
                frame,
                monitor.devices,
                findings,
                self.selected,
                gpus.size.width,
                gpus.size.height,
                p,
            )
        )
        device = next((d for d in monitor.devices if d.index == self.selected), None)
        detail = self.query_one("#detail", LineView)
        if device is not None:
            _titled(detail, f"GPU {device.index} detail")
            lines = render.detail_lines(
                frame,
                device,
                monitor.history,
                render.WINDOWS_S[self.window_index],
                self._window_points(),
                detail.size.width,
                detail.size.height + 1,
                p,
            )
            detail.set_lines(lines[1:])  # the border carries the title line
            # A border text is markup: the GPU's name in it is outside text.
            subtitle = lines[0].plain[len(f"GPU {device.index} ") :]
            _titled(detail, subtitle=escape_markup(subtitle))
        procs = self.query_one("#procs", LineView)
        sort_key = render.SORT_KEYS[self.sort_index]
        _titled(procs, f"Processes on GPU {self.selected} · by {render.SORT_LABELS[sort_key]} (t)")
        processes = frame.processes_on(self.selected) if frame else ()
        all_notes = frame.notes if frame else ()
        notes = [n.text for n in all_notes if n.kind is NoteKind.PID_NAMESPACE]
        procs.set_lines(
            render.process_lines(
                processes,
                notes,
                render.SORT_KEYS[self.sort_index],
                procs.size.width,
                procs.size.height,
                p,
                mask=self._masking,
            )
        )
        advisor = self.query_one("#advisor", LineView)
        _titled(advisor, f"Advisor ({len(findings)} finding(s))" if findings else "Advisor")
        now = frame.time if frame else None
        waiting = frame is None or len(monitor.history) < monitor.advisor.thresholds.min_points
        advisor_notes = tuple(n.text for n in all_notes if n.kind is not NoteKind.PID_NAMESPACE)
        ages = tuple(fmt_age(now - f.since) for f in findings) if now is not None else None
        # The advisor judges every few seconds and shows coarse ages: most ticks its pane
        # would be rebuilt only to find it unchanged.
        judgement = judgement_of(monitor)
        gathering = judgement.gathering_text() if judgement.gathering else None
        key = (
            findings,
            self.finding_index,
            ages,
            waiting,
            advisor.size,
            p,
            advisor_notes,
            gathering,
        )
        if key != self._advisor_drawn:
            self._advisor_drawn = key
            advisor.set_lines(
                render.advisor_lines(
                    findings,
                    self.finding_index,
                    now,
                    waiting,
                    advisor.size.width,
                    advisor.size.height,
                    p,
                    notes=advisor_notes,
                    gathering=gathering,
                )
            )

    def _window_points(self) -> int:
        interval = self._interval()
        return max(2, int(render.WINDOWS_S[self.window_index] / interval))

    # -- actions ----------------------------------------------------------------------
    def _indices(self) -> list[int]:
        return [d.index for d in self.monitor.devices]

    def action_gpu(self, step: int) -> None:
        indices = self._indices()
        if not indices:
            return
        position = indices.index(self.selected) if self.selected in indices else 0
        self.selected = indices[(position + step) % len(indices)]
        self.redraw()

    def action_jump(self, position: int) -> None:
        indices = self._indices()
        if position < len(indices):
            self.selected = indices[position]
            self.redraw()

    def action_overview(self) -> None:
        self.overview = not self.overview
        self._layout()
        self.redraw()

    def action_finding(self, step: int) -> None:
        count = len(self.monitor.findings)
        if count:
            self.finding_index = (min(self.finding_index, count - 1) + step) % count
            self.redraw()

    def _selected_finding(self) -> Finding | None:
        findings = self.monitor.findings
        if not findings:
            return None
        return findings[min(self.finding_index, len(findings) - 1)]

    def action_goto_finding(self) -> None:
        finding = self._selected_finding()
        if finding is not None and finding.gpu is not None:
            self.selected = finding.gpu
            self.overview = False
            self._layout()
            self.redraw()

    def action_open_finding(self) -> None:
        finding = self._selected_finding()
        if finding is not None:
            self.push_screen(FindingScreen(finding), self._after_modal)

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
        self.window_index = (self.window_index + 1) % len(render.WINDOWS_S)
        self.redraw()

    def action_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(render.SORT_KEYS)
        self.redraw()

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.BINDINGS), self._after_modal)

    def action_cluster(self) -> None:
        """Every node as a row, worst first (remote sources); Enter opens its GPUs."""
        p = self.palette_colours
        colours = {"ok": p.ok, "warn": p.warn, "crit": p.crit, "dim": "dim"}
        self.push_screen(ClusterScreen(self.monitor, colours), self._after_cluster)

    def _after_cluster(self, gpu: int | None) -> None:
        if gpu is not None:
            self.selected = gpu
            self.overview = False
            self._layout()
        self.redraw()

    def action_topology(self) -> None:
        self.push_screen(TopologyScreen(self.monitor), self._after_modal)

    def action_rules(self) -> None:
        self.push_screen(RulesScreen(self.monitor.advisor.thresholds), self._after_modal)

    def _after_modal(self, _result: object) -> None:
        self.redraw()

    def action_snapshot(self) -> None:
        frame = self.monitor.latest
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(frame.time if frame else time.time()))
        base = self.snapshot_dir / f"gputui-snapshot-{stamp}"
        document = snapshot_of(self.monitor, keep_secrets=self.keep_secrets)
        outputs: tuple[tuple[Path, Callable[[], str]], ...] = (
            (base.with_suffix(".json"), lambda: dumps(document)),
            (base.with_suffix(".md"), lambda: markdown_report(document)),
            (base.with_suffix(".svg"), self._screenshot_for_a_file),
        )
        written: list[Path] = []
        try:
            for path, make in outputs:
                written.append(write_atomic(path, make()))
        except OSError as exc:
            for path in written:  # all three or none: nothing half-written is left
                with contextlib.suppress(OSError):
                    path.unlink()
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
        if action in ("step", "seek", "speed"):
            return self.replay is not None
        if action == "interval":
            return self.replay is None
        return True

    def action_step(self) -> None:
        """One frame forward while paused."""
        if self.replay is None:
            return
        if not self.paused:
            self.action_pause()
        if not self.replay.step():
            self.notify("End of the recording", title="Replay", timeout=3)
            return
        self.redraw()

    def action_seek(self, seconds: float) -> None:
        if self.replay is not None:
            self._after_seek(self.replay.seek_by(seconds))

    def seek_to(self, target: float) -> None:
        """Jump in the recording; the history and the advisor are rebuilt as they were then."""
        if self.replay is not None:
            self._after_seek(self.replay.seek_to(target))

    def _after_seek(self, shown: float | None) -> None:
        if shown is None:
            return
        self.notify(
            f"at {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(shown))}",
            title="Replay",
            timeout=2,
        )
        self.redraw()

    def action_speed(self, factor: float) -> None:
        if self.replay is None or self.sampler is None:
            return
        speed = self.replay.change_speed(factor)
        self.notify(f"Replay at {speed:g}x", title="Replay", timeout=2)
        self._draw_header()


def _titled(panel: LineView, title: str | None = None, subtitle: str | None = None) -> None:
    """Set a panel's border texts only when they change: each set repaints the whole panel."""
    if title is not None and panel.border_title != title:
        panel.border_title = title
    if subtitle is not None and panel.border_subtitle != subtitle:
        panel.border_subtitle = subtitle
