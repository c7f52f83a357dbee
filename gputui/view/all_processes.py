"""Every GPU process on the machine, as nvitop's process list has it: one row a process,
the GPUs it uses, GPU memory, SM share, host CPU and memory, age, user and the full
command, sortable and filtered by user, its data-loader workers folded under it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from gputui.core.config import Thresholds
from gputui.core.model import ProcessSample
from gputui.core.units import fmt_num
from gputui.view.cells import Cell, Panel, PidKey, Role, Row, more_row, plural
from gputui.view.processes import COMMAND_MIN, order, process_columns
from gputui.view.table import Column, choose, header, table_row

SORTS = ("gpu_memory", "sm_util", "cpu_percent", "rss", "started", "pid")
SORT_NAMES = {
    "gpu_memory": "GPU mem",
    "sm_util": "SM %",
    "cpu_percent": "CPU %",
    "rss": "RSS",
    "started": "age",
    "pid": "PID",
}


@dataclass(frozen=True, slots=True)
class Entry:
    """One process: its samples on each GPU added up."""

    process: ProcessSample  # the first sample, with memory and SM summed over its GPUs
    gpus: tuple[int, ...]


def entries(processes: Sequence[ProcessSample]) -> list[Entry]:
    """One entry per PID, whatever number of GPUs it holds."""
    by_pid: dict[int, list[ProcessSample]] = {}
    for p in processes:
        by_pid.setdefault(p.pid, []).append(p)
    out = []
    for samples in by_pid.values():
        first = samples[0]
        memory = [s.gpu_memory for s in samples if s.gpu_memory is not None]
        sm = [s.sm_util for s in samples if s.sm_util is not None]
        merged = replace(
            first,
            gpu_memory=sum(memory) if memory else None,
            sm_util=max(sm) if sm else None,
        )
        out.append(Entry(merged, tuple(sorted({s.gpu_index for s in samples}))))
    return out


def users(processes: Sequence[ProcessSample]) -> list[str]:
    """The users owning GPU processes, for the filter to cycle through."""
    return sorted({p.user for p in processes if p.user})


def all_processes(
    processes: Sequence[ProcessSample],
    sort_key: str,
    user: str | None,
    now: float | None,
    width: int,
    height: int,
    t: Thresholds,
    first: int = 0,
    mask: bool = False,
) -> Panel:
    """The table from row ``first`` on; ``user`` keeps only that user's processes."""
    every = entries(processes)
    shown = [e for e in every if user is None or e.process.user == user]
    shown.sort(key=lambda e: order(e.process, sort_key))
    title = f"All GPU processes ({len(shown)}"
    title += f" of {len(every)}, user {user})" if user is not None else ")"
    hint = Row(
        (
            Cell(f"by {SORT_NAMES[sort_key]} (t: sort)", bold=True),
            Cell(f"  user: {user or 'all'} (u: next)", drop=1),
            Cell("  ↑↓ scroll  esc: back", Role.DIM, drop=2),
        )
    )
    base = process_columns(t, now, mask)
    gpus: Column[ProcessSample] = Column("GPU", 5, lambda p: "")  # filled per entry below
    columns = choose([base[0], gpus, *base[1:]], width, min(COMMAND_MIN, width // 3))
    rows: list[Row] = [hint, header(columns, width)]
    if not shown:
        empty = "no GPU processes" + (f" of user {user}" if user is not None else "")
        return Panel(title, (*rows, Row((Cell(empty, Role.DIM),))))
    body: list[Row] = []
    for e in shown:
        listed = ",".join(str(g) for g in e.gpus)
        body.append(
            table_row(
                e.process,
                [_gpus_of(c, gpus, listed) for c in columns],
                width,
                PidKey(e.process.pid),
            )
        )
        workers = _workers(e.process)
        if workers is not None:
            body.append(workers)
    room = max(1, height - len(rows))
    first = max(0, min(first, len(body) - room))
    visible = body[first : first + room]
    if first + room < len(body):
        hidden = sum(1 for r in body[first + room - 1 :] if r.key is not None)
        visible[-1] = more_row(hidden, "process", arrow="↓")
    return Panel(title, (*rows, *visible))


def _gpus_of(
    column: Column[ProcessSample], gpus: Column[ProcessSample], listed: str
) -> Column[ProcessSample]:
    """The GPU column says which GPUs this entry holds ("0,3"); the others stay."""
    if column is not gpus:
        return column
    return replace(column, value=lambda _p: listed)


def _workers(p: ProcessSample) -> Row | None:
    """'  └ 8 workers (data loaders), CPU 340 % together': the children, folded."""
    if not p.children:
        return None
    text = f"        └ {plural(p.children, 'worker')} (data loaders)"
    if p.workers_cpu_percent is not None:
        text += f", CPU {fmt_num(p.workers_cpu_percent)} % together"
    return Row((Cell(text, Role.DIM, flex=True),))
