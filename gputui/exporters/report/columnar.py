"""A version-3 block's ticks as the monitor takes them at once (``BlockTicks``, given to
``Monitor.take``, the path every frame takes too): the history filled a column at a time
between judgements, a tick's ``Frame`` built only where the advisor judges (and at the
block's end, the history's latest), instead of one a tick.

Only a plain block goes this way (``columns_of``): every GPU read at every tick in the same
slot, none lost, no Xid; any other is taken frame by frame. Every value was checked when
the block was read (``formats/blocks``), as for the frames.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any, Final, TypeAlias

from gputui.core.model import Frame, ProcessSample
from gputui.core.names import HostMetric, Metric
from gputui.core.records import frozen
from gputui.formats.blocks import Block
from gputui.sampling.history import NO_REASONS, History

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
    utilisation: tuple[tuple[int, Sequence[tuple[float, ...]]], ...]


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


class BlockTicks:
    """A plain block's ticks (``columns_of``) as ``sampling.monitor.Ticks``."""

    __slots__ = ("_block", "_columns", "times")

    def __init__(self, block: Block, columns: Columns) -> None:
        self._block = block
        self._columns = columns
        self.times = block.times

    def processes(self, k: int) -> Sequence[ProcessSample]:
        return self._block.processes[k]

    def utilisation(self, k: int) -> Iterable[tuple[int, tuple[float, ...]]]:
        return [(index, samples[k]) for index, samples in self._columns.utilisation]

    def urgent(self, k: int) -> bool:
        return False  # a plain block: no GPU lost, no Xid

    def frame(self, k: int) -> Frame:
        return self._block.frame(k)

    def add_to(self, history: History, first: int, end: int) -> None:
        columns = self._columns
        latest = self._block.frame(end - 1)
        history.add_columns(self.times[first:end], columns.gpus, columns.host, latest, first)
