"""Version 3 of the recording: a line holds a block of ticks (docs/record.md).

The numeric readings of every GPU and of the host are typed columns (``formats/columns``);
what rarely changes (texts, NVLinks and MIG instances, processes, notes, job and host
settings, findings) is a list of changes, ``[[tick, value], ...]``, each value written
when it differs from the tick before. A block stands alone: its first tick carries every
value, so a block cut short (a recorder killed) is dropped and the others still read.
Every value is checked as version 2 checks it: the same field checks (``formats/values``),
the same ranges (``core/ranges``, per column), every text through ``clean``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any, Final

from gputui.core.model import (
    Finding,
    Frame,
    GpuSample,
    HostSample,
    JobSettings,
    MigInstance,
    NvLinkSample,
    ProcessSample,
    XidEvent,
)
from gputui.core.ranges import RANGES, within_ranges
from gputui.core.records import frozen
from gputui.formats.columns import BlobWriter, Spec, code_of, parse_spec, read_column, unpack_blob
from gputui.formats.values import (
    MAX_GPUS,
    MAX_PROCESSES,
    MAX_TIME,
    FormatError,
    field_checks,
    finding_dict,
    from_record,
    masked,
    note_dict,
    parse_finding,
    parse_note,
    parse_settings,
    plain,
    record,
)

#: a block closes at this many ticks or this much frame time, whichever comes first: a
#: recorder killed at any moment loses at most the block it was filling
BLOCK_TICKS: Final = 60
BLOCK_SECONDS: Final = 60.0
MAX_BLOCK_TICKS: Final = 3600
_RECORDS: Final[dict[str, type]] = {
    "xid_events": XidEvent,
    "mig_instances": MigInstance,
    "nvlinks": NvLinkSample,
}
_MISSING: Final = dataclasses.MISSING
#: the records kept in columns, by the name of their part ("gpu3": the fourth GPU of a tick)
_PARTS: Final[dict[str, type]] = {"gpu": GpuSample, "host": HostSample, "proc": ProcessSample}
Pair = tuple[Frame, tuple[Finding, ...]]
#: a GpuSample field's place in its constructor's arguments
_POSITION: Final = {f.name: k for k, f in enumerate(dataclasses.fields(GpuSample))}


@frozen
class _Field:
    name: str
    code: str
    default: Any
    nullable: bool
    parse: Callable[[Any], Any]
    bounds: tuple[float, float] | None


@cache
def _fields(cls: type) -> tuple[_Field, ...]:
    """How each field of ``cls`` is stored and read back (checked), in field order."""
    out = []
    for f, kind, check in field_checks(cls):
        ranged = cls is GpuSample and (f.name in RANGES or f.name == "util_samples")
        parse = _gpu_parse(f.name, check) if cls is GpuSample else check
        bounds = RANGES.get("util_gpu" if f.name == "util_samples" else f.name) if ranged else None
        out.append(_Field(f.name, code_of(kind), f.default, "None" in kind, parse, bounds))
    return tuple(out)


@cache
def _by_name(cls: type) -> dict[str, _Field]:
    return {f.name: f for f in _fields(cls)}


def _gpu_parse(name: str, check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A GPU field kept as changes: checked, nested records parsed, then its range."""
    kind = _RECORDS.get(name)

    def parse(raw: Any) -> Any:
        value: Any
        if kind is not None:
            if not isinstance(raw, list):
                raise FormatError(f"GpuSample.{name}: not a list")
            value = tuple(from_record(kind, item) for item in raw)
        else:
            value = check(raw)
        fields: dict[str, Any] = {name: value}
        return getattr(within_ranges(GpuSample(0, **fields)), name)

    return parse


# -- writing


def block_line(ticks: Sequence[tuple[Frame, Sequence[Finding]]], keep_secrets: bool) -> bytes:
    """One block of ticks as a line (credentials masked unless ``keep_secrets``)."""
    frames = [f if keep_secrets else masked(f) for f, _ in ticks]
    blob = BlobWriter(len(frames))
    t0 = _origin([f.time for f in frames])
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


