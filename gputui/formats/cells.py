"""How many values a recording may expand to, counted before anything is allocated.

A block bounds its ticks, GPUs and processes each (``formats/blocks``), but a reader makes a
value a tick for every field of every slot: their product is what costs memory, and a few
kilobytes of compressed JSON can claim billions of them. A block's cells are counted from
its shape alone (the most GPUs and processes any of its ticks holds, by every field a record
has, by its ticks); a block past ``MAX_BLOCK_CELLS`` (or a tick past ``MAX_BLOCK_WIDTH``) is
refused, and a reading stops where the blocks it kept reach its own budget
(``MAX_READ_CELLS`` for a replay). A line's JSON is bounded the same way, in values before
it is parsed (``MAX_LINE_VALUES``). The writers hold to the same counts: a block is cut
before it would pass a bound.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from gputui.core.model import Frame, GpuSample, HostSample, ProcessSample
from gputui.formats.values import FormatError

#: the values one block may expand to (its cells), and the most one of its ticks may hold
#: (its width: every field of its GPUs and processes, each set in a column or a list of
#: changes of its own, which costs more than a value): a block reads in 50 MB at most
MAX_BLOCK_CELLS: Final = 1 << 19
MAX_BLOCK_WIDTH: Final = 1 << 15
#: the JSON values a line may hold (its arrays, objects and the items they separate,
#: counted in its bytes before it is parsed): a line of bare structure (``[[],[],...]``,
#: ``{"a":0,...}``) would make up to 60 bytes of Python objects of each of its bytes; at
#: this bound a line parses into 35 MB at most, and the widest block a writer makes fits
MAX_LINE_VALUES: Final = 1 << 18
#: the values a replay holds in all (every frame of the file in memory): about 2 GB at
#: most; an 8-GPU node with a few processes fills it in some 29 hours at a 1 s interval
MAX_READ_CELLS: Final = 1 << 26

#: the values a report reads in all: it keeps a dozen readings a GPU a tick in columns, not
#: the frames (about 2 GB at most); a week of an 8-GPU node at a 1 s interval fits
REPORT_MAX_CELLS: Final = 1 << 29

GPU_FIELDS: Final = len(dataclasses.fields(GpuSample))
PROCESS_FIELDS: Final = len(dataclasses.fields(ProcessSample))
HOST_FIELDS: Final = len(dataclasses.fields(HostSample))


def cells(ticks: int, gpus: int, processes: int) -> int:
    """The values a block of ``ticks`` ticks expands to where its ticks hold at most
    ``gpus`` GPUs and ``processes`` processes: a value a tick for every field of every
    slot (a slot's lists are as long as the block, whichever ticks it is filled at)."""
    return ticks * (gpus * GPU_FIELDS + processes * PROCESS_FIELDS + HOST_FIELDS)


def bounded_cells(ticks: int, gpus: int, processes: int) -> int:
    """``cells`` of a block read, refused (``FormatError``) past ``MAX_BLOCK_CELLS`` or a
    tick past ``MAX_BLOCK_WIDTH``: what its shape says, before anything is allocated."""
    size = cells(ticks, gpus, processes)
    what = f"{ticks:,} ticks of up to {gpus:,} GPUs and {processes:,} processes"
    if cells(1, gpus, processes) > MAX_BLOCK_WIDTH:
        raise FormatError(
            f"{what}: {cells(1, gpus, processes):,} values a tick, more than the "
            f"{MAX_BLOCK_WIDTH:,} a tick may hold"
        )
    if size > MAX_BLOCK_CELLS:
        raise FormatError(
            f"{what}: {size:,} values, more than the {MAX_BLOCK_CELLS:,} a block may expand to"
        )
    return size


def json_values(raw: bytes) -> int:
    """At least as many values as the JSON text ``raw`` holds beyond its first (each
    array, object and separated item; a comma inside a string counts too): counted in C,
    before anything is parsed."""
    return raw.count(b",") + raw.count(b"[") + raw.count(b"{")


def frame_cells(frame: Frame) -> int:
    """The values one frame holds, as ``cells`` counts them."""
    return cells(1, len(frame.gpus), len(frame.processes))


def block_cells(frames: list[Frame] | tuple[Frame, ...]) -> int:
    """The values a block of ``frames`` expands to when read back."""
    if not frames:
        return 0
    gpus = max(len(f.gpus) for f in frames)
    return cells(len(frames), gpus, max(len(f.processes) for f in frames))
