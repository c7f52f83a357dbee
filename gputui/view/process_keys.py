"""The process table's keys, on the main screen and the every-process page alike: select,
sort by any column, filter, show every GPU's processes, look inside one, tag several, and
send the selected one (or every tagged one) a signal after one confirmation that names
each. Each takes the user's choices and the latest processes and returns new choices or an
effect (``view.effects``); a signal goes through the ``ProcessAccess`` the composition root
handed in (none for a demo, a recording or a remote node), and only to a process the
table, a tag or a page was made for: each passes the same check (``checked``) by its PID
and start time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gputui.core.model import ProcessSample
from gputui.core.process_access import Outcome, ProcessAccess
from gputui.view.choices import Choices
from gputui.view.effects import AskSignal, AskSignals, Notify, OpenProcess, Tone
from gputui.view.process_table import (
    ProcessChoices,
    Tag,
    listing,
    pids_in_order,
    selected_entry,
    users,
)

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


def back_from_page(choices: Choices, before: ProcessChoices) -> Choices:
    """The every-process page closed: its filter, user, sideways scroll and selection were
    its own, and the main table is as it was when the page opened (the sort kept: a
    preference, not a place)."""
    procs = replace(
        choices.procs, text=before.text, user=before.user, offset=before.offset, pid=before.pid
    )
    return choices.with_procs(procs)


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


def tag(choices: Choices, processes: Sequence[ProcessSample], page: bool) -> Choices | Notify:
    """space: the selected process tagged (again: untagged), by its PID and start."""
    process = selected(choices, processes, page)
    if process is None:
        return SELECT_FIRST
    return choices.with_procs(choices.procs.toggle_tag((process.pid, process.started)))


def signal(
    choices: Choices,
    processes: Sequence[ProcessSample],
    signum: int,
    page: bool,
    access: ProcessAccess | None,
    source: str,
) -> AskSignal | AskSignals | Notify:
    """T I K in a table: the confirmation for every tagged process, else the selected
    one."""
    if choices.procs.tagged:
        return ask_signals(processes, choices.procs.tagged, signum, access, source)
    process = selected(choices, processes, page)
    if process is None:
        return SELECT_FIRST
    return ask_signal(processes, process.pid, process.started, signum, access, source)


def _not_here(name: str, source: str) -> Notify:
    return Notify(
        f"Not sent: these are {source.lower()} processes, not this machine's; gputui "
        "signals only processes it reads here",
        title=name,
        tone="warning",
        timeout=6,
    )


def checked(
    processes: Sequence[ProcessSample],
    pid: int,
    started: float | None,
    access: ProcessAccess,
) -> ProcessSample | str:
    """The process ``pid`` and ``started`` identify, as the latest readings show it, or
    why no signal may go to it: gone from the GPUs, its PID now another process's, or
    one the access refuses (not the user's, gputui itself, --readonly)."""
    process = next((p for p in processes if p.pid == pid), None)
    if process is None:
        return f"PID {pid} is no longer on a GPU"
    if started is not None and process.started is not None and process.started != started:
        return f"PID {pid} is now another process (started later than the one shown)"
    why = access.refusal(pid, started)
    if why is not None:
        return why
    # the confirmation names the process asked for: its PID and the start it was shown with
    return process if started is None else replace(process, started=started)


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
        return _not_here(name, source)
    found = checked(processes, pid, started, access)
    if isinstance(found, str):
        return Notify(f"Not sent: {found}", title=name, tone="warning", timeout=6)
    return AskSignal(found, signum, name)


def ask_signals(
    processes: Sequence[ProcessSample],
    tags: Sequence[Tag],
    signum: int,
    access: ProcessAccess | None,
    source: str,
) -> AskSignals | Notify:
    """The confirmation for every tagged process: each through ``checked`` (its PID and
    start), those that pass named one by one, those that do not with why; none passing is
    no confirmation, only why."""
    name = SIGNAL_NAMES.get(signum, f"signal {signum}")
    if access is None:
        return _not_here(name, source)
    passed: list[ProcessSample] = []
    refused: list[tuple[int, str]] = []
    for pid, started in tags:
        found = checked(processes, pid, started, access)
        if isinstance(found, str):
            refused.append((pid, found))
        else:
            passed.append(found)
    if not passed:
        said = "; ".join(why for _, why in refused)
        return Notify(f"Not sent: {said}", title=name, tone="warning", timeout=8)
    return AskSignals(tuple(passed), signum, name, tuple(refused))


def answer(request: AskSignal, send: bool | None, access: ProcessAccess) -> Notify:
    """The confirmation answered: the signal sent on yes (to the process it named, by its
    PID and start time), and what came of it."""
    process = request.process
    if not send:
        return Notify(f"Cancelled: nothing sent to PID {process.pid}", timeout=3)
    result = access.send(process.pid, process.started, request.signum)
    tone: Tone = "information" if result.outcome is Outcome.SENT else "warning"
    return Notify(result.text, title=request.name, tone=tone, timeout=6)


def answer_each(request: AskSignals, send: bool | None, access: ProcessAccess) -> Notify:
    """The confirmation for several answered: on yes the signal sent to each process it
    named, by its PID and start time (the access checks both again as it sends), and what
    came of each; on anything else nothing sent to any."""
    pids = ", ".join(str(p.pid) for p in request.processes)
    if not send:
        return Notify(f"Cancelled: nothing sent to PIDs {pids}", timeout=4)
    results = [access.send(p.pid, p.started, request.signum) for p in request.processes]
    sent = [
        p.pid for p, r in zip(request.processes, results, strict=True) if r.outcome is Outcome.SENT
    ]
    lines = [r.text for r in results if r.outcome is not Outcome.SENT]
    lines += [f"Not sent to PID {pid}: {why}" for pid, why in request.refused]
    head = f"{request.name} sent to PIDs {', '.join(map(str, sent))}" if sent else "Nothing sent"
    tone: Tone = "information" if not lines else "warning"
    return Notify("\n".join([head, *lines]), title=request.name, tone=tone, timeout=8)


def untag_all(choices: Choices) -> Choices:
    """The tags spent (their signal sent): none left."""
    return choices.with_procs(replace(choices.procs, tagged=()))
