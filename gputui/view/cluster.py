"""The cluster page: one row per node, worst first (ranked by ``advisor.nodes``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gputui.core.model import DeviceInfo
from gputui.core.names import Severity
from gputui.core.units import NA, fmt_num
from gputui.view.cells import Cell, Panel, Role, Row

if TYPE_CHECKING:  # the live screen loads this module; the advisor loads after its first paint
    from gputui.advisor.nodes import NodeRow

#: a GPU's cell in the strip: nothing found or info, warning, critical
_CELL = {Severity.WARNING: ("▲", Role.WARN), Severity.CRITICAL: ("✖", Role.CRIT)}


def cluster_page(
    rows: Sequence[NodeRow], gpus: int, selected: int, width: int, height: int | None = None
) -> Panel:
    """The rows as lines: '▶ node-7  ■■▲■✖■■■  util 87 %  hottest 82 °C  5.2 kW  3'. With
    ``height`` (the lines there is room for), the nodes around the selected one, and
    "+N nodes" where rows are hidden above or below."""
    name_width = min(max((len(r.node) for r in rows), default=4), max(8, width // 3))
    title = Row(
        (
            Cell("Cluster", bold=True),
            Cell(f"  {len(rows)} node(s), {gpus} GPU(s), worst first", flex=True),
            Cell("  (↑↓ choose, Enter its GPUs, Esc back)", Role.DIM, drop=1),
        )
    )
    head = Row(
        (
            Cell(
                f"  {'NODE':<{name_width}}  {'GPUS':<8}  {'UTIL':>6}  {'HOTTEST':>8}  "
                f"{'POWER':>8}  FINDINGS",
                bold=True,
                flex=True,
            ),
        )
    )
    out = [title, Row((Cell(""),)), head]
    first, last = _window(len(rows), selected, None if height is None else height - len(out))
    if first:
        out.append(Row((Cell(f"  +{first} nodes above", Role.DIM),)))
    for i in range(first, last):
        out.append(_node_row(rows[i], i == selected, name_width))
    if last < len(rows):
        out.append(Row((Cell(f"  +{len(rows) - last} nodes below", Role.DIM),)))
    if not rows:
        out.append(Row((Cell("no GPUs", Role.DIM),)))
    return Panel("Cluster", tuple(out))


def _window(count: int, selected: int, room: int | None) -> tuple[int, int]:
    """The rows shown, [first, last): all when they fit in ``room`` lines; else the
    selected one in view, a line each kept for "+N nodes" above and below."""
    if room is None or count <= room:
        return 0, count
    shown = max(1, room - 2)
    first = max(0, min(selected - shown // 2, count - shown))
    return first, first + shown


def _node_row(row: NodeRow, selected: bool, name_width: int) -> Row:
    name = row.node if len(row.node) <= name_width else row.node[: name_width - 1] + "…"
    cells = [
        Cell("▶ " if selected else "  ", Role.ACCENT, bold=True),
        Cell(f"{name:<{name_width}}  ", bold=selected),
    ]
    for severity, up in zip(row.worst, row.reporting, strict=True):
        if not up:
            cells.append(Cell("·", Role.DIM))
            continue
        glyph, role = _CELL.get(severity, ("■", Role.OK))  # type: ignore[arg-type]
        cells.append(Cell(glyph, role))
    cells.append(Cell(" " * max(0, 8 - len(row.gpus)) + "  "))
    cells.append(Cell(f"{fmt_num(row.util_mean, ' %'):>6}  {fmt_num(row.hottest_c, ' °C'):>8}  "))
    power = NA if row.power_w is None else f"{row.power_w / 1000:.1f} kW"
    cells.append(Cell(f"{power:>8}  "))
    if row.findings:
        cells.append(Cell(str(row.findings), bold=True))
    else:
        cells.append(Cell("none", Role.DIM))
    down = sum(1 for r in row.reporting if not r)
    if down:
        cells.append(Cell(f"  {down} GPU(s) not reporting", Role.WARN, drop=1))
    return Row(tuple(cells))


#: nodes named as shown, at most (a cluster source reads these in full each tick)
SHOWN_NODES = 32


def shown_nodes(devices: Sequence[DeviceInfo], selected: int, rows: int = 48) -> tuple[str, ...]:
    """The nodes the main screen shows, most wanted first: the selected GPU's, then those
    of the ``rows`` GPUs nearest it in the list (the rows in view). Empty for local GPUs."""
    at = next((i for i, d in enumerate(devices) if d.index == selected), 0)
    first = max(0, min(at - rows // 2, len(devices) - rows))
    near = sorted(range(first, min(len(devices), first + rows)), key=lambda i: abs(i - at))
    names: dict[str, None] = {}
    for i in near:
        node = devices[i].node
        if node is not None and node not in names:
            names[node] = None
            if len(names) >= SHOWN_NODES:
                break
    return tuple(names)
