"""The process table's keys, on the main screen and the every-process page alike: select,
sort by any column, filter, show every GPU's processes, look inside one, and send it a
signal after a confirmation that names it. Each choice is a pure step of
``view.process_table.ProcessChoices``; the signal goes through the ``ProcessAccess`` the
composition root handed in (none for a demo, a recording or a remote node)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from textual.notifications import SeverityLevel

from gputui.core.model import ProcessSample
from gputui.core.process_access import Outcome
from gputui.view.process_table import (
    ProcessChoices,
    listing,
    pids_in_order,
    selected_entry,
    users,
)

if TYPE_CHECKING:
    from gputui.ui.app import GpuTuiApp

SIGNAL_NAMES = {2: "SIGINT", 9: "SIGKILL", 15: "SIGTERM"}


class ProcessKeys:
    def __init__(self, app: GpuTuiApp) -> None:
        self._app = app
        #: the user's last move was into the process table (↓ ↑, a click on a process):
        #: Enter then opens the selected process, as in nvitop, not the selected finding
        self.in_table = False

    @property
    def choices(self) -> ProcessChoices:
        return self._app.choices.procs

    def _set(self, procs: ProcessChoices) -> None:
        app = self._app
        app.choose(app.choices.with_procs(procs))

    def _processes(self) -> tuple[ProcessSample, ...]:
        frame = self._app.monitor.latest
        return frame.processes if frame is not None else ()

    def _gpu(self, page: bool) -> int | None:
        return None if page or self.choices.all_gpus else self._app.choices.selected

    def move(self, step: int, page: bool = False) -> None:
        self.in_table = True
        lines = listing(self._processes(), self.choices, self._gpu(page))
        self._set(self.choices.select(pids_in_order(lines), step))

    def sort_by(self, key: str) -> None:
        self._set(self.choices.sort_by(key))

    def next_sort(self) -> None:
        self._set(self.choices.next_sort())

    def toggle_all(self) -> None:
        procs = self.choices
        self._set(replace(procs, all_gpus=not procs.all_gpus, pid=None))  # the title says

    def next_user(self) -> None:
        self._set(self.choices.next_user(users(self._processes())))  # the title says whose

    def set_text(self, text: str) -> None:
        self._set(replace(self.choices, text=text))

    def scroll(self, step: int) -> None:
        self._set(self.choices.scroll(step))

    def clear(self) -> bool:
        """Esc: the selection, filters and scroll gone; False when there was none."""
        self.in_table = False
        procs = self.choices
        if procs == procs.cleared():
            return False
        self._set(procs.cleared())
        return True

    def selected(self, page: bool = False) -> ProcessSample | None:
        """The selected process, as the table lists it now (None: none, or it has gone)."""
        lines = listing(self._processes(), self.choices, self._gpu(page))
        entry = selected_entry(lines, self.choices.pid)
        if entry is None:
            return None
        samples = [p for p in self._processes() if p.pid == entry.process.pid]
        return samples[0] if samples else None

    def target(self, page: bool = False) -> ProcessSample | None:
        """The selected process, or a line saying how to select one."""
        process = self.selected(page)
        if process is None:
            self._app.notify("Select a process first: ↑ ↓ move through the table", timeout=4)
        return process

    def inspect(self, page: bool = False) -> None:
        process = self.target(page)
        if process is not None:
            from gputui.ui.processes import ProcessScreen

            app = self._app
            app.push_screen(
                ProcessScreen(app, process.pid, process.started), lambda _r: app.redraw()
            )

    def signal(self, signum: int, page: bool = False) -> None:
        """Ask, naming the process and the signal; send only on y."""
        process = self.target(page)
        if process is not None:
            self._ask(process, signum)

    def signal_pid(self, pid: int, signum: int) -> None:
        """The same for the process a page shows, selected or not."""
        process = next((p for p in self._processes() if p.pid == pid), None)
        if process is None:
            self._app.notify(f"Not sent: PID {pid} is no longer on a GPU", timeout=4)
            return
        self._ask(process, signum)

    def _ask(self, process: ProcessSample, signum: int) -> None:
        app = self._app
        name = SIGNAL_NAMES.get(signum, f"signal {signum}")
        access = app.process_access
        if access is None:
            app.notify(
                f"Not sent: these are {app.monitor.source.label.lower()} processes, not this "
                "machine's; gputui signals only processes it reads here",
                title=name,
                severity="warning",
                timeout=6,
            )
            return
        why = access.refusal(process.pid, process.started)
        if why is not None:
            app.notify(f"Not sent: {why}", title=name, severity="warning", timeout=6)
            return

        def answered(send: bool | None) -> None:
            if not send:
                app.notify(f"Cancelled: nothing sent to PID {process.pid}", timeout=3)
                return
            result = access.send(process.pid, process.started, signum)
            severity: SeverityLevel = "information"
            if result.outcome is not Outcome.SENT:
                severity = "warning"
            app.notify(result.text, title=name, severity=severity, timeout=6)

        from gputui.ui.processes import SignalScreen

        screen = SignalScreen(process, name, access.is_root, app.palette, app.choices.mask)
        app.push_screen(screen, answered)
