"""One process looked into (``i`` on a selected process): who and what it is, its GPUs, its
tree, the NVIDIA devices it holds, where it may run and where its memory sits, its own
history as sparklines, and its environment with what changes a GPU job first. Also the
confirmation a signal needs, naming everything the user should check before sending it.

Rows of cells like every page; the environment and the tree come from a live look
(``ProcessDetails``) where the process is this machine's, and the page says so where it
is not (a demo, a recording, a remote node)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from gputui.core.model import DeviceInfo, ProcessSample
from gputui.core.process_access import ProcessDetails
from gputui.core.sanitize import clean, mask_secrets, mask_variable
from gputui.core.units import NA, fmt_bytes, fmt_duration, fmt_num
from gputui.sampling.process_history import ProcessHistory, ProcessMetric
from gputui.view.cells import Cell, Panel, Role, Row, plural, wrap
from gputui.view.command_line import compact
from gputui.view.glyphs import spark
from gputui.view.process_table import elapsed, entries, full_command

LABEL = 12  # the label column
MAX_CHILDREN_SHOWN = 12
TITLE_NAME_CHARS = 40  # the process's name in the page's title, at most
# What changes how a GPU job runs, shown before the rest of the environment.
_FIRST: Final = (
    "CUDA_",
    "NCCL_",
    "PYTORCH_",
    "TORCH_",
    "OMP_",
    "MKL_",
    "CUDNN",
    "NVIDIA_",
    "XLA_",
    "TF_",
    "JAX_",
    "HF_",
    "TRANSFORMERS_",
    "MASTER_",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "SLURM_",
    "OMPI_",
    "PMI_",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
)


def _percent(value: float) -> str:
    return fmt_num(value, " %")


_HISTORY: Final[tuple[tuple[ProcessMetric, str, Callable[[float], str]], ...]] = (
    (ProcessMetric.GPU_MEMORY, "GPU memory", fmt_bytes),
    (ProcessMetric.SM, "SM %", _percent),
    (ProcessMetric.CPU, "CPU %", _percent),
    (ProcessMetric.RSS, "RSS", fmt_bytes),
)


def _field(label: str, text: str, width: int, role: Role = Role.PLAIN) -> list[Row]:
    """'Label       text', the text wrapped under itself."""
    lines = wrap(text, max(10, width - LABEL)) or [""]
    rows = []
    for i, line in enumerate(lines):
        lead = f"{label:<{LABEL}}" if i == 0 else " " * LABEL
        rows.append(Row((Cell(lead, Role.DIM, bold=i == 0), Cell(line, role))))
    return rows


def process_tops(
    devices: Sequence[DeviceInfo], samples: Sequence[ProcessSample]
) -> dict[ProcessMetric, float]:
    """The most each reading of a process could be: the memory of the GPUs it is on."""
    gpus = {s.gpu_index for s in samples}
    tops: dict[ProcessMetric, float] = {}
    memory = sum(d.memory_total or 0 for d in devices if d.index in gpus)
    if memory:
        tops[ProcessMetric.GPU_MEMORY] = float(memory)
    return tops


def _heading(text: str) -> list[Row]:
    return [Row(()), Row((Cell(text, Role.ACCENT, bold=True),))]


def environment_order(variable: str) -> tuple[int, str]:
    """The variables that change a GPU job first (CUDA_*, NCCL_*, PYTORCH_*, ...), then the
    rest, each part by name."""
    name = variable.split("=", 1)[0]
    first = any(name.startswith(p) for p in _FIRST)
    return (0 if first else 1, name)


def process_page(
    samples: Sequence[ProcessSample],
    details: ProcessDetails | None,
    history: ProcessHistory,
    now: float | None,
    width: int,
    mask: bool = True,
    why_no_details: str = "",
    tops: dict[ProcessMetric, float] | None = None,
) -> Panel:
    """The page of one process, from its samples on each GPU (one frame), a live look at
    it (None: not this machine's, ``why_no_details`` says why) and its history, each
    reading drawn against ``tops`` (the most it could be)."""
    if not samples:
        return Panel("Process", (Row((Cell("This process is no longer on a GPU.", Role.DIM),)),))
    (entry,) = entries(samples)
    p = entry.process
    command = full_command(p, mask)
    rows: list[Row] = [Row((Cell(compact(command), Role.ACCENT, bold=True),))]
    if details is not None and details.gone:
        rows += [Row((Cell("It has ended (or its PID now names another process).", Role.WARN),))]
    rows += _identity(p, entry.gpus, samples, now, command, width)
    rows += _tree(p, details, mask, width)
    rows += _placement(p, details, width)
    rows += _history(p, history, width, {ProcessMetric.SM: 100.0, **(tops or {})})
    rows += _environment(p, details, mask, width, why_no_details)
    return Panel(f"Process {p.pid}", tuple(rows), _name(p))


def _name(p: ProcessSample) -> str:
    """What the page's title calls the process: its name, else its program (outside
    text, cleaned; a command's arguments stay in the page, where credentials are masked)."""
    name = p.name or (p.command.split()[0].rsplit("/", 1)[-1] if p.command else "")
    return clean(name, TITLE_NAME_CHARS)


def _identity(
    p: ProcessSample,
    gpus: Sequence[int],
    samples: Sequence[ProcessSample],
    now: float | None,
    command: str,
    width: int,
) -> list[Row]:
    per_gpu = ", ".join(
        f"GPU {s.gpu_index}: {fmt_bytes(s.gpu_memory)}"
        + (f", SM {fmt_num(s.sm_util)} %" if s.sm_util is not None else "")
        for s in sorted(samples, key=lambda s: s.gpu_index)
    )
    rows = _field("Command", command, width)
    rows += _field("User", p.user or NA, width)
    rows += _field("Running", f"{elapsed(p.started, now)} ({p.kind})", width)
    rows += _field("GPUs" if len(gpus) > 1 else "GPU", per_gpu, width)
    host = f"CPU {fmt_num(p.cpu_percent, ' %')}, RSS {fmt_bytes(p.rss)}"
    host += f", {plural(p.threads, 'thread')}" if p.threads is not None else ""
    rows += _field("Host", host, width)
    if p.cuda_runtime:
        runtime = f"CUDA runtime {p.cuda_runtime}"
        if p.cuda_runtime_evidence:
            runtime += f" ({p.cuda_runtime_evidence})"
        rows += _field("CUDA", runtime, width)
    return rows


def _tree(p: ProcessSample, d: ProcessDetails | None, mask: bool, width: int) -> list[Row]:
    rows = _heading("Tree")
    parent = d.parent if d is not None and d.parent is not None else None
    if parent is not None:
        text = f"{parent.pid} {_command(parent.command, mask)}"
    elif p.ppid is not None:
        text = f"{p.ppid} {_command(p.parent_command, mask)}"
    else:
        text = NA
    rows += _field("Parent", text, width)
    if d is not None and not d.gone:
        kids = d.children
        text = plural(len(kids), "child") if kids else "none"
        if p.workers_active is not None and kids:
            text += f" ({p.workers_active} busy)"
        rows += _field("Children", text, width)
        for child in kids[:MAX_CHILDREN_SHOWN]:
            cpu = (
                f"{fmt_num(child.cpu_percent):>5} %" if child.cpu_percent is not None else "    –  "
            )
            line = f"{child.pid:>7} {cpu}  {_command(child.command, mask)}"
            rows.append(Row((Cell(" " * LABEL), Cell(line, Role.PLAIN, flex=True))))
        if len(kids) > MAX_CHILDREN_SHOWN:
            more = f"+{len(kids) - MAX_CHILDREN_SHOWN} more"
            rows.append(Row((Cell(" " * LABEL), Cell(more, Role.DIM))))
        devices = ", ".join(d.gpu_devices) if d.gpu_devices else "none open"
        rows += _field("Devices", devices, width)
    else:
        workers = fmt_num(p.children)
        if p.workers_cpu_percent is not None:
            workers += f" workers, CPU {fmt_num(p.workers_cpu_percent)} % together"
        rows += _field("Children", workers, width)
    return rows


def _placement(p: ProcessSample, d: ProcessDetails | None, width: int) -> list[Row]:
    parts = []
    if p.cpus_allowed:
        nodes = ", ".join(str(n) for n in p.cpu_nodes)
        parts.append(f"CPUs {p.cpus_allowed}" + (f" (NUMA {nodes})" if nodes else ""))
    if p.numa_memory and any(p.numa_memory):
        parts.append(
            "memory "
            + ", ".join(f"node {i} {fmt_bytes(b)}" for i, b in enumerate(p.numa_memory) if b)
        )
    if not parts:
        return []
    return _field("Placement", "; ".join(parts), width)


def _history(
    p: ProcessSample, history: ProcessHistory, width: int, tops: dict[ProcessMetric, float]
) -> list[Row]:
    """One sparkline a reading, scaled to what it could reach (the GPUs' memory, 100 % of
    the SMs) or above its highest, newest at the right."""
    room = max(8, width - LABEL - 12)
    rows = _heading("History (while it has run on a GPU here)")
    span = ""
    for metric, label, fmt in _HISTORY:
        times, values = history.series(p.pid, p.started, metric)
        if not times:
            return [*rows, Row((Cell("none kept yet", Role.DIM),))]
        times, values = times[-room:], values[-room:]
        span = f"the last {fmt_duration(times[-1] - times[0])}, newest at the right"
        known = [v for v in values if v == v]
        # without a ceiling (CPU, RSS): a quarter above its highest, so a steady reading
        # is a steady line below the top and growth shows
        top = tops.get(metric) or 1.25 * max([100.0 if metric is ProcessMetric.CPU else 0, *known])
        last = fmt(known[-1]) if known else NA
        rows.append(
            Row(
                (
                    Cell(f"{label:<{LABEL}}", Role.DIM),
                    Cell(spark(values, top), Role.ACCENT),
                    Cell(f" {last}"),
                )
            )
        )
    rows.append(Row((Cell(" " * LABEL), Cell(span, Role.DIM))))
    return rows


def _environment(
    p: ProcessSample, d: ProcessDetails | None, mask: bool, width: int, why_not: str
) -> list[Row]:
    if d is not None and d.environment:
        variables = sorted(d.environment, key=environment_order)
        rows = _heading(f"Environment ({len(variables)} variables, the GPU's first)")
    else:
        variables = sorted(p.env, key=environment_order)
        rows = _heading("Environment (the variables gputui reads with the readings)")
        unreadable = dict(d.unreadable) if d is not None else {}
        reason = unreadable.get("environment") or why_not
        if reason:
            rows += [Row((Cell(line, Role.DIM),)) for line in wrap(reason, width)]
    for variable in variables:
        shown = mask_variable(variable) if mask else variable
        rows.append(Row((Cell(shown, Role.PLAIN, flex=True),)))
    if d is not None:
        for part, why in d.unreadable:
            if part != "environment":
                rows += _field(part.capitalize(), f"not readable: {why}", width, Role.DIM)
    return rows


def _command(command: str | None, mask: bool) -> str:
    if not command:
        return NA
    return compact(mask_secrets(command) if mask else command)


def signal_page(
    p: ProcessSample, signal_name: str, root: bool, width: int, mask: bool = True
) -> Panel:
    """What a signal will hit, in full, before it is sent: the PID, its owner, its command
    and the signal; y sends, anything else does not."""
    rows = [
        Row((Cell(f"Send {signal_name} to PID {p.pid}?", Role.WARN, bold=True),)),
        Row(()),
    ]
    owner = p.user or NA
    if root:
        owner += " (you are root: this may be another user's job)"
    rows += _field("User", owner, width)
    rows += _field("Command", full_command(p, mask), width)
    rows += _field("Running", f"GPU {p.gpu_index}, {fmt_bytes(p.gpu_memory)}", width)
    rows += [Row(()), _answers("send")]
    return Panel(f"{signal_name} PID {p.pid}", tuple(rows))


def _answers(send: str) -> Row:
    """'y send    n / Esc cancel: nothing is sent'."""
    cells = (
        Cell("y", Role.ACCENT, bold=True),
        Cell(f" {send}    "),
        Cell("n / Esc", Role.ACCENT, bold=True),
        Cell(" cancel: nothing is sent"),
    )
    return Row(cells)


def signals_page(
    processes: Sequence[ProcessSample],
    signal_name: str,
    root: bool,
    width: int,
    mask: bool = True,
    refused: Sequence[tuple[int, str]] = (),
) -> Panel:
    """What one signal to every tagged process will hit, each named in full before any is
    sent (its PID, owner, command and GPU), then the tagged ones it will not be sent to and
    why; y sends to each, anything else to none."""
    rows = [
        Row(
            (
                Cell(
                    f"Send {signal_name} to {plural(len(processes), 'process')}?",
                    Role.WARN,
                    bold=True,
                ),
            )
        ),
    ]
    if root:
        rows.append(Row((Cell("you are root: some may be other users' jobs", Role.DIM),)))
    for p in processes:
        rows.append(Row(()))
        rows.append(Row((Cell(f"PID {p.pid}", Role.ACCENT, bold=True),)))
        rows += _field("User", p.user or NA, width)
        rows += _field("Command", full_command(p, mask), width)
        rows += _field("Running", f"GPU {p.gpu_index}, {fmt_bytes(p.gpu_memory)}", width)
    if refused:
        rows += [Row(()), Row((Cell("Not sent to", Role.WARN, bold=True),))]
        for pid, why in refused:
            rows += _field(f"PID {pid}", why, width)
    rows += [Row(()), _answers("send to each")]
    return Panel(f"{signal_name} {plural(len(processes), 'process')}", tuple(rows))
