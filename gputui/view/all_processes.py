"""Every GPU process on the machine, as nvitop's process list has it: one row a process,
the GPUs it uses, GPU memory, SM share, host CPU and memory, age, user and the command
(scrolled sideways with ← →), sorted by any column, filtered by user and text, a job's
ranks under their launcher and the data-loader workers folded under their process."""

from __future__ import annotations

from collections.abc import Sequence

from gputui.core.config import Thresholds
from gputui.core.model import ProcessSample
from gputui.view.cells import Cell, Panel, Role, Row
from gputui.view.process_table import (
    SORTS,
    ProcessChoices,
    fit_columns,
    header_row,
    in_view,
    listing,
    pids_in_order,
    table_rows,
)
from gputui.view.processes import NO_PROCESSES_READ


def hint_row(choices: ProcessChoices) -> Row:
    order = SORTS[choices.sort].header + (" reversed" if choices.reverse else "")
    text = f"  filter '{choices.text}' (/)" if choices.text else "  / filter"
    return Row(
        (
            Cell(f"by {order}", bold=True),
            Cell(f"  user: {choices.user or 'all'} (u)", drop=1),
            Cell(text, drop=2),
            Cell(
                "  ↑↓ select  ←→ scroll  i inspect  space tag  T K I signal  esc back",
                Role.DIM,
                drop=3,
            ),
        )
    )


def all_processes(
    processes: Sequence[ProcessSample],
    choices: ProcessChoices,
    now: float | None,
    width: int,
    height: int,
    t: Thresholds,
    mask: bool = False,
    read: bool = True,
) -> Panel:
    """The table with the selected process in view; ``read``: whether the source reads
    processes at all (``processes.reads_processes``)."""
    lines = listing(processes, choices)
    shown, total = len(pids_in_order(lines)), len({p.pid for p in processes})
    title = f"All GPU processes ({shown}" + (f" of {total})" if shown != total else ")")
    if choices.tagged:
        title += f" · {len(choices.tagged)} tagged (T I K: each)"
    # every user's processes on the machine: whose each is stays, however narrow
    cols = fit_columns(t, now, choices, mask, width, with_gpu=True, keep=("USER",))
    rows: list[Row] = [hint_row(choices), header_row(cols, choices, width)]
    if not lines:
        empty = "no GPU process matches" if choices.filtered else "no GPU processes"
        if not read and not choices.filtered:
            empty = NO_PROCESSES_READ
        return Panel(title, (*rows, Row((Cell(empty, Role.DIM),))))
    body = table_rows(lines, cols, choices, width, mask, fold_workers=True)
    room = max(1, height - len(rows))
    visible = in_view(body, room, choices.pid)
    return Panel(title, (*rows, *visible))
