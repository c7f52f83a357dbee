"""The cluster view's lines: one row per node, worst first (ranked by
gputui.advisor.nodes). Pure (no Textual): drawn as rich Text."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from gputui.advisor.nodes import NodeRow
from gputui.core.names import Severity
from gputui.core.units import NA, fmt_num

#: a GPU's cell in the strip: nothing found, info, warning, critical, no reading
_CELL = {None: "■", Severity.INFO: "■", Severity.WARNING: "▲", Severity.CRITICAL: "✖"}


def cluster_lines(
    rows: Sequence[NodeRow], selected: int, width: int, colours: dict[str, str]
) -> list[Text]:
    """The rows as lines: '▶ node-7  ■■▲■✖■■■  util 87 %  hottest 82 °C  5.2 kW  3'.

    ``colours`` maps "ok", "warn", "crit", "dim" to styles (the app's palette)."""
    name_width = min(max((len(r.node) for r in rows), default=4), max(8, width // 3))
    head = Text(
        f"  {'NODE':<{name_width}}  {'GPUS':<8}  {'UTIL':>6}  {'HOTTEST':>8}  "
        f"{'POWER':>8}  FINDINGS",
        style="bold",
    )
    head.truncate(width, overflow="ellipsis")
    lines = [head]
    for i, row in enumerate(rows):
        line = Text("▶ " if i == selected else "  ")
        name = row.node if len(row.node) <= name_width else row.node[: name_width - 1] + "…"
        line.append(f"{name:<{name_width}}  ", style="bold" if i == selected else "")
        for severity, up in zip(row.worst, row.reporting, strict=True):
            if not up:
                line.append("·", style=colours["dim"])
            elif severity is Severity.CRITICAL:
                line.append(_CELL[severity], style=colours["crit"])
            elif severity is Severity.WARNING:
                line.append(_CELL[severity], style=colours["warn"])
            else:
                line.append(_CELL[None], style=colours["ok"])
        line.append(" " * max(0, 8 - len(row.gpus)) + "  ")
        line.append(f"{fmt_num(row.util_mean, ' %'):>6}  {fmt_num(row.hottest_c, ' °C'):>8}  ")
        power = NA if row.power_w is None else f"{row.power_w / 1000:.1f} kW"
        line.append(f"{power:>8}  ")
        down = sum(1 for r in row.reporting if not r)
        line.append(
            str(row.findings) if row.findings else "none", style="bold" if row.findings else "dim"
        )
        if down:
            line.append(f"  {down} GPU(s) not reporting", style=colours["warn"])
        line.truncate(width, overflow="ellipsis")
        lines.append(line)
    if not rows:
        lines.append(Text("no GPUs", style=colours["dim"]))
    return lines
