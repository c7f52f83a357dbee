"""The main screen's process table: the selected GPU's processes (or every GPU's, ``v``),
GPU memory, SM share, host CPU and memory, age, the data-loader workers, and the command,
which gets the remaining width first; the selected process's whole command line under it."""

from __future__ import annotations

from collections.abc import Sequence

from gputui.core.config import Thresholds
from gputui.core.model import DeviceInfo, ProcessSample
from gputui.view.cells import Cell, Panel, Role, Row
from gputui.view.process_table import (
    SORTS,
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
) -> Panel:
    """The table; ``mask`` hides credentials in command lines; ``lines``: the listing,
    where the caller has worked it out already (the screen sizes the panel by it);
    ``workload``: what a cluster's exporter says runs on the GPU (``workload_of``), said
    where the source reads no processes."""
    if lines is None:
        lines = listing(procs, choices, None if choices.all_gpus else gpu)
    total = len({p.pid for p in procs if choices.all_gpus or p.gpu_index == gpu})
    shown = len(pids_in_order(lines))
    cols = fit_columns(t, now, choices, mask, width, with_gpu=choices.all_gpus)
    rows: list[Row] = [header_row(cols, choices, width)]
    rows += [Row((Cell(note, Role.WARN, flex=True),)) for note in notes]
    heading = title(choices, gpu, shown, total)
    if not lines:
        empty = "no processes match" if choices.filtered else "no processes on this GPU"
        if choices.all_gpus and not choices.filtered:
            empty = "no GPU processes"
        rows.append(Row((Cell(empty, Role.DIM),)))
        if workload is not None and not choices.filtered:
            rows.append(Row((Cell(workload, Role.PLAIN, flex=True),)))
        return Panel(heading, tuple(rows))
    body = table_rows(lines, cols, choices, width, mask)
    chosen = selected_entry(lines, choices.pid)
    room = max(1, height - len(rows) - (1 if chosen is not None and height >= 6 else 0))
    visible = in_view(body, room, choices.pid)
    rows += visible
    if chosen is not None and height >= 6:
        command = full_command(chosen.process, mask)
        rows.append(Row((Cell("▸ ", Role.ACCENT), Cell(command, Role.DIM, flex=True))))
    return Panel(heading, tuple(rows))


def workload_of(device: DeviceInfo | None) -> str | None:
    """The Kubernetes workload a cluster's exporter labels the GPU with: 'pod ml/train-0
    (container trainer)'; None without one."""
    if device is None or not device.pod:
        return None
    where = f"{device.namespace}/{device.pod}" if device.namespace else device.pod
    return f"pod {where}" + (f" (container {device.container})" if device.container else "")
