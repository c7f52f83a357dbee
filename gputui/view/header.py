"""The header line: which machine, which source (always), how fresh the data is."""

from __future__ import annotations

from dataclasses import dataclass

from gputui.units import NA, fmt_duration
from gputui.view.cells import Cell, Role, Row


@dataclass(frozen=True, slots=True)
class HeaderState:
    hostname: str
    driver: str | None
    cuda: str | None
    gpus: int
    interval_s: float
    age_s: float | None  # None: no frame yet; 0: fresh
    stale: bool
    #: where the readings come from, always shown: "NVML", "SIMULATED", "REPLAY 2x"...
    source: str
    #: the source's particulars: the demo's scenarios, the replay file, the remote nodes
    source_detail: str | None
    live: bool
    paused: bool
    findings: int
    critical: int = 0
    moment: str | None = None  # a replay's recorded time of the frame shown
    position: str | None = None  # a replay's "3 min 10 s of 45 min"
    nodes: int = 1
    down: int = 0
    error: str | None = None  # the sampler's last error, shown while the data is stale


def header_row(h: HeaderState) -> Row:
    """'gputui  NVML  node-7  8 GPUs  every 1 s  2 findings  driver 550.54  CUDA 12.4'.

    Cells that tell whether the data can be trusted (source, staleness, pause) are never
    dropped; versions and the source's particulars go first when the line is short."""
    cells = [Cell(" gputui ", Role.ACCENT, bold=True, reverse=True)]
    cells.append(
        Cell(f" {h.source} ", Role.ACCENT if h.live else Role.WARN, bold=True, reverse=True)
    )
    if h.paused:
        cells.append(Cell(" PAUSED ", Role.WARN, bold=True, reverse=True))
    cells.append(Cell(f" {h.hostname}", bold=True, flex=True))
    if h.moment:
        cells.append(Cell(f"  {h.moment}", bold=True))
    if h.position:
        cells.append(Cell(f"  {h.position}", Role.DIM))
    cells.append(Cell(f"  {h.gpus} GPU{'s' if h.gpus != 1 else ''}"))
    cells.append(Cell(f"  every {h.interval_s:g} s", drop=2))
    if h.age_s is None:
        cells.append(Cell("  waiting for data", Role.DIM))
    elif h.stale:
        cells.append(Cell(f"  STALE: no data for {fmt_duration(h.age_s)}", Role.CRIT, bold=True))
        if h.error:
            cells.append(Cell(f"  last error: {h.error}", Role.DIM, drop=1, flex=True))
    elif h.age_s > 0:
        cells.append(Cell(f"  data {h.age_s:.0f} s old", Role.WARN))
    if h.nodes > 1:
        cells.append(Cell(f"  {h.nodes} nodes", drop=3))
    if h.down:
        cells.append(Cell(f"  {h.down} node{'s' if h.down != 1 else ''} down", Role.CRIT, True))
    if h.findings:
        noun = "finding" if h.findings == 1 else "findings"
        text = f"  {h.findings} {noun}" + (f", {h.critical} critical" if h.critical else "")
        cells.append(Cell(text, Role.CRIT if h.critical else Role.WARN, bold=True))
    cells.append(Cell(f"  driver {h.driver or NA}  CUDA {h.cuda or NA}", Role.DIM, drop=4))
    if h.source_detail:
        cells.append(Cell(f"  {h.source_detail}", Role.DIM, flex=True))
    return Row(tuple(cells))
