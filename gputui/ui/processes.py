"""The process screens: every GPU process on the machine (``a``), one process looked into
(``i``), the confirmation a signal needs, and the text filter (``/``). Their contents are
built in ``gputui.view`` (all_processes, process_page); here are their keys."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from gputui.core.model import ProcessSample
from gputui.core.process_access import ProcessDetails
from gputui.ui import keys
from gputui.ui.lines import LineView
from gputui.ui.paint import Palette, border_title
from gputui.ui.screens import PageScreen
from gputui.view.cells import Panel
from gputui.view.process_table import FILTER_MAX_CHARS

if TYPE_CHECKING:
    from gputui.ui.app import GpuTuiApp

DETAILS_EVERY_S = 2.0  # a process page looks again this often (children, devices)


class _ProcessActions:
    """The process keys on a screen over the panels: the app's process group, told that
    the table here lists every GPU's processes."""

    _tui: GpuTuiApp

    def action_process(self, step: int) -> None:
        self._tui.process_keys.move(step, page=True)

    def action_skip(self, step: int) -> None:
        self._tui.process_keys.move(step, page=True)

    def action_sort(self) -> None:
        self._tui.process_keys.next_sort()

    def action_sort_by(self, key: str) -> None:
        self._tui.process_keys.sort_by(key)

    def action_user(self) -> None:
        self._tui.process_keys.next_user()

    def action_filter(self) -> None:
        self._tui.action_filter()

    def action_inspect(self) -> None:
        self._tui.process_keys.inspect(page=True)

    def action_signal(self, signum: int) -> None:
        self._tui.process_keys.signal(signum, page=True)


class AllProcessesScreen(_ProcessActions, ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        *keys.PROCESS_BINDINGS,
        Binding("left", "sideways(-8)", "scroll left", show=False),
        Binding("right", "sideways(8)", "scroll right", show=False),
        Binding("enter", "inspect", "inspect", show=False),
        Binding("escape,a,q", "close", "back"),
    ]

    DEFAULT_CSS = """
    AllProcessesScreen #all {
        height: 1fr;
        width: 1fr;
    }
    """

    def __init__(self, app: GpuTuiApp) -> None:
        super().__init__()
        self._tui = app
        self._room = 0  # rows left free at the foot (the filter line's)

    def compose(self) -> ComposeResult:
        yield LineView(id="all", classes="panel")

    def make_room(self, rows: int) -> None:
        """Leave ``rows`` free at the foot of the screen for a line over it (the filter's):
        the table ends above it instead of under it."""
        self._room = rows
        self.query_one("#all", LineView).styles.margin = (0, 0, rows, 0)
        self.refresh_rows()

    def on_mount(self) -> None:
        self.refresh_rows()

    def on_resize(self) -> None:
        self.refresh_rows()

    def refresh_rows(self) -> None:
        """Rebuild from the monitor's latest frame (on every frame and key while shown)."""
        app = self._tui
        view = self.query_one("#all", LineView)
        frame = app.monitor.latest
        width, height = self.size.width - 2, self.size.height - 1 - self._room
        from gputui.view.all_processes import all_processes  # loads when first opened

        panel = all_processes(
            frame.processes if frame else (),
            app.choices.procs,
            frame.time if frame else None,
            width,
            height,
            app.monitor.thresholds,
            mask=app.choices.mask,
        )
        view.border_title = border_title(panel, app.palette.ascii)
        view.set_rows(panel.rows, width, app.palette)

    def action_sideways(self, step: int) -> None:
        self._tui.process_keys.scroll(step)

    def action_close(self) -> None:
        self.dismiss(None)


