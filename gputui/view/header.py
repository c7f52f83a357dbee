"""The header line: which machine, which source (always), how fresh the data is."""

from __future__ import annotations

import time

from gputui.core.names import NoteKind, SourceKind
from gputui.core.records import frozen
from gputui.core.units import NA, fmt_duration
from gputui.sampling.monitor import Monitor
from gputui.view.cells import Cell, Role, Row
from gputui.view.gpu_list import critical_count


@frozen
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
    readonly: bool = False  # --readonly: no signal is sent from this screen


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
    if h.readonly:  # never dropped: a screen others watch says it sends no signal
        cells.append(Cell(" read-only ", Role.DIM, reverse=True))
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


@frozen
class Replaying:
    """A recording being played: how fast, and the moments it spans."""

    speed: float
    interval_s: float  # as recorded
    start: float | None
    end: float | None


def moment(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def position_text(replay: Replaying, shown: float | None) -> str | None:
    """'12 min 05 s of 45 min': where the frame shown lies in the recording."""
    if replay.start is None or replay.end is None or shown is None:
        return None
    return f"{fmt_duration(shown - replay.start)} of {fmt_duration(replay.end - replay.start)}"


def header_state(
    monitor: Monitor,
    *,
    hostname: str,
    interval_s: float,
    age_s: float | None,
    paused: bool,
    replay: Replaying | None = None,
    error: str | None = None,
    readonly: bool = False,
) -> HeaderState:
    """The header from the monitor; ``age_s`` is how old the newest reading is (None when
    no sampler runs), ``hostname`` the machine's name for a local source."""
    frame = monitor.latest
    first = monitor.devices[0] if monitor.devices else None
    if replay is not None:
        interval_s, age_s = replay.interval_s, None  # as recorded; the speed is in the label
    stale = age_s is not None and age_s > max(5.0, 3 * interval_s) and not paused
    nodes = list(dict.fromkeys(d.node for d in monitor.devices if d.node is not None))
    host = (
        ", ".join(nodes)  # remote: the nodes shown, not the machine gputui runs on
        or (frame.host.hostname if frame and frame.host else None)
        or hostname
    )
    source = monitor.source
    shown = frame.time if frame is not None else None
    return HeaderState(
        hostname=host,
        driver=first.driver_version if first else None,
        cuda=first.cuda_driver_version if first else None,
        gpus=len(monitor.devices),
        interval_s=interval_s,
        age_s=None if frame is None else (age_s if age_s and age_s >= 2 * interval_s else 0.0),
        stale=stale,
        source=f"REPLAY {replay.speed:g}x" if replay is not None else source.label,
        source_detail=source.detail,
        live=source.kind is SourceKind.LIVE,
        paused=paused,
        findings=len(monitor.findings),
        critical=critical_count(monitor.findings),
        moment=moment(shown) if replay is not None and shown is not None else None,
        position=position_text(replay, shown) if replay is not None else None,
        readonly=readonly,
        nodes=len(nodes),
        down=sum(
            1
            for n in (frame.notes if frame else ())
            if n.kind in (NoteKind.NODE_DOWN, NoteKind.NODE_EMPTY)
        ),
        error=error if stale else None,
    )
