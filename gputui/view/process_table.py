"""The process table, one for the main screen and the every-process page: which processes
(this GPU or all, a user, a text), in which order (any column, either way), grouped as the
jobs they are (a launcher's ranks under it), and drawn as rows with the selected one marked.

Pure: what the user chose is ``ProcessChoices``; what the machine runs is the frame's
processes. A process is one entry whatever number of GPUs it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Final, NamedTuple

from gputui.core.config import Thresholds
from gputui.core.model import ProcessSample
from gputui.core.records import frozen
from gputui.core.sanitize import mask_secrets
from gputui.core.units import NA, fmt_bytes, fmt_num
from gputui.view import levels
from gputui.view.cells import ELLIPSIS, Cell, PidKey, Role, Row, cut, more_row, plural
from gputui.view.command_line import compact
from gputui.view.table import Column, choose

# The command keeps at least this much of a narrow table (half of it at most): enough for
# "python3 train.py --model llama" after the interpreter's directory is dropped.
COMMAND_MIN = 36
MARK = "▶"
TAG_MARK = "•"  # a tagged process not under the cursor: T I K signal every tagged one

#: a process as a tag names it: its PID and its start (a PID alone can be reused)
Tag = tuple[int, float | None]


class SortColumn(NamedTuple):
    """A column the table sorts by: its header, its key, and which way it sorts first."""

    header: str
    key: str  # the one key that sorts by it (pressed again: the other way)
    descending: bool  # largest first (figures); names, PIDs and GPUs rise


SORTS: Final[dict[str, SortColumn]] = {
    "pid": SortColumn("PID", "P", False),
    "gpu": SortColumn("GPU", "G", False),
    "user": SortColumn("USER", "U", False),
    "gpu_memory": SortColumn("GPU MEM", "M", True),
    "sm_util": SortColumn("SM%", "S", True),
    "cpu_percent": SortColumn("CPU%", "C", True),
    "rss": SortColumn("RSS", "R", True),
    "started": SortColumn("TIME", "A", True),  # the longest-running first
    "children": SortColumn("WORKERS", "W", True),
    "threads": SortColumn("THR", "H", True),
    "command": SortColumn("COMMAND", "O", False),
}


#: the text filter: what a person types to find a process, not a paste of a file
FILTER_MAX_CHARS = 200


@frozen
class ProcessChoices:
    """What the user chose for the process table, the same on the main screen and the
    every-process page."""

    sort: str = "gpu_memory"
    reverse: bool = False  # the other way than the column's own
    all_gpus: bool = False  # the main table lists every GPU's processes
    user: str | None = None
    text: str = ""  # shown only where the command, user, name or PID contains it
    pid: int | None = None  # the selected process
    offset: int = 0  # the command column scrolled this many characters
    #: the processes tagged for one signal together (space), in the order tagged
    tagged: tuple[Tag, ...] = ()

    def __post_init__(self) -> None:
        if len(self.text) > FILTER_MAX_CHARS:
            object.__setattr__(self, "text", self.text[:FILTER_MAX_CHARS])

    def sort_by(self, key: str) -> ProcessChoices:
        """Sort by ``key``; the same key again turns the order round."""
        if key == self.sort:
            return replace(self, reverse=not self.reverse)
        return replace(self, sort=key, reverse=False)

    def next_sort(self) -> ProcessChoices:
        keys = list(SORTS)
        return replace(self, sort=keys[(keys.index(self.sort) + 1) % len(keys)], reverse=False)

    def select(self, pids: Sequence[int], step: int) -> ProcessChoices:
        """The process ``step`` rows on in the order shown (the first when none is)."""
        if not pids:
            return replace(self, pid=None)
        if self.pid not in pids:
            return replace(self, pid=pids[0] if step >= 0 else pids[-1])
        at = max(0, min(len(pids) - 1, pids.index(self.pid) + step))
        return replace(self, pid=pids[at])

    def next_user(self, users: Sequence[str]) -> ProcessChoices:
        """All users, then each in turn."""
        names: list[str | None] = [None, *users]
        at = names.index(self.user) if self.user in names else 0
        return replace(self, user=names[(at + 1) % len(names)])

    def scroll(self, step: int) -> ProcessChoices:
        return replace(self, offset=max(0, self.offset + step))

    def cleared(self) -> ProcessChoices:
        """No selection, filter, scroll or tags: the table as it first was (the order
        kept)."""
        return replace(self, pid=None, user=None, text="", offset=0, tagged=())

    def toggle_tag(self, tag: Tag) -> ProcessChoices:
        """``tag`` tagged, or untagged where it was."""
        if tag in self.tagged:
            return replace(self, tagged=tuple(t for t in self.tagged if t != tag))
        return replace(self, tagged=(*self.tagged, tag))

    @property
    def tagged_pids(self) -> frozenset[int]:
        return frozenset(pid for pid, _ in self.tagged)

    @property
    def filtered(self) -> bool:
        return self.user is not None or bool(self.text)


# -- which processes, in which order --------------------------------------------------------
@frozen
class Entry:
    """One process: its samples on each GPU added up."""

    process: ProcessSample  # memory summed over its GPUs, the highest SM share
    gpus: tuple[int, ...]
    branch: str = ""  # "├ " or "└ " for a rank drawn under its launcher


@frozen
class Group:
    """The processes one launcher started (torchrun's ranks, mpirun's): one job."""

    ppid: int
    command: str | None
    members: tuple[Entry, ...]


Line = Entry | Group


def entries(processes: Sequence[ProcessSample], gpu: int | None = None) -> list[Entry]:
    """One entry per process; with ``gpu``, the processes on that GPU."""
    by_pid: dict[int, list[ProcessSample]] = {}
    for p in processes:
        by_pid.setdefault(p.pid, []).append(p)
    out = []
    for samples in by_pid.values():
        gpus = tuple(sorted({s.gpu_index for s in samples}))
        if gpu is not None and gpu not in gpus:
            continue
        first = samples[0]
        memory = [s.gpu_memory for s in samples if s.gpu_memory is not None]
        sm = [s.sm_util for s in samples if s.sm_util is not None]
        merged = replace(
            first, gpu_memory=sum(memory) if memory else None, sm_util=max(sm) if sm else None
        )
        out.append(Entry(merged, gpus))
    return out


def users(processes: Sequence[ProcessSample]) -> list[str]:
    """The users owning GPU processes, for the filter to cycle through."""
    return sorted({p.user for p in processes if p.user})


def _matches(p: ProcessSample, choices: ProcessChoices) -> bool:
    if choices.user is not None and p.user != choices.user:
        return False
    if not choices.text:
        return True
    needle = choices.text.lower()
    return any(needle in (t or "").lower() for t in (p.command, p.user, p.name, str(p.pid)))


def _value(entry: Entry, key: str) -> float | str | None:
    """What an entry sorts by; for the start time its age, so that "descending" is the
    longest-running first like every other figure."""
    if key == "gpu":
        return float(entry.gpus[0]) if entry.gpus else None
    value = getattr(entry.process, key, None)
    if value is None:
        return None
    if key == "command":  # as the table shows it, not by where the interpreter lives
        return compact(value).lower()
    if isinstance(value, str):
        return value.lower()
    return -float(value) if key == "started" else float(value)


def _sorted(items: Sequence[Entry], choices: ProcessChoices) -> list[Entry]:
    """In the chosen order, ties by PID, unknown figures last whichever the order."""
    key = choices.sort
    known = [(v, e) for e in items if (v := _value(e, key)) is not None]
    descending = SORTS[key].descending != choices.reverse
    known.sort(key=lambda ve: (ve[0], ve[1].process.pid), reverse=descending)
    return [e for _, e in known] + [e for e in items if _value(e, key) is None]


def listing(
    processes: Sequence[ProcessSample], choices: ProcessChoices, gpu: int | None = None
) -> list[Line]:
    """What the table lists, in order: the chosen processes, those one launcher started
    (two or more sharing a parent) as a group with its ranks under it."""
    shown = [e for e in entries(processes, gpu) if _matches(e.process, choices)]
    by_parent: dict[int, list[Entry]] = {}
    for e in shown:
        ppid = e.process.ppid
        if ppid is not None and ppid > 1:
            by_parent.setdefault(ppid, []).append(e)
    jobs = {ppid: members for ppid, members in by_parent.items() if len(members) > 1}
    grouped = {id(e) for members in jobs.values() for e in members}
    units: list[tuple[Entry, Line]] = [(e, e) for e in shown if id(e) not in grouped]
    for ppid, members in jobs.items():
        ordered = _sorted(members, choices)
        branches = tuple(
            replace(e, branch="└ " if i == len(ordered) - 1 else "├ ")
            for i, e in enumerate(ordered)
        )
        units.append((ordered[0], Group(ppid, ordered[0].process.parent_command, branches)))
    # a group sorts where its first rank does
    leaders = _sorted([lead for lead, _ in units], choices)
    place = {id(lead): i for i, lead in enumerate(leaders)}
    out: list[Line] = []
    for _, unit in sorted(units, key=lambda u: place[id(u[0])]):
        out.append(unit)
        if isinstance(unit, Group):
            out.extend(unit.members)
    return out


def pids_in_order(lines: Sequence[Line]) -> list[int]:
    return [line.process.pid for line in lines if isinstance(line, Entry)]


def selected_entry(lines: Sequence[Line], pid: int | None) -> Entry | None:
    return next(
        (e for e in lines if isinstance(e, Entry) and pid is not None and e.process.pid == pid),
        None,
    )


# -- the rows --------------------------------------------------------------------------------
def gpu_list(gpus: Sequence[int]) -> str:
    """'0', '0,3', '0-7', '0-3,6': the GPUs a process holds, runs folded."""
    parts: list[str] = []
    run: list[int] = []
    for g in sorted(gpus):
        if run and g == run[-1] + 1:
            run.append(g)
            continue
        if run:
            parts.append(_run(run))
        run = [g]
    if run:
        parts.append(_run(run))
    return ",".join(parts)


def _run(run: list[int]) -> str:
    if len(run) <= 2:
        return ",".join(str(g) for g in run)
    return f"{run[0]}-{run[-1]}"


def elapsed(started: float | None, now: float | None) -> str:
    """Time since the process started as ps prints it: '58:38', '2:35:12', '3-04:12:00';
    n/a when either moment is unknown."""
    if started is None or now is None:
        return NA
    seconds = int(max(0.0, now - started))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{seconds:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{seconds:02d}"
    return f"{minutes:02d}:{seconds:02d}"


def full_command(proc: ProcessSample, mask: bool) -> str:
    """The whole command line, credentials masked unless the user kept them."""
    if proc.command:
        return mask_secrets(proc.command) if mask else proc.command
    return "(not visible from this PID namespace)" if not proc.visible else NA


def shown_command(proc: ProcessSample, mask: bool, offset: int = 0) -> str:
    """The command as a row shows it: the interpreter's path dropped, scrolled ``offset``
    characters (a leading ellipsis says where it was cut)."""
    text = compact(full_command(proc, mask)) if proc.command else full_command(proc, mask)
    if offset <= 0:
        return text
    return ELLIPSIS + text[offset:] if offset < len(text) else ELLIPSIS


def _workers(p: ProcessSample) -> str:
    """'8 340%': the data-loader workers and their CPU together; '0', or n/a."""
    if not p.children:
        return fmt_num(p.children)
    if p.workers_cpu_percent is None:
        return str(p.children)
    return f"{p.children} {p.workers_cpu_percent:.0f}%"


def columns(
    t: Thresholds, now: float | None, choices: ProcessChoices, mask: bool, with_gpu: bool
) -> list[Column[Entry]]:
    def cpu_role(e: Entry) -> Role:
        return Role.WARN if levels.gil_bound(t, e.process.cpu_percent) else Role.PLAIN

    def command(e: Entry) -> str:
        return e.branch + shown_command(e.process, mask, choices.offset)

    out: list[Column[Entry]] = [Column("PID", 7, lambda e: str(e.process.pid))]
    if with_gpu:
        out.append(Column("GPU", 5, lambda e: gpu_list(e.gpus), right=False))
    out += [
        Column("USER", 10, lambda e: e.process.user or NA, right=False, drop=2),
        Column("GPU MEM", 9, lambda e: fmt_bytes(e.process.gpu_memory)),
        Column("SM%", 4, lambda e: fmt_num(e.process.sm_util), drop=4),
        Column("CPU%", 6, lambda e: fmt_num(e.process.cpu_percent, "", 0), role=cpu_role),
        Column("RSS", 9, lambda e: fmt_bytes(e.process.rss, 0), drop=3),
        Column("TIME", 10, lambda e: elapsed(e.process.started, now), drop=5),
        Column("WORKERS", 9, lambda e: _workers(e.process), drop=6),
        Column("THR", 4, lambda e: fmt_num(e.process.threads), drop=7),
        Column(
            "COMMAND",
            0,
            command,
            right=False,
            role=lambda e: Role.PLAIN if e.process.visible else Role.DIM,
        ),
    ]
    return out


_HEADERS: Final = {s.header: key for key, s in SORTS.items()}


def header_row(cols: Sequence[Column[Entry]], choices: ProcessChoices, width: int) -> Row:
    """Column names, the sorted one with its direction (↓ largest or longest first)."""
    cells = [Cell(" ", Role.DIM)]
    for i, c in enumerate(cols):
        name = c.name
        if _HEADERS.get(name) == choices.sort:
            name += "↑" if (SORTS[choices.sort].descending == choices.reverse) else "↓"
        text = (" " if i else "") + (_pad(name, c) if c.width else name)
        cells.append(Cell(text, Role.ACCENT if name != c.name else Role.DIM, bold=True))
    return Row(tuple(cells))


def _pad(text: str, column: Column[Entry]) -> str:
    text = cut(text, column.width)
    return f"{text:>{column.width}}" if column.right else f"{text:<{column.width}}"


def entry_row(
    entry: Entry,
    cols: Sequence[Column[Entry]],
    width: int,
    selected: bool,
    tagged: bool = False,
) -> Row:
    mark = MARK if selected else TAG_MARK if tagged else " "
    cells = [Cell(mark, Role.ACCENT, bold=tagged)]
    used = 1
    for i, c in enumerate(cols):
        sep = " " if i else ""
        role = c.role(entry) if c.role is not None else Role.PLAIN
        if c.width:
            text = sep + _pad(c.value(entry), c)
        else:
            text = sep + cut(c.value(entry), max(1, width - used - len(sep)))
        cells.append(Cell(text, role, reverse=selected))
        used += len(text)
    return Row(tuple(cells), PidKey(entry.process.pid), bold=selected)


def group_row(group: Group, mask: bool, width: int) -> Row:
    """'▾ torchrun --nproc-per-node 8 train.py · PID 2000 · 8 ranks on GPUs 0-7 · 95 GiB'."""
    gpus = sorted({g for e in group.members for g in e.gpus})
    memory = [e.process.gpu_memory for e in group.members if e.process.gpu_memory is not None]
    command = f"parent {group.ppid}"
    if group.command:
        command = compact(mask_secrets(group.command) if mask else group.command)
    tail = f" · PID {group.ppid} · {plural(len(group.members), 'rank')} on GPUs {gpu_list(gpus)}"
    if memory:
        tail += f" · {fmt_bytes(sum(memory))}"
    return Row(
        (
            Cell("  ▾ ", Role.DIM),
            Cell(command, Role.ACCENT, bold=True, flex=True),
            Cell(tail, Role.DIM, drop=1),
        )
    )


def table_rows(
    lines: Sequence[Line],
    cols: Sequence[Column[Entry]],
    choices: ProcessChoices,
    width: int,
    mask: bool,
    fold_workers: bool = False,
) -> list[Row]:
    """Every line as a row (the header apart); ``fold_workers`` adds a line under each
    process with data-loader workers."""
    rows = []
    tagged = choices.tagged_pids
    for line in lines:
        if isinstance(line, Group):
            rows.append(group_row(line, mask, width))
            continue
        pid = line.process.pid
        rows.append(entry_row(line, cols, width, pid == choices.pid, pid in tagged))
        if fold_workers and line.process.children:
            rows.append(_workers_row(line.process))
    return rows


def _workers_row(p: ProcessSample) -> Row:
    """'  8 workers (data loaders), CPU 340 % together': the children, folded."""
    text = f"          {plural(p.children or 0, 'worker')} (data loaders)"
    if p.workers_cpu_percent is not None:
        text += f", CPU {fmt_num(p.workers_cpu_percent)} % together"
    if p.workers_active is not None:
        text += f", {p.workers_active} busy"
    return Row((Cell(text, Role.DIM, flex=True),))


def fit_columns(
    t: Thresholds,
    now: float | None,
    choices: ProcessChoices,
    mask: bool,
    width: int,
    with_gpu: bool,
    keep: tuple[str, ...] = (),
) -> list[Column[Entry]]:
    """The columns that fit ``width`` (the selection mark takes one); the one sorted by
    is never the one left out, nor those named in ``keep`` (the command gives way)."""
    kept = (SORTS[choices.sort].header, *keep)
    every = [
        replace(c, drop=0) if c.name in kept else c
        for c in columns(t, now, choices, mask, with_gpu)
    ]
    return choose(every, width - 1, min(COMMAND_MIN, width // 2))


def window(rows: Sequence[Row], room: int, selected: int | None) -> tuple[int, int]:
    """The first row to show and how many, so that the selected row is in view with a
    line left for '+N ↓' under it where more follow."""
    if len(rows) <= room:
        return 0, len(rows)
    if room <= 1:  # no line for a marker beside it: the selected row itself
        return (selected or 0), 1
    first = 0
    if selected is not None and selected > room - 2:
        first = min(selected - room + 2, len(rows) - room + 1)
    return max(0, first), room


def selected_row(rows: Sequence[Row], pid: int | None) -> int | None:
    if pid is None:
        return None
    return next((i for i, r in enumerate(rows) if r.key == PidKey(pid)), None)


def in_view(body: Sequence[Row], room: int, pid: int | None) -> list[Row]:
    """The rows that fit ``room`` with the selected process among them, a '↑ +N' or
    '+N ↓' line where processes are hidden above or below."""
    at = selected_row(body, pid)
    first, count = window(body, room, at)
    visible = list(body[first : first + count])
    if room <= 1 and at is not None:
        return visible  # the one line is the selected process's: never a marker over it
    if first + count < len(body):
        hidden = sum(1 for r in body[first + count - 1 :] if r.key is not None)
        visible[-1] = more_row(hidden, "process", arrow="↓")
    if first > 0:
        above = sum(1 for r in body[: first + 1] if r.key is not None)
        visible[0] = more_row(above, "process", arrow="↑", above=True)
    return visible
