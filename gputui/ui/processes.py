"""The process screens: every GPU process on the machine (``a``), one process looked into
(``i``), the confirmation a signal needs, and the text filter (``/``). Their contents are
built in ``gputui.view`` (all_processes, process_page); here are their keys."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

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
from gputui.ui.process_actions import ProcessActions
from gputui.ui.screens import PageScreen
from gputui.ui.shell import Shell
from gputui.view import process_keys
from gputui.view.cells import Panel
from gputui.view.effects import AskSignals
from gputui.view.process_table import FILTER_MAX_CHARS

DETAILS_EVERY_S = 2.0  # a process page looks again this often (children, devices)


class AllProcessesScreen(ProcessActions, ModalScreen[None]):
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

    every_gpu = True

    def __init__(self, shell: Shell) -> None:
        super().__init__()
        self.shell = shell
        self._room = 0  # rows left free at the foot (the filter line's)
        #: the main table's choices, given back as they were when the page closes
        self._main = shell.choices.procs

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
        shell = self.shell
        view = self.query_one("#all", LineView)
        frame = shell.monitor.latest
        width, height = self.size.width - 2, self.size.height - 1 - self._room
        from gputui.view.all_processes import all_processes  # loads when first opened
        from gputui.view.processes import reads_processes

        panel = all_processes(
            frame.processes if frame else (),
            shell.choices.procs,
            frame.time if frame else None,
            width,
            height,
            shell.monitor.thresholds,
            mask=shell.choices.mask,
            read=reads_processes(frame),
        )
        view.border_title = border_title(panel, shell.palette.ascii)
        view.set_rows(panel.rows, width, shell.palette)

    def action_sideways(self, step: int) -> None:
        choices = self.shell.choices
        self.shell.choose(choices.with_procs(choices.procs.scroll(step)))

    def action_close(self) -> None:
        self.shell.choose(process_keys.back_from_page(self.shell.choices, self._main))
        self.dismiss(None)


class ProcessScreen(PageScreen[None]):
    """One process, looked into again every few seconds while shown."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *(b for b in keys.PROCESS_BINDINGS if keys.action_name(b) == "signal"),
        Binding("escape,q,i,e,enter", "close", "back"),
    ]

    def __init__(self, shell: Shell, pid: int, started: float | None) -> None:
        super().__init__(shell.palette)
        self.shell = shell
        self.pid = pid
        #: the start time of the process it was opened for: a signal goes only to that one
        self.started = started
        self._details: ProcessDetails | None = None
        self._environment: tuple[str, ...] = ()

    def on_mount(self) -> None:
        self._look()
        super().on_mount()
        self.set_interval(DETAILS_EVERY_S, self._again)

    def _look(self) -> None:
        access = self.shell.process_access
        if access is None:
            return
        details = access.details(self.pid, self.started)
        # the environment is fixed once the process runs: read it once
        if self._details is not None and self._details.environment and details.environment:
            details = replace(details, environment=self._details.environment)
        self._details = details

    def _again(self) -> None:
        self._look()
        self.refresh_rows()

    def build(self, width: int) -> Panel:
        shell = self.shell
        frame = shell.monitor.latest
        samples = [p for p in (frame.processes if frame else ()) if p.pid == self.pid]
        why = ""
        if shell.process_access is None:
            why = (
                f"A {shell.monitor.source.label.lower()} process: nothing more is read of it "
                "here (its environment, tree and devices are read only from this machine's "
                "processes)."
            )
        from gputui.view.process_page import process_page, process_tops

        return process_page(
            samples,
            self._details,
            shell.monitor.processes,
            frame.time if frame else None,
            width,
            mask=shell.choices.mask,
            why_no_details=why,
            tops=process_tops(shell.monitor.devices, samples),
        )

    def action_signal(self, signum: int) -> None:
        """T I K: to the process this page was opened for, never a later one with its PID."""
        shell = self.shell
        frame = shell.monitor.latest
        processes = frame.processes if frame is not None else ()
        access, label = shell.process_access, shell.monitor.source.label
        asked = process_keys.ask_signal(processes, self.pid, self.started, signum, access, label)
        shell.apply(asked)

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


class SignalsScreen(PageScreen[bool]):
    """'Send SIGTERM to 3 processes?', each named: y sends to each; n, Esc or q to none."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "send to each"),
        Binding("n,escape,q", "answer(False)", "cancel"),
    ]

    def __init__(self, request: AskSignals, root: bool, palette: Palette, mask: bool) -> None:
        super().__init__(palette)
        self.request = request
        self._root = root
        self._mask = mask

    def build(self, width: int) -> Panel:
        from gputui.view.process_page import signals_page

        r = self.request
        return signals_page(r.processes, r.name, self._root, width, self._mask, r.refused)

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

    def __init__(self, shell: Shell) -> None:
        super().__init__()
        self.shell = shell
        self._before = shell.choices.procs.text
        below = shell.screen
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

    def _filter(self, text: str) -> None:
        choices = self.shell.choices
        self.shell.choose(choices.with_procs(replace(choices.procs, text=text)))

    def on_input_changed(self, event: Input.Changed) -> None:
        self._filter(event.value)

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.dismiss(None)

    def action_cancel(self) -> None:
        self._filter(self._before)
        self.dismiss(None)
