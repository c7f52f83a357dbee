"""The processes on the selected GPU: GPU memory, SM share, host CPU and memory, age, the
data-loader workers, and the command, which gets the remaining width first."""

from __future__ import annotations

from collections.abc import Sequence

from gputui.core.config import Thresholds
from gputui.core.model import ProcessSample
from gputui.core.sanitize import mask_secrets
from gputui.core.units import NA, fmt_bytes, fmt_num
from gputui.view import levels
from gputui.view.cells import Cell, Panel, PidKey, Role, Row, more_row
from gputui.view.table import Column, choose, header, table_row

SORT_KEYS = ("gpu_memory", "cpu_percent", "rss", "pid")
SORT_LABELS = {"gpu_memory": "GPU mem", "cpu_percent": "CPU %", "rss": "RSS", "pid": "PID"}
COMMAND_MIN = 24


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


def command_of(proc: ProcessSample, mask: bool) -> str:
    if proc.command:
        return mask_secrets(proc.command) if mask else proc.command
    return "(not visible from this PID namespace)" if not proc.visible else NA


def process_columns(
    t: Thresholds, now: float | None, mask: bool, with_gpu: bool = False
) -> list[Column[ProcessSample]]:
    def cpu_role(p: ProcessSample) -> Role:
        return Role.WARN if levels.gil_bound(t, p.cpu_percent) else Role.PLAIN

    columns: list[Column[ProcessSample]] = [Column("PID", 7, lambda p: str(p.pid))]
    if with_gpu:
        columns.append(Column("GPU", 3, lambda p: str(p.gpu_index)))
    columns += [
        Column("USER", 10, lambda p: p.user or NA, right=False, drop=3),
        Column("GPU MEM", 9, lambda p: fmt_bytes(p.gpu_memory)),
        Column("SM%", 4, lambda p: fmt_num(p.sm_util), drop=4),
        Column("CPU%", 6, lambda p: fmt_num(p.cpu_percent, "", 0), role=cpu_role),
        Column("RSS", 9, lambda p: fmt_bytes(p.rss, 0), drop=2),
        Column("TIME", 10, lambda p: elapsed(p.started, now), drop=5),
        Column("WORKERS", 7, lambda p: fmt_num(p.children), drop=6),
        Column("THR", 4, lambda p: fmt_num(p.threads), drop=7),
        Column(
            "COMMAND",
            0,
            lambda p: command_of(p, mask),
            right=False,
            role=lambda p: Role.PLAIN if p.visible else Role.DIM,
        ),
    ]
    return columns


def order(proc: ProcessSample, key: str) -> tuple[int, float]:
    """Where a process sorts by ``key``: PIDs rising, the start time oldest first (the job
    that has run longest), everything else largest first; unknown figures last."""
    value = getattr(proc, key)
    if key == "pid":
        return (0, float(value))
    if value is None:
        return (1, 0.0)
    return (0, float(value) if key == "started" else -float(value))


def sort_processes(processes: Sequence[ProcessSample], key: str) -> list[ProcessSample]:
    return sorted(processes, key=lambda proc: order(proc, key))


def processes(
    procs: Sequence[ProcessSample],
    notes: Sequence[str],
    gpu: int,
    sort_key: str,
    now: float | None,
    width: int,
    height: int,
    t: Thresholds,
    mask: bool = False,
) -> Panel:
    """The table; ``mask`` hides credentials in command lines (for files)."""
    title = f"Processes on GPU {gpu} · by {SORT_LABELS[sort_key]} (t)"
    columns = choose(process_columns(t, now, mask), width, min(COMMAND_MIN, width // 3))
    rows: list[Row] = [header(columns, width)]
    rows += [Row((Cell(note, Role.WARN, flex=True),)) for note in notes]
    if not procs:
        rows.append(Row((Cell("no processes on this GPU", Role.DIM),)))
        return Panel(title, tuple(rows))
    ordered = sort_processes(procs, sort_key)
    room = max(1, height - len(rows))
    if len(ordered) > room:
        shown, hidden = ordered[: room - 1], ordered[room - 1 :]
    else:
        shown, hidden = ordered, []
    rows += [table_row(p, columns, width, PidKey(p.pid)) for p in shown]
    if hidden:
        more = more_row(len(hidden), "process")
        rows.append(Row((*more.cells, Cell("  (a: every GPU process)", Role.DIM, drop=1))))
    return Panel(title, tuple(rows))
