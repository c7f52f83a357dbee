"""The process table's keys, on the main screen and the every-process page alike: select,
sort by any column, filter, show every GPU's processes, look inside one, and send it a
signal after a confirmation that names it. Each takes the user's choices and the latest
processes and returns new choices or an effect (``view.effects``); a signal goes through
the ``ProcessAccess`` the composition root handed in (none for a demo, a recording or a
remote node), and only to the process the table or page was opened for."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gputui.core.model import ProcessSample
from gputui.core.process_access import Outcome, ProcessAccess
from gputui.view.choices import Choices
from gputui.view.effects import AskSignal, Notify, OpenProcess, Tone
from gputui.view.process_table import listing, pids_in_order, selected_entry, users

SIGNAL_NAMES = {2: "SIGINT", 9: "SIGKILL", 15: "SIGTERM"}
SELECT_FIRST = Notify("Select a process first: ↑ ↓ move through the table", timeout=4)


def _gpu(choices: Choices, page: bool) -> int | None:
    """The GPU whose processes the table lists; None: every GPU's (the page, or ``v``)."""
    return None if page or choices.procs.all_gpus else choices.selected


def move(choices: Choices, processes: Sequence[ProcessSample], step: int, page: bool) -> Choices:
    """↓ ↑ PgDn PgUp: the process ``step`` rows on, in the order shown."""
    lines = listing(processes, choices.procs, _gpu(choices, page))
    procs = choices.procs.select(pids_in_order(lines), step)
    return replace(choices.with_procs(procs), in_table=True)


def toggle_all(choices: Choices) -> Choices:
    """v: the selected GPU's processes or every GPU's (the title says which)."""
    procs = choices.procs
    return choices.with_procs(replace(procs, all_gpus=not procs.all_gpus, pid=None))


def next_user(choices: Choices, processes: Sequence[ProcessSample]) -> Choices:
    """u: one user's processes, then the next user's, then every user's."""
    return choices.with_procs(choices.procs.next_user(users(processes)))


def clear(choices: Choices) -> Choices:
    """Esc: the selection, filters and scroll gone."""
    return replace(choices.with_procs(choices.procs.cleared()), in_table=False)


def selected(
    choices: Choices, processes: Sequence[ProcessSample], page: bool
) -> ProcessSample | None:
    """The selected process, as the table lists it now (None: none, or it has gone)."""
    lines = listing(processes, choices.procs, _gpu(choices, page))
    entry = selected_entry(lines, choices.procs.pid)
    if entry is None:
        return None
    return next((p for p in processes if p.pid == entry.process.pid), None)


def inspect(
    choices: Choices, processes: Sequence[ProcessSample], page: bool
) -> OpenProcess | Notify:
    """i e: the selected process looked into."""
    process = selected(choices, processes, page)
    if process is None:
        return SELECT_FIRST
    return OpenProcess(process.pid, process.started)


def signal(
    choices: Choices,
    processes: Sequence[ProcessSample],
    signum: int,
    page: bool,
    access: ProcessAccess | None,
    source: str,
) -> AskSignal | Notify:
    """T I K in a table: the confirmation for the selected process."""
    process = selected(choices, processes, page)
    if process is None:
        return SELECT_FIRST
    return ask_signal(processes, process.pid, process.started, signum, access, source)


def ask_signal(
    processes: Sequence[ProcessSample],
    pid: int,
    started: float | None,
    signum: int,
    access: ProcessAccess | None,
    source: str,
) -> AskSignal | Notify:
    """The one way to a signal, from the table and from a process's page alike: the
    confirmation naming the process that ``pid`` and ``started`` identify, or why there is
    none. ``source`` is the source's label (the processes of a demo, a recording or a
    remote node are not this machine's)."""
    name = SIGNAL_NAMES.get(signum, f"signal {signum}")
    if access is None:
        return Notify(
            f"Not sent: these are {source.lower()} processes, not this machine's; gputui "
            "signals only processes it reads here",
            title=name,
            tone="warning",
            timeout=6,
        )
    process = next((p for p in processes if p.pid == pid), None)
    if process is None:
        return Notify(f"Not sent: PID {pid} is no longer on a GPU", timeout=4)
    if started is not None and process.started is not None and process.started != started:
        return Notify(
            f"Not sent: PID {pid} is now another process (started later than the one shown)",
            title=name,
            tone="warning",
            timeout=6,
        )
    why = access.refusal(pid, started)
    if why is not None:
        return Notify(f"Not sent: {why}", title=name, tone="warning", timeout=6)
    # the confirmation names the process asked for: its PID and the start it was shown with
    return AskSignal(replace(process, started=started), signum, name)


def answer(request: AskSignal, send: bool | None, access: ProcessAccess) -> Notify:
    """The confirmation answered: the signal sent on yes (to the process it named, by its
    PID and start time), and what came of it."""
    process = request.process
    if not send:
        return Notify(f"Cancelled: nothing sent to PID {process.pid}", timeout=3)
    result = access.send(process.pid, process.started, request.signum)
    tone: Tone = "information" if result.outcome is Outcome.SENT else "warning"
    return Notify(result.text, title=request.name, tone=tone, timeout=6)