def _origin(times: Sequence[float]) -> float:
    """The block's first time, the column holding each tick's time after it: exact (two
    close floats' difference is), else 0 and the times themselves."""
    t0 = times[0]
    return t0 if all(t0 + (t - t0) == t for t in times) else 0.0


def _records(cls: type, items: Sequence[Any], part: str, blob: BlobWriter) -> dict[str, Any]:
    """The fields of ``items`` (None where a tick has none): columns where their code
    holds them, changes for the rest; a field at its default throughout is left out."""
    changes: dict[str, Any] = {}
    for f in _fields(cls):
        values = [None if x is None else getattr(x, f.name) for x in items]
        if f.default is not _MISSING and all(v == f.default for v in values):
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


# -- reading


def parse_block(data: Mapping[str, Any], findings: bool = True) -> tuple[list[Pair], int]:
    """The ticks of one block line, every value checked; and how many recorded findings
    were not understood (a rule this gputui does not know), skipped. ``findings=False``
    leaves the recorded findings unread (the report judges the frames itself)."""
    block, skipped = parse_columns(data, findings)
    return block.pairs(), skipped


def parse_columns(data: Mapping[str, Any], findings: bool = True) -> tuple[Block, int]:
    """As ``parse_block``, every value checked alike, the ticks kept as a ``Block``: the
    GPUs' readings as one list a field, a tick's records built when asked."""
    ticks = data.get("block")
    if isinstance(ticks, bool) or not isinstance(ticks, int) or not 0 < ticks <= MAX_BLOCK_TICKS:
        raise FormatError(f"a block of {ticks!r} ticks")
    columns = _columns(data, ticks)
    times = _times(data.get("t0"), columns.pop(("time", "time"), None), ticks)
    shape = data.get("shape")
    if not isinstance(shape, Mapping):
        raise FormatError("a block without its shape")
    counts = _expand(shape.get("gpus"), ticks, _count)
    gpus = _slot_lists(GpuSample, "gpu", columns, data.get("gpus"), counts)
    hosted = _expand(shape.get("host"), ticks, _flag)
    hosts = _build(HostSample, columns, "host", _object(data.get("host"), "host"), hosted)
    running = _expand(shape.get("processes"), ticks, _process_count)
    processes = _slots(ProcessSample, "proc", columns, data.get("processes"), running)
    skipped = [0]
    parts = (
        _expand(data.get("notes"), ticks, _notes),
        _expand(data.get("jobs"), ticks, _jobs),
        _expand(data.get("settings"), ticks, parse_settings),
        _expand(data.get("findings"), ticks, lambda raw: _findings(raw, skipped))
        if findings
        else [()] * ticks,
    )
    procs = [tuple(slot[k] for slot in processes[: running[k]]) for k in range(ticks)]
    return Block(times, counts, gpus, hosts, procs, parts), skipped[0]


class Block:
    """One block's ticks, read and checked: each GPU slot's fields as lists (one value a
    tick, in ``GpuSample``'s field order), the host's and the processes' records, and the
    rest one value a tick. A tick's ``Frame`` is built when asked (a reader that takes the
    readings as columns, the report, needs few of them)."""

    __slots__ = ("counts", "gpus", "hosts", "parts", "processes", "times")

    def __init__(
        self,
        times: list[float],
        counts: list[int],
        gpus: list[list[list[Any]]],
        hosts: list[Any],
        processes: list[tuple[ProcessSample, ...]],
        parts: tuple[list[Any], list[Any], list[Any], list[Any]],
    ) -> None:
        self.times = times
        #: how many GPUs each tick holds: slots ``gpus[:counts[k]]``
        self.counts = counts
        self.gpus = gpus
        self.hosts = hosts
        self.processes = processes
        #: notes, jobs, settings and findings, one value a tick
        self.parts = parts

    def __len__(self) -> int:
        return len(self.times)

    def field(self, slot: int, name: str) -> list[Any]:
        """A GPU slot's values of one field, one a tick (whatever where it holds none)."""
        return self.gpus[slot][_POSITION[name]]

    def frame(self, k: int) -> Frame:
        return Frame(
            self.times[k],
            tuple(GpuSample(*[v[k] for v in lists]) for lists in self.gpus[: self.counts[k]]),
            self.hosts[k],
            self.processes[k],
            self.parts[0][k],
            self.parts[1][k],
            self.parts[2][k],
        )

    def pairs(self) -> list[Pair]:
        """Every tick's frame and recorded findings."""
        return [(self.frame(k), self.parts[3][k]) for k in range(len(self.times))]


