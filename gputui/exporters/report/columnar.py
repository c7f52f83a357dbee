"""A version-3 block's ticks taken at once by a report's monitor: the history filled a
column at a time between judgements, a tick's ``Frame`` built only where the advisor
judges (and at the block's end, the history's latest), instead of one a tick.

What the monitor, the advisor and the run log hold after a block is what taking its
frames one by one (``Monitor.ingest``) leaves: the advisor judges at the same ticks
(``Advisor.due``), keeps every tick's driver samples and process CPU, and the run log
sees every tick's processes and the findings as they stood. Only a plain block goes this
way (``columns_of``): every GPU read at every tick in the same slot, none lost, no Xid;
any other is taken frame by frame. Every value was checked when the block was read
(``formats/blocks``), as for the frames.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from operator import attrgetter
from typing import Any, Final, TypeAlias

from gputui.advisor.engine import Advisor
from gputui.core.model import Finding
from gputui.core.names import HostMetric, Metric
from gputui.core.records import frozen
from gputui.formats.blocks import Block
from gputui.sampling.history import NO_REASONS
from gputui.sampling.monitor import Monitor

NAN: Final = float("nan")
_HOST_READINGS: Final = attrgetter(*(m.value for m in HostMetric))
_REASONS: Final = "clock_reasons"


#: per GPU (index), a ``float32`` column a Metric asked for (NaN: no reading) and the
#: clock-event masks (``NO_REASONS``: unknown)
GpuColumns: TypeAlias = "dict[int, tuple[list[array[float]], array[int]]]"


@frozen
class Columns:
    """A plain block's readings as the history holds them: per GPU a column a Metric, in
    their order; the host's a HostMetric; and each GPU's driver utilisation samples, one
    tuple a tick."""

    gpus: GpuColumns
    host: list[array[float]]
    utilisation: tuple[tuple[int, list[tuple[float, ...]]], ...]


def plain_slots(block: Block, xids: bool = True) -> list[int] | None:
    """Each GPU slot's index where every tick of the block reads the same GPUs in the same
    slots, none lost and (``xids``) no Xid; None for any other block."""
    ticks = len(block)
    slots = len(block.gpus)
    if any(count != slots for count in block.counts):
        return None
    indices = []
    for slot in range(slots):
        index = block.field(slot, "index")
        if index.count(index[0]) != ticks or any(block.field(slot, "lost")):
            return None
        if xids and any(block.field(slot, "xid_events")):
            return None
        indices.append(index[0])
    return indices if len(set(indices)) == slots else None


def gpu_columns(block: Block, indices: Sequence[int], metrics: Sequence[Metric]) -> GpuColumns:
    """A plain block's (``plain_slots``) GPUs' columns of ``metrics`` and masks."""
    return {
        index: (
            [_floats(block.field(slot, m.value)) for m in metrics],
            array(
                "q", [NO_REASONS if r is None else r for r in block.field(slot, "clock_reasons")]
            ),
        )
        for slot, index in enumerate(indices)
    }


def columns_of(block: Block) -> Columns | None:
    """The columns of a plain block; None for any other (a GPU missing at some tick, lost,
    in another slot, an Xid: those go frame by frame)."""
    indices = plain_slots(block)
    if indices is None:
        return None
    readings = [None if h is None else _HOST_READINGS(h) for h in block.hosts]
    host = [
        _floats([None if row is None else row[k] for row in readings])
        for k in range(len(HostMetric))
    ]
    utilisation = tuple(
        (index, block.field(slot, "util_samples")) for slot, index in enumerate(indices)
    )
    return Columns(gpu_columns(block, indices, tuple(Metric)), host, utilisation)


def _floats(values: Sequence[Any]) -> array[float]:
    """As the history stores them: float32, NaN where None (told in C: mostly none)."""
    return array("f", values if None not in values else [NAN if v is None else v for v in values])


def ingest(monitor: Monitor, block: Block, columns: Columns) -> bool:
    """A plain block's ticks into ``monitor`` as ``ingest`` of each frame would take them;
    False (nothing taken) where the monitor is not one this can feed (a process page
    followed, another judge than the advisor)."""
    advisor = monitor.advisor
    if monitor.follow_processes or not isinstance(advisor, Advisor):
        return False
    times = block.times
    ticks = len(times)
    first = 0
    while first < ticks:
        judged = first
        while judged < ticks and not advisor.due(times[judged]):
            judged += 1
        end = min(judged + 1, ticks)
        for k in range(first, end):
            advisor.keep(times[k], [(i, u[k]) for i, u in columns.utilisation], block.processes[k])
        latest = block.frame(end - 1)
        monitor.history.add_columns(times[first:end], columns.gpus, columns.host, latest, first)
        findings: tuple[Finding, ...] = advisor.findings
        for k in range(first, end):
            if k == judged:
                findings = advisor.update(monitor.history)
            monitor.runlog.add_at(times[k], block.processes[k], findings)
        first = end
    return True
