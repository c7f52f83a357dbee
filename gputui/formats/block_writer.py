"""Writing version 3 of the recording: a block of ticks a line (docs/record.md). The
numeric readings in typed columns (``formats/columns``), what rarely changes as lists of
changes; ``formats/blocks`` reads them back, every value checked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import MISSING
from typing import Any

from gputui.core.model import Finding, Frame, GpuSample, HostSample, ProcessSample
from gputui.formats.blocks import stored_fields
from gputui.formats.cells import MAX_BLOCK_CELLS, MAX_LINE_VALUES, block_cells, json_values
from gputui.formats.columns import BlobWriter
from gputui.formats.values import finding_dict, masked, note_dict, plain, record


def block_line(ticks: Sequence[tuple[Frame, Sequence[Finding]]], keep_secrets: bool) -> bytes:
    """One block of ticks as a line (credentials masked unless ``keep_secrets``)."""
    frames = [f if keep_secrets else masked(f) for f, _ in ticks]
    blob = BlobWriter(len(frames))
    t0 = time_origin([f.time for f in frames])
    blob.put("time", "time", "d", [f.time - t0 for f in frames])
    slots = max(len(f.gpus) for f in frames)
    gpus = {
        str(j): _records(
            GpuSample, [f.gpus[j] if j < len(f.gpus) else None for f in frames], f"gpu{j}", blob
        )
        for j in range(slots)
    }
    host = _records(HostSample, [f.host for f in frames], "host", blob)
    processes = {
        str(j): _records(
            ProcessSample,
            [f.processes[j] if j < len(f.processes) else None for f in frames],
            f"proc{j}",
            blob,
        )
        for j in range(max(len(f.processes) for f in frames))
    }
    data = {
        "block": len(frames),
        "t0": t0,
        "shape": {
            "gpus": _changes([len(f.gpus) for f in frames]),
            "host": _changes([f.host is not None for f in frames]),
            "processes": _changes([len(f.processes) for f in frames]),
        },
        "columns": [s.as_json() for s in blob.specs],
        "data": blob.blob(),
        "gpus": gpus,
        "host": host,
        "processes": processes,
        "notes": _changes([f.notes for f in frames], lambda v: [note_dict(n) for n in v]),
        "jobs": _changes([f.jobs for f in frames], lambda v: [record(j) for j in v]),
        "settings": _changes([f.settings for f in frames]),
        "findings": _finding_changes([tuple(found) for _, found in ticks], keep_secrets),
    }
    return json.dumps(data, allow_nan=False, separators=(",", ":")).encode() + b"\n"


def block_lines(
    ticks: Sequence[tuple[Frame, Sequence[Finding]]], keep_secrets: bool, most: int
) -> list[tuple[bytes, int]]:
    """Ticks as block lines, each with its count of ticks: one line, or the ticks halved
    until each line holds at most ``most`` bytes and ``MAX_LINE_VALUES`` JSON values and
    expands to at most ``MAX_BLOCK_CELLS`` values (one tick a line at the least)."""
    out: list[tuple[bytes, int]] = []
    pending = [ticks]
    while pending:
        part = pending.pop(0)
        if len(part) > 1 and block_cells([f for f, _ in part]) > MAX_BLOCK_CELLS:
            half = len(part) // 2
            pending[:0] = [part[:half], part[half:]]
            continue
        line = block_line(part, keep_secrets)
        if (len(line) > most or json_values(line) > MAX_LINE_VALUES) and len(part) > 1:
            half = len(part) // 2
            pending[:0] = [part[:half], part[half:]]
            continue
        out.append((line, len(part)))
    return out


def findings_shown(findings: Sequence[Finding]) -> tuple[tuple[Any, ...], ...]:
    """What a tick's findings say apart from their evidence and time: which stand, how
    severe, titled and since when (what the recording keeps exact at every tick)."""
    return tuple((f.rule, f.gpu, f.severity, f.title, f.since) for f in findings)


def _finding_changes(found: Sequence[tuple[Finding, ...]], keep_secrets: bool) -> list[list[Any]]:
    """The findings as changes, written where the findings shown change (one starts or
    ends, or its severity, title or start moves), at the tick before each such change and
    at the block's last tick. In between, a finding's evidence and ``updated`` are those
    of the write before: the advisor words its numbers afresh at every judgement, and
    writing them each time was four fifths of a block. What a reader takes from them is
    whole: which findings stood at every tick, since when, and each one's last words and
    time where it ends or the block does."""
    shown = [findings_shown(v) for v in found]
    last = len(found) - 1
    out: list[list[Any]] = []
    previous: Any = object()
    for k, value in enumerate(found):
        turning = k in (0, last) or shown[k] != shown[k - 1] or shown[k + 1] != shown[k]
        if turning and value != previous:
            out.append([k, [finding_dict(f, keep_secrets) for f in value]])
            previous = value
    return out


def time_origin(times: Sequence[float]) -> float:
    """The block's first time, the column holding each tick's time after it: exact (two
    close floats' difference is), else 0 and the times themselves."""
    t0 = times[0]
    return t0 if all(t0 + (t - t0) == t for t in times) else 0.0


def _records(cls: type, items: Sequence[Any], part: str, blob: BlobWriter) -> dict[str, Any]:
    """The fields of ``items`` (None where a tick has none): columns where their code
    holds them, changes for the rest; a field at its default throughout is left out."""
    changes: dict[str, Any] = {}
    for f in stored_fields(cls):
        values = [None if x is None else getattr(x, f.name) for x in items]
        if f.default is not MISSING and all(v == f.default for v in values):
            continue
        if f.code and blob.put(part, f.name, f.code, values):
            continue
        changes[f.name] = _changes(values)
    return changes


def _changes(values: Sequence[Any], as_json: Callable[[Any], Any] = plain) -> list[list[Any]]:
    """``[[tick, value], ...]``: the first tick's value and each that differs from the one
    before."""
    out: list[list[Any]] = []
    previous: Any = object()
    for k, value in enumerate(values):
        if k == 0 or value != previous:
            out.append([k, None if value is None else as_json(value)])
            previous = value
    return out