def _slots(
    cls: type, prefix: str, columns: Mapping[tuple[str, str], Any], listed: Any, counts: list[int]
) -> list[list[Any]]:
    """The records of each slot (the j-th GPU, the j-th process of a tick), one a tick."""
    return [
        _assembled(cls, lists, [c > j for c in counts])
        for j, lists in enumerate(_slot_lists(cls, prefix, columns, listed, counts))
    ]


def _slot_lists(
    cls: type, prefix: str, columns: Mapping[tuple[str, str], Any], listed: Any, counts: list[int]
) -> list[list[list[Any]]]:
    """Each slot's fields as lists (``_lists``), every value checked."""
    changes = _object(listed, prefix)
    return [
        _lists(cls, columns, f"{prefix}{j}", _object(changes.get(str(j)), prefix), present)
        for j in range(max(counts))
        for present in ([c > j for c in counts],)
    ]


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise FormatError(f"{what}: not an object")
    return value


def _columns(data: Mapping[str, Any], ticks: int) -> dict[tuple[str, str], Any]:
    """Every column of the block by (part, field), unpacked and checked."""
    listed = data.get("columns")
    if not isinstance(listed, list) or len(listed) > 100 * (MAX_GPUS + MAX_PROCESSES):
        raise FormatError("a block's columns are not a list")
    plan = _plan(listed)
    view = unpack_blob(data.get("data"), [spec for spec, _ in plan], ticks)
    out: dict[tuple[str, str], Any] = {}
    offset = 0
    for spec, expected in plan:
        size = spec.size(ticks)
        if expected is not None:
            if spec.code != expected.code:
                raise FormatError(f"column {spec.field}: code {spec.code}, not {expected.code}")
            out[(spec.part, spec.field)] = read_column(
                view[offset : offset + size], spec, ticks, expected.bounds
            )
        offset += size  # a field this gputui does not know (a newer writer): skipped
    return out


#: the checked specs of a block's column list, by its ``repr``: a recording's blocks list
#: the same columns block after block. ``repr`` tells JSON's values apart where ``==``
#: does not (``1``, ``1.0`` and ``true``); bounded in entries and in each key's size.
_PLANS: dict[str, list[tuple[Spec, _Field | None]]] = {}
_PLANS_MOST: Final = 32
_PLAN_KEY_MOST: Final = 256 * 1024


def _plan(listed: list[Any]) -> list[tuple[Spec, _Field | None]]:
    """Each column's spec (checked by ``parse_spec``) and the field it fills (None: one
    this gputui does not know)."""
    try:
        key = repr(listed)
    except RecursionError:  # nested too deeply: parse_spec says what is wrong with it
        key = ""
    plan = _PLANS.get(key) if key else None
    if plan is None:
        plan = [(spec, _expected(spec)) for spec in map(parse_spec, listed)]
        if key and len(key) <= _PLAN_KEY_MOST:
            if len(_PLANS) >= _PLANS_MOST:
                _PLANS.clear()
            _PLANS[key] = plan
    return plan


def _expected(spec: Spec) -> _Field | None:
    if spec.part == "time":
        return _Field("time", "d", _MISSING, False, float, None) if spec.field == "time" else None
    cls = _PARTS.get(spec.part.rstrip("0123456789"))
    if cls is None or (cls is not HostSample and not spec.part[-1:].isdigit()):
        return None
    return _by_name(cls).get(spec.field)


def _times(t0: Any, column: Any, ticks: int) -> list[float]:
    if isinstance(t0, bool) or not isinstance(t0, int | float) or not 0 <= t0 < MAX_TIME:
        raise FormatError(f"block time {t0!r} is not a time")
    if column is None or column[1] is not None:
        raise FormatError("a block without its ticks' times")
    times = [t0 + d for d in column[0]]
    if not all(0 <= t < MAX_TIME for t in times):
        raise FormatError("a tick's time is not a time")
    if any(b < a for a, b in itertools.pairwise(times)):
        raise FormatError("time goes backwards")
    return times


