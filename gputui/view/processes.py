"""The main screen's process table: the selected GPU's processes (or every GPU's, ``v``),
GPU memory, SM share, host CPU and memory, age, the data-loader workers, and the command,
which gets the remaining width first; the selected process's command line under it. A
note about the table (processes another PID namespace hides) takes only a row the
processes leave free: it never hides one."""

from __future__ import annotations

from collections.abc import Sequence

from gputui.core.config import Thresholds
from gputui.core.model import DeviceInfo, Frame, ProcessSample
from gputui.core.names import NoteKind
from gputui.view.cells import Cell, Panel, Role, Row, plural
from gputui.view.process_table import (
    SORTS,
    Entry,
    Line,
    ProcessChoices,
    fit_columns,
    full_command,
    header_row,
    in_view,
    listing,
    pids_in_order,
    selected_entry,
    table_rows,
)


def title(choices: ProcessChoices, gpu: int, shown: int, total: int) -> str:
    where = "all GPUs" if choices.all_gpus else f"GPU {gpu}"
    text = f"Processes on {where} · by {SORTS[choices.sort].header}"
    if choices.tagged:
        text += f" · {len(choices.tagged)} tagged (T I K: each)"
    if choices.filtered:
        text += f" · {shown} of {total}"
        if choices.user is not None:
            text += f", user {choices.user}"
        if choices.text:
            text += f", '{choices.text}'"
    return text


def processes(
    procs: Sequence[ProcessSample],
    notes: Sequence[str],
    gpu: int,
    choices: ProcessChoices,
    now: float | None,
    width: int,
    height: int,
    t: Thresholds,
    mask: bool = False,
    lines: Sequence[Line] | None = None,
    workload: str | None = None,
    reads_processes: bool = True,
) -> Panel:
    """The table in ``height`` rows; ``notes``: lines about it, shown in the rows the
    processes leave free (never in place of one); ``mask`` hides credentials in command
    lines; ``lines``: the listing, where the caller has worked it out already (the screen
    sizes the panel by it); ``workload``: what a cluster's exporter says runs on the GPU
    (``workload_of``); ``reads_processes``: False for a source that reads none (a remote
    exporter), whose empty table says so rather than "no processes"."""
    if lines is None:
        lines = listing(procs, choices, None if choices.all_gpus else gpu)
    total = len({p.pid for p in procs if choices.all_gpus or p.gpu_index == gpu})
    shown = len(pids_in_order(lines))
    cols = fit_columns(t, now, choices, mask, width, with_gpu=choices.all_gpus)
    rows: list[Row] = [header_row(cols, choices, width)]
    heading = title(choices, gpu, shown, total)
    if not lines:
        rows += _empty(choices, workload, reads_processes)
    else:
        body = table_rows(lines, cols, choices, width, mask)
        chosen = selected_entry(lines, choices.pid)
        under = chosen is not None and height >= 6
        room = max(1, height - len(rows) - (1 if under else 0))
        rows += in_view(body, room, choices.pid)
        if chosen is not None and under:
            command = full_command(chosen.process, mask)
            rows.append(Row((Cell("▸ ", Role.ACCENT), Cell(command, Role.DIM, flex=True))))
    free = max(0, height - len(rows))
    rows += [Row((Cell(note, Role.WARN, flex=True),)) for note in notes[:free]]
    return Panel(heading, tuple(rows))


def _empty(choices: ProcessChoices, workload: str | None, reads_processes: bool) -> list[Row]:
    """What an empty table says: nothing matches the filter, nothing runs, or the source
    reads no processes at all (and what its exporter says runs there, where it says)."""
    if not reads_processes and not choices.filtered:
        empty = NO_PROCESSES_READ
    elif choices.filtered:
        empty = "no processes match"
    else:
        empty = "no GPU processes" if choices.all_gpus else "no processes on this GPU"
    rows = [Row((Cell(empty, Role.DIM, flex=True),))]
    if workload is not None and not choices.filtered:
        rows.append(Row((Cell(workload, Role.PLAIN, flex=True),)))
    return rows


def reads_processes(frame: Frame | None) -> bool:
    """Whether the source reads processes at all: a remote exporter's page or a Prometheus
    server carries none, and its frames say so (a note of the rules it leaves blind)."""
    return frame is None or not any(n.kind is NoteKind.RULES_BLIND for n in frame.notes)


#: what an empty table says where the source reads no processes
NO_PROCESSES_READ = "this source reads no processes (an exporter's page carries none)"


def namespace_note(lines: Sequence[Line]) -> list[str]:
    """The note for a table that lists processes this PID namespace cannot see (NVML
    names them, /proc here does not): on the tables that list them, not on every GPU's."""
    hidden = sum(1 for line in lines if isinstance(line, Entry) and not line.process.visible)
    if not hidden:
        return []
    return [
        f"{plural(hidden, 'process')} here not visible in this PID namespace (a container "
        "without --pid=host?): host details unknown"
    ]


def workload_of(device: DeviceInfo | None) -> str | None:
    """The Kubernetes workload a cluster's exporter labels the GPU with: 'pod ml/train-0
    (container trainer)'; None without one."""
    if device is None or not device.pod:
        return None
    where = f"{device.namespace}/{device.pod}" if device.namespace else device.pod
    return f"pod {where}" + (f" (container {device.container})" if device.container else "")
