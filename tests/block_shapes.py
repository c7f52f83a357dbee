"""Version-3 recording blocks of a chosen shape, built in the block format itself: so many
ticks, GPU slots and process slots, each slot setting so many of its fields (as columns or
as changes, one value throughout so the line stays small however much it claims). What
the attacks on the reader's products (issue 52) are made of: a few kilobytes that claim
ticks x slots x fields at their bounds together."""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gputui.core.model import GpuSample, ProcessSample, SourceInfo
from gputui.core.names import SourceKind
from gputui.formats.blocks import stored_fields
from gputui.formats.cells import json_values
from gputui.formats.journal import MAX_JOURNAL_VALUES, Mark, journal_of, mark_line
from gputui.formats.recording import Header, header_line

START = 1_800_000_000.0
HEADER = header_line(Header(SourceInfo("SIMULATED", SourceKind.SIMULATED), (), 1.0))
#: a value of each column code, constant over the ticks (it compresses to nothing)
_COLUMN_VALUE = {"d": 1.0, "q": 1, "b": False}
_TYPECODE = {"d": "d", "q": "q", "b": "b"}
#: the fields every slot must set (no default)
_REQUIRED = {GpuSample: ("index",), ProcessSample: ("pid", "gpu_index")}


def _settable(cls: type) -> list[Any]:
    """The fields a block keeps in plain columns (d, q, b) or as changes of None-able
    texts; required ones first."""
    fields = list(stored_fields(cls))
    required = _REQUIRED.get(cls, ())
    return sorted(fields, key=lambda f: f.name not in required)