def _expand(changes: Any, ticks: int, parse: Callable[[Any], Any]) -> list[Any]:
    """A list of changes as one value a tick, each value parsed (checked) once."""
    if not isinstance(changes, list) or not changes or len(changes) > ticks:
        raise FormatError("a list of changes expected")
    out: list[Any] = []
    for item in changes:
        if not isinstance(item, list) or len(item) != 2:
            raise FormatError("a change is not [tick, value]")
        at, raw = item
        if isinstance(at, bool) or not isinstance(at, int):
            raise FormatError("a change's tick is not an index")
        if not len(out) <= at < ticks or (at == 0) != (not out):
            raise FormatError("changes out of order")
        if out:
            out.extend([out[-1]] * (at - len(out)))
        out.append(parse(raw))
    out.extend([out[-1]] * (ticks - len(out)))
    return out


def _count(raw: Any) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= MAX_GPUS:
        raise FormatError(f"more than {MAX_GPUS} GPUs in a frame")
    return raw


def _process_count(raw: Any) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= MAX_PROCESSES:
        raise FormatError(f"more than {MAX_PROCESSES} processes in a frame")
    return raw


def _flag(raw: Any) -> bool:
    if not isinstance(raw, bool):
        raise FormatError("a flag that is not true or false")
    return raw


def _build(
    cls: type,
    columns: Mapping[tuple[str, str], Any],
    part: str,
    changes: Mapping[str, Any],
    present: Sequence[bool],
) -> list[Any]:
    """One slot's (or the host's) records, one a tick (None where ``present`` says the
    tick has none): built from the columns and changes, every field checked."""
    return _assembled(cls, _lists(cls, columns, part, changes, present), present)


def _assembled(cls: type, lists: list[list[Any]], present: Sequence[bool]) -> list[Any]:
    """A record a tick from its fields' lists, None where ``present`` says it has none."""
    rows = zip(*lists, strict=True)
    return [cls(*row) if here else None for row, here in zip(rows, present, strict=True)]


def _lists(
    cls: type,
    columns: Mapping[tuple[str, str], Any],
    part: str,
    changes: Mapping[str, Any],
    present: Sequence[bool],
) -> list[list[Any]]:
    """One slot's fields, each one value a tick, in field order, every value checked."""
    ticks = len(present)
    lists = []
    for f in _fields(cls):
        column = columns.get((part, f.name))
        if column is not None:
            values, nulls = column
            if nulls is not None and not f.nullable and _null_where(values, present):
                raise FormatError(f"{cls.__name__}.{f.name}: null")
        elif f.name in changes:
            values = _expand(changes[f.name], ticks, _nullable(f))
            if not f.nullable and _null_where(values, present):
                raise FormatError(f"{cls.__name__}.{f.name}: null")
        elif f.default is _MISSING:
            raise FormatError(f"{cls.__name__}.{f.name}: missing")
        else:
            values = [f.default] * ticks
        lists.append(values)
    return lists


def _nullable(f: _Field) -> Callable[[Any], Any]:
    """A change's value: None where the tick has no record (absent), else checked."""
    return lambda raw: None if raw is None else f.parse(raw)


def _null_where(values: Sequence[Any], present: Sequence[bool]) -> bool:
    return any(v is None and here for v, here in zip(values, present, strict=True))


def _listed(raw: Any, what: str, most: int = MAX_PROCESSES) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > most:
        raise FormatError(f"{what}: a list of at most {most:,} expected")
    return raw


def _notes(raw: Any) -> tuple[Any, ...]:
    return tuple(parse_note(n) for n in _listed(raw, "notes"))


def _jobs(raw: Any) -> tuple[JobSettings, ...]:
    return tuple(from_record(JobSettings, j) for j in _listed(raw, "jobs"))


def _findings(raw: Any, skipped: list[int]) -> tuple[Finding, ...]:
    found = []
    for item in _listed(raw, "findings"):
        try:
            found.append(parse_finding(item))
        except (FormatError, KeyError, TypeError, ValueError):
            skipped[0] += 1  # a rule this gputui does not know, say
    return tuple(found)