class ProcessScreen(_ProcessActions, PageScreen[None]):
    """One process, looked into again every few seconds while shown."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *(b for b in keys.PROCESS_BINDINGS if keys.action_name(b) == "signal"),
        Binding("escape,q,i,e,enter", "close", "back"),
    ]

    def __init__(self, app: GpuTuiApp, pid: int, started: float | None) -> None:
        super().__init__(app.palette)
        self._tui = app
        self.pid = pid
        self._started = started
        self._details: ProcessDetails | None = None
        self._environment: tuple[str, ...] = ()

    def on_mount(self) -> None:
        self._look()
        super().on_mount()
        self.set_interval(DETAILS_EVERY_S, self._again)

    def _look(self) -> None:
        access = self._tui.process_access
        if access is None:
            return
        details = access.details(self.pid, self._started)
        # the environment is fixed once the process runs: read it once
        if self._details is not None and self._details.environment and details.environment:
            details = replace(details, environment=self._details.environment)
        self._details = details

    def _again(self) -> None:
        self._look()
        self.refresh_rows()

    def build(self, width: int) -> Panel:
        app = self._tui
        frame = app.monitor.latest
        samples = [p for p in (frame.processes if frame else ()) if p.pid == self.pid]
        why = ""
        if app.process_access is None:
            why = (
                f"A {app.monitor.source.label.lower()} process: nothing more is read of it "
                "here (its environment, tree and devices are read only from this machine's "
                "processes)."
            )
        from gputui.view.process_page import process_page, process_tops

        return process_page(
            samples,
            self._details,
            app.monitor.processes,
            frame.time if frame else None,
            width,
            mask=app.choices.mask,
            why_no_details=why,
            tops=process_tops(app.monitor.devices, samples),
        )

    def action_signal(self, signum: int) -> None:
        self._tui.process_keys.signal_pid(self.pid, signum)

    def action_close(self) -> None:
        self.dismiss(None)


class SignalScreen(PageScreen[bool]):
    """'Send SIGTERM to PID 1234?': y sends; n, Esc or q do not."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "send"),
        Binding("n,escape,q", "answer(False)", "cancel"),
    ]

    def __init__(
        self, process: ProcessSample, name: str, root: bool, palette: Palette, mask: bool
    ) -> None:
        super().__init__(palette)
        self.process = process
        self.signal_name = name
        self._root = root
        self._mask = mask

    def build(self, width: int) -> Panel:
        from gputui.view.process_page import signal_page

        return signal_page(self.process, self.signal_name, self._root, width, self._mask)

    def action_answer(self, send: bool) -> None:
        self.dismiss(send)


class FilterScreen(ModalScreen[None]):
    """One line at the foot of the screen: the table narrows as you type; Enter keeps the
    filter, Esc puts the old one back. The line takes the main screen's key line (its
    keys wait while you type); over every process, whose table reaches the foot, the
    table gives the line its last row. Either way no row of the table is hidden."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]

    DEFAULT_CSS = """
    FilterScreen {
        background: transparent;
    }
    FilterScreen #filter-bar {
        dock: bottom;
        height: 1;
        width: 100%;
        background: $panel;
    }
    FilterScreen #filter-prompt {
        width: auto;
        padding: 0 1;
        color: $accent;
        text-style: bold;
    }
    FilterScreen Input, FilterScreen Input:focus {
        width: 1fr;
        height: 1;
        border: none;
        padding: 0 1 0 0;
        background: $panel;
    }
    """

    def __init__(self, app: GpuTuiApp) -> None:
        super().__init__()
        self._tui = app
        self._before = app.choices.procs.text
        below = app.screen
        #: the table that gives this line its last row (None: the main screen's key line)
        self._below = below if isinstance(below, AllProcessesScreen) else None

    def compose(self) -> ComposeResult:
        with Horizontal(id="filter-bar"):
            yield Label("filter /", id="filter-prompt")
            yield Input(
                value=self._before,
                placeholder="part of a command, user or PID (Enter keeps, Esc undoes)",
                max_length=FILTER_MAX_CHARS,
            )

    def on_mount(self) -> None:
        if self._below is not None:
            self._below.make_room(1)

    def on_unmount(self) -> None:
        if self._below is not None:
            self._below.make_room(0)

    def on_input_changed(self, event: Input.Changed) -> None:
        self._tui.process_keys.set_text(event.value)

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.dismiss(None)

    def action_cancel(self) -> None:
        self._tui.process_keys.set_text(self._before)
        self.dismiss(None)
