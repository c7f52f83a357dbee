"""The GPU list: one line per GPU under column headers, the selected one kept in view and
every cut saying how many GPUs it hides, and whether a critical one is among them."""

from __future__ import annotations

from collections.abc import Sequence

from gputui.core.config import Thresholds
from gputui.core.model import DeviceInfo, Finding, Frame, GpuSample
from gputui.core.names import Severity
from gputui.core.records import frozen
from gputui.core.units import fmt_num, known, short_name
from gputui.view import levels
from gputui.view.cells import Cell, GpuKey, Panel, Role, Row, more_row
from gputui.view.glyphs import bar

SEVERITY_MARK = {Severity.CRITICAL: "✖", Severity.WARNING: "▲", Severity.INFO: "●"}
SEVERITY_ROLE = {
    Severity.CRITICAL: Role.CRIT,
    Severity.WARNING: Role.WARN,
    Severity.INFO: Role.ACCENT,
}
_TAIL = 6 + 6 + 2  # " 70°C", "  560W", " ✖"


@frozen
class Columns:
    index: int  # digits of the largest index: "10" never glues to the name
    name: int
    bar: int


def columns(devices: Sequence[DeviceInfo], width: int) -> Columns:
    """The name is read first: it gets its length (up to 18) before the bars grow."""
    index = max((len(str(d.index)) for d in devices), default=1)
    rest = width - (1 + index + 1) - _TAIL
    longest = max((len(short_name(d.name)) for d in devices), default=4)
    name = max(4, min(18, longest, rest - 2 * (3 + 6)))
    gauge = max(3, min(12, (rest - name - 1 - 12) // 2))
    return Columns(index, name, gauge)


def header(c: Columns) -> Row:
    text = (
        f" {'#':>{c.index}} {'NAME':<{c.name}} {'UTIL':<{c.bar + 5}} {'VRAM':<{c.bar + 5}}"
        f"{'TEMP':>6} {'POWER':>5}"
    )
    return Row((Cell(text, Role.DIM, bold=True, flex=True),))


def gpu_row(
    sample: GpuSample | None,
    device: DeviceInfo,
    mine: Sequence[Finding],
    selected: bool,
    c: Columns,
    t: Thresholds,
) -> Row:
    """'▶ 3 H100 80GB HBM3  ████▌      97%  ██▌    61%  70°C  560W ✖'."""
    name = short_name(device.name)
    if len(name) > c.name:
        name = name[: c.name - 1] + "…"
    cells = [
        Cell("▶" if selected else " ", Role.ACCENT, bold=True),
        Cell(f"{device.index:>{c.index}} {name:<{c.name}} ", bold=selected),
    ]
    if sample is None or sample.lost:
        cells.append(Cell("LOST: fell off the bus" if sample else "no data", Role.CRIT, bold=True))
    else:
        util, mem = sample.util_gpu, sample.mem_used_pct
        cells.append(bar(levels.share(util, 100), c.bar, Role.ACCENT))
        cells.append(Cell(f" {fmt_num(util):>3}% " if known(util) else "  n/a "))
        cells.append(bar(levels.share(mem, 100), c.bar, levels.vram(t, mem)))
        cells.append(Cell(f" {fmt_num(mem):>3}% " if known(mem) else "  n/a "))
        cells.append(Cell(f"{fmt_num(sample.temp_c):>3}°C", levels.temp(t, sample, device)))
        cells.append(Cell(f" {fmt_num(sample.power_w):>4}W", drop=1))
    if mine:
        worst = mine[0]
        cells.append(
            Cell(f" {SEVERITY_MARK[worst.severity]}", SEVERITY_ROLE[worst.severity], bold=True)
        )
    return Row(tuple(cells), GpuKey(device.index), bold=selected)


def worst(findings: Sequence[Finding], gpu: int) -> Severity | None:
    """The severity of a GPU's worst finding (the advisor lists the worst first)."""
    return next((f.severity for f in findings if f.gpu == gpu), None)


def critical_count(findings: Sequence[Finding]) -> int:
    return sum(1 for f in findings if f.severity is Severity.CRITICAL)


def _gpus(rows: Sequence[tuple[int | None, Row]]) -> list[int]:
    return [gpu for gpu, _ in rows if gpu is not None]


def gpu_list(
    frame: Frame | None,
    devices: Sequence[DeviceInfo],
    findings: Sequence[Finding],
    selected: int,
    width: int,
    height: int,
    t: Thresholds,
) -> Panel:
    """Column headers, then a line per GPU (grouped under their node for remote sources).
    When they do not all fit, the selected GPU stays in view and each cut says what it hides:
    '↑ +2 GPUs', '+4 GPUs ↓, 1 critical'."""
    samples = {s.index: s for s in frame.gpus} if frame is not None else {}
    c = columns(devices, width)
    body: list[tuple[int | None, Row]] = []  # (GPU index or None for a node line, row)
    node: str | None = None
    for d in devices:
        if d.node is not None and d.node != node:  # remote sources: GPUs grouped by node
            node = d.node
            body.append((None, Row((Cell(f"── {node} ", Role.DIM, bold=True, flex=True),))))
        mine = [f for f in findings if f.gpu == d.index]
        body.append((d.index, gpu_row(samples.get(d.index), d, mine, d.index == selected, c, t)))
    title = f"GPUs ({len(devices)})"
    room = height - 1
    if height <= 0 or len(body) <= room:
        return Panel(title, (header(c), *(r for _, r in body)))
    if room < 3:  # no room for the markers beside the selected row: they go in the title
        at = _position(body, selected)
        above, below = len(_gpus(body[:at])), len(_gpus(body[at + 1 :]))
        title += f" ↑{above} ↓{below}"
        kept = (header(c), body[at][1]) if height >= 2 else (body[at][1],)
        return Panel(title, kept)
    shown = _window(body, selected, room)
    start, end = shown
    rows: list[Row] = [header(c)]
    if start > 0:
        rows.append(hidden_gpus(_gpus(body[:start]), findings, "↑", above=True))
    rows.extend(r for _, r in body[start:end])
    if end < len(body):
        rows.append(hidden_gpus(_gpus(body[end:]), findings, "↓"))
    return Panel(title, tuple(rows[: max(1, height)]))


def _position(body: Sequence[tuple[int | None, Row]], selected: int) -> int:
    """The selected GPU's row in ``body`` (the first row where it has none)."""
    return next((i for i, (gpu, _) in enumerate(body) if gpu == selected), 0)


def _window(body: Sequence[tuple[int | None, Row]], selected: int, room: int) -> tuple[int, int]:
    """Which rows of ``body`` show in ``room`` lines, markers for the hidden ones included."""
    position = _position(body, selected)
    total = len(body)
    visible = max(1, room - 1)  # one line says what is below
    start = min(max(0, position - visible // 2), total - visible)
    if start > 0:  # ... and one what is above
        visible = max(1, room - 2)
        start = min(max(1, position - visible // 2), total - visible)
        if start + visible >= total:  # nothing below after all: that line shows a GPU
            visible = room - 1
            start = total - visible
    return start, start + visible


def hidden_gpus(
    gpus: Sequence[int], findings: Sequence[Finding], arrow: str, above: bool = False
) -> Row:
    """'+4 GPUs, 1 critical ↓': the GPUs a cut hides, and how many of them are critical."""
    critical = sum(1 for gpu in gpus if worst(findings, gpu) is Severity.CRITICAL)
    return more_row(len(gpus), "GPU", arrow=arrow, critical=critical, above=above)