def block(
    ticks: int,
    gpus: int,
    processes: int,
    fields: int = 1,
    as_changes: bool = False,
    t0: float = START,
    fewer_from: int | None = None,
    content_most: int = 1 << 23,
) -> dict[str, Any]:
    """A block of ``ticks`` ticks whose every tick holds ``gpus`` GPUs and ``processes``
    processes (half as many from tick ``fewer_from`` on), each slot setting its first
    ``fields`` fields (its required ones at least): in columns where their code allows,
    or with ``as_changes`` as lists of changes. Past ``content_most`` bytes of columns,
    the slots left claim their place in the shape and set nothing: a claim that large is
    refused by its shape alone, and the file stays small."""
    columns: list[list[Any]] = [["time", "time", "d", 0, 0]]
    parts = [array("d", [float(k) for k in range(ticks)]).tobytes()]
    room = [content_most]
    slots: dict[str, dict[str, Any]] = {"gpus": {}, "processes": {}}
    for key, kind, cls, count in (
        ("gpus", "gpu", GpuSample, gpus),
        ("processes", "proc", ProcessSample, processes),
    ):
        chosen = _settable(cls)[: max(fields, len(_REQUIRED[cls]))]
        for j in range(count):
            if room[0] < 8 * ticks * len(chosen):
                break
            changes = _slot(f"{kind}{j}", cls, j, chosen, ticks, as_changes, (columns, parts))
            room[0] -= 8 * ticks * len(chosen)
            if changes:
                slots[key][str(j)] = changes
    shape = {"gpus": [[0, gpus]], "host": [[0, False]], "processes": [[0, processes]]}
    if fewer_from is not None and 0 < fewer_from < ticks:
        shape["gpus"].append([fewer_from, gpus // 2])
        shape["processes"].append([fewer_from, processes // 2])
    return {
        "block": ticks,
        "t0": t0,
        "shape": shape,
        "columns": columns,
        "data": base64.b64encode(zlib.compress(b"".join(parts), 6)).decode(),
        "gpus": slots["gpus"],
        "processes": slots["processes"],
        "notes": [[0, None]],
        "jobs": [[0, None]],
        "settings": [[0, None]],
        "findings": [[0, []]],
    }


def _slot(
    part: str,
    cls: type,
    j: int,
    chosen: list[Any],
    ticks: int,
    as_changes: bool,
    blob: tuple[list[list[Any]], list[bytes]],
) -> dict[str, Any]:
    """One slot's fields: its columns added to ``blob``, its changes returned."""
    columns, parts = blob
    changes: dict[str, Any] = {}
    for f in chosen:
        required = f.name in _REQUIRED[cls]
        value = {"d": 1.0, "b": False}.get(f.code, _value(f.name, j))
        if f.code in _COLUMN_VALUE and (required or not as_changes):
            columns.append([part, f.name, f.code, 0, 0])
            parts.append(array(_TYPECODE[f.code], [value] * ticks).tobytes())
        elif f.code in _COLUMN_VALUE:
            changes[f.name] = [[0, value]]
        elif f.nullable:
            changes[f.name] = [[0, None]]  # a text, a record: unknown
    return changes


def _value(name: str, slot: int) -> Any:
    if name in ("index", "gpu_index"):
        return slot if name == "index" else 0
    if name == "pid":
        return 1000 + slot
    return 1


def write(path: Path, blocks: Sequence[dict[str, Any]]) -> Path:
    """A recording of these blocks, each on its line after the header."""
    lines = [json.dumps(b, separators=(",", ":")).encode() for b in blocks]
    path.write_bytes(HEADER + b"\n".join(lines) + b"\n")
    return path


# -- journals ----------------------------------------------------------------------------

RUN = "52ab52ab52ab52ab"
JOURNALED_HEADER = header_line(
    Header(SourceInfo("SIMULATED", SourceKind.SIMULATED), (), 1.0, run=RUN)
)


def tick_fields(cls: type, slot: int, fields: int, turn: int = 0) -> dict[str, Any]:
    """A slot's first ``fields`` settable fields (its required ones at least) as a journal
    tick sets them; ``turn`` changes its readings (a tick that sets them again)."""
    out: dict[str, Any] = {}
    for f in _settable(cls)[: max(fields, len(_REQUIRED[cls]))]:
        if f.code == "d":
            out[f.name] = 1.0 + turn % 2
        elif f.code in _COLUMN_VALUE:
            out[f.name] = {"b": False}.get(f.code, _value(f.name, slot))
        elif f.nullable:
            out[f.name] = None
    return out


def journal_ticks(
    ticks: int,
    gpus: int,
    processes: int,
    fields: int = 1,
    churn: int = 0,
    wider: tuple[int, int] | None = None,
    t0: float = START,
    most_values: int = MAX_JOURNAL_VALUES,
) -> list[bytes]:
    """The tick lines of a journal of ``ticks`` ticks: the first sets ``gpus`` GPUs and
    ``processes`` processes, each its first ``fields`` fields; every ``churn``-th tick
    after (0: none) sets their readings again, changed, until the lines hold
    ``most_values`` JSON values (past them a reader stops); with ``wider`` = (tick,
    count), the processes are ``count`` from that tick, new ones set there. A few
    kilobytes of lines can claim ticks x slots x fields at their bounds together."""
    lines = []
    values = 0
    shape = {"gpus": gpus, "host": False, "processes": processes}
    every = {"gpus": gpus, "processes": processes}
    for k in range(ticks):
        tick: dict[str, Any] = {"tick": k, "time": t0 + k}
        grown = wider is not None and k == wider[0] and wider[1] != every["processes"]
        if k == 0:
            tick.update(shape=dict(shape), notes=[], jobs=[], settings=None, findings=[[0, []]])
        elif grown and wider is not None:
            every["processes"] = shape["processes"] = wider[1]
            tick["shape"] = {"processes": wider[1]}
        set_all = k == 0 or (churn and k % churn == 0 and values <= most_values)
        for key, cls in (("gpus", GpuSample), ("processes", ProcessSample)):
            first = 0 if set_all else processes if grown and key == "processes" else every[key]
            slots = {str(j): tick_fields(cls, j, fields, k) for j in range(first, every[key])}
            if slots:
                tick[key] = slots
        lines.append(json.dumps(tick, separators=(",", ":")).encode() + b"\n")
        values += json_values(lines[-1])
    return lines


def write_journaled(path: Path, lines: Sequence[bytes], gzipped: bool = False) -> Path:
    """A recording of no block yet and its journal of these tick lines, as a recorder
    killed in its first block leaves them."""
    path.write_bytes(JOURNALED_HEADER)
    mark = mark_line(Mark(RUN, len(JOURNALED_HEADER)))
    data = mark + b"".join(lines)
    journal_of(path).write_bytes(gzip.compress(data, 6) if gzipped else data)
    return path
