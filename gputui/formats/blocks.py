"""Reading version 3 of the recording: a line holds a block of ticks (docs/record.md;
``formats/block_writer`` writes them).

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
from collections.abc import Callable, Mapping, Sequence
from functools import cache, lru_cache
from typing import Any, Final, NamedTuple

from gputui.core.config import MAX_BLOCK_TICKS
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
from gputui.formats.cells import MAX_BLOCK_CELLS, bounded_cells, cells
from gputui.formats.columns import Spec, code_of, parse_spec, read_column, unpack_blob
from gputui.formats.values import (
    MAX_GPUS,
    MAX_PROCESSES,
    MAX_TIME,
    FormatError,
    PendingFinding,
    field_checks,
    from_record,
    parse_finding,
    parse_note,
    parse_settings,
)

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
def stored_fields(cls: type) -> tuple[_Field, ...]:
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
    return {f.name: f for f in stored_fields(cls)}


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


# -- reading


def parse_block(data: Mapping[str, Any], findings: bool = True) -> tuple[list[Pair], int]:
    """The ticks of one block line, every value checked; and how many recorded findings
    were not understood (a rule this gputui does not know), skipped. ``findings=False``
    leaves the recorded findings unread (the report judges the frames itself)."""
    block, skipped = parse_columns(data, findings)
    return block.pairs(), skipped


@frozen
class Only:
    """What a reader takes of a block: the GPU and process fields named; the host's
    readings, the notes, jobs and settings not. The rest is left unread (neither unpacked
    into values nor checked), and the block builds no frames or process records; its
    findings are read as far as which they are (``PendingFinding``)."""

    gpu: frozenset[str]
    proc: frozenset[str]


def parse_columns(
    data: Mapping[str, Any], findings: bool = True, only: Only | None = None
) -> tuple[Block, int]:
    """As ``parse_block``, every value checked alike, the ticks kept as a ``Block``: the
    GPUs' readings as one list a field, a tick's records built when asked; with ``only``,
    those fields alone (every one of them checked)."""
    ticks = data.get("block")
    if isinstance(ticks, bool) or not isinstance(ticks, int) or not 0 < ticks <= MAX_BLOCK_TICKS:
        raise FormatError(f"a block of {ticks!r} ticks")
    shape = data.get("shape")
    if not isinstance(shape, Mapping):
        raise FormatError("a block without its shape")
    counts = _expand(shape.get("gpus"), ticks, _count)
    running = _expand(shape.get("processes"), ticks, _process_count)
    bounded_cells(ticks, max(counts), max(running))
    columns = _columns(data, ticks, (max(counts), max(running)), only)
    times = _times(data.get("t0"), columns.pop(("time", "time"), None), ticks)
    gpus = _slot_lists(
        GpuSample, "gpu", columns, data.get("gpus"), counts, None if only is None else only.gpu
    )
    hosted = _expand(shape.get("host"), ticks, _flag)
    hosts = (
        _build(HostSample, columns, "host", mapping_of(data.get("host"), "host"), hosted)
        if only is None
        else [None] * ticks
    )
    processes = _slot_lists(
        ProcessSample,
        "proc",
        columns,
        data.get("processes"),
        running,
        None if only is None else only.proc,
    )
    skipped = [0]
    parts = (
        *_settings(data, ticks, only is None),
        _expand(data.get("findings"), ticks, _findings_of(skipped, pending=only is not None))
        if findings
        else [()] * ticks,
    )
    block = Block(times, counts, gpus, hosts, (processes, running), parts)
    block.partial = only is not None
    return block, skipped[0]


def _settings(
    data: Mapping[str, Any], ticks: int, read: bool
) -> tuple[list[Any], list[Any], list[Any]]:
    """Each tick's notes, jobs and settings (none, unread, unless ``read``)."""
    if not read:
        return [()] * ticks, [()] * ticks, [None] * ticks
    return (
        _expand(data.get("notes"), ticks, _notes),
        _expand(data.get("jobs"), ticks, _jobs),
        _expand(data.get("settings"), ticks, parse_settings),
    )


class ProcessRow(NamedTuple):
    """What a report's run log reads of a process at a tick (``Block.process_rows``)."""

    pid: int
    gpu_index: int
    name: str | None
    command: str | None
    user: str | None
    ppid: int | None


_PROCESS_POSITION: Final = {f.name: k for k, f in enumerate(dataclasses.fields(ProcessSample))}
_ROW_PLACES: Final = tuple(_PROCESS_POSITION[name] for name in ProcessRow._fields)


class Block:
    """One block's ticks, read and checked: each GPU slot's fields as lists (one value a
    tick, in ``GpuSample``'s field order), the host's records, each process slot's fields
    as lists, and the rest one value a tick. A tick's ``Frame`` and its processes' records
    are built when asked (a reader that takes the readings as columns, the report, needs
    few of them)."""

    __slots__ = (
        "_processes",
        "_running",
        "_slots",
        "cells",
        "counts",
        "gpus",
        "hosts",
        "partial",
        "parts",
        "times",
    )

    def __init__(
        self,
        times: list[float],
        counts: list[int],
        gpus: list[list[Sequence[Any]]],
        hosts: list[Any],
        processes: tuple[list[list[Sequence[Any]]], list[int]],
        parts: tuple[list[Any], list[Any], list[Any], list[Any]],
    ) -> None:
        self.times = times
        #: how many GPUs each tick holds: slots ``gpus[:counts[k]]``
        self.counts = counts
        self.gpus = gpus
        self.hosts = hosts
        #: each process slot's fields as lists, and how many slots each tick fills
        self._slots, self._running = processes
        self._processes: list[tuple[ProcessSample, ...]] | None = None
        #: read in part (``Only``): the fields not read are None, no records are built
        self.partial = False
        #: the values it expands to (``formats/cells``), as its shape says
        self.cells = cells(len(times), max(counts, default=0), max(processes[1], default=0))
        #: notes, jobs, settings and findings, one value a tick
        self.parts = parts

    def __len__(self) -> int:
        return len(self.times)

    @property
    def processes(self) -> list[tuple[ProcessSample, ...]]:
        """Each tick's processes' records (built, each checked again, when first asked)."""
        if self._processes is None:
            self._whole()
            running = self._running
            slots = [
                _assembled(ProcessSample, lists, [c > j for c in running])
                for j, lists in enumerate(self._slots)
            ]
            self._processes = [
                tuple(slot[k] for slot in slots[: running[k]]) for k in range(len(self.times))
            ]
        return self._processes

    def process_rows(self) -> list[tuple[ProcessRow, ...]]:
        """Each tick's processes as the run log reads them, no records built."""
        running = self._running
        slots = [list(map(ProcessRow, *(lists[k] for k in _ROW_PLACES))) for lists in self._slots]
        if slots and min(running) == len(slots):  # every slot at every tick: in C
            return list(zip(*slots, strict=True))
        return [tuple(slot[k] for slot in slots[: running[k]]) for k in range(len(self.times))]

    def field(self, slot: int, name: str) -> Sequence[Any]:
        """A GPU slot's values of one field, one a tick (whatever where it holds none)."""
        return self.gpus[slot][_POSITION[name]]

    def _whole(self) -> None:
        if self.partial:
            raise ValueError("a block read in part (Only) builds no records")

    def frame(self, k: int) -> Frame:
        self._whole()
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


def _slot_lists(
    cls: type,
    prefix: str,
    columns: Mapping[tuple[str, str], Any],
    listed: Any,
    counts: list[int],
    wanted: frozenset[str] | None = None,
) -> list[list[Sequence[Any]]]:
    """Each slot's fields as lists (``_lists``), every value checked."""
    changes = mapping_of(listed, prefix)
    return [
        _lists(cls, columns, f"{prefix}{j}", mapping_of(changes.get(str(j)), prefix), here, wanted)
        for j in range(max(counts))
        for here in ([c > j for c in counts],)
    ]


def mapping_of(value: Any, what: str) -> Mapping[str, Any]:
    """A JSON object of a block (or of a journal's tick), {} for null; else FormatError."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise FormatError(f"{what}: not an object")
    return value


def _columns(
    data: Mapping[str, Any], ticks: int, slots: tuple[int, int], only: Only | None = None
) -> dict[tuple[str, str], Any]:
    """Every column of the block by (part, field), unpacked and checked (of ``only``'s,
    with the ticks' times): none for a slot past the most GPUs and processes (``slots``)
    its shape holds, and no more of them than two a field of its slots (a newer writer's
    fields among them)."""
    listed = data.get("columns")
    if not isinstance(listed, list) or len(listed) > 2 * cells(1, *slots):
        raise FormatError("a block's columns are not a list of its slots' fields")
    total, taken, reach = _layout(listed, ticks, only)
    if reach[0] > slots[0] or reach[1] > slots[1]:
        raise FormatError("a column of a slot the block's shape does not hold")
    if reach[2] > MAX_BLOCK_CELLS:
        raise FormatError(f"columns of more than {MAX_BLOCK_CELLS:,} values")
    view = unpack_blob(data.get("data"), total)
    return {
        (spec.part, spec.field): read_column(view[start:end], spec, ticks, expected.bounds)
        for start, end, spec, expected in taken
    }


#: the blob's size, the columns read (where, spec, field), and their reach: how many GPU
#: and process slots they fill, and how many values their tuples hold
_Layout = tuple[int, list[tuple[int, int, Spec, _Field]], tuple[int, int, int]]
#: a column list's layout for a block of so many ticks read by a reader of so much
#: (``_layout``), by the list's ``repr`` as ``_PLANS``: a recording's blocks repeat it
_LAYOUTS: dict[tuple[str, int, Only | None], _Layout] = {}


def _layout(listed: list[Any], ticks: int, only: Only | None) -> _Layout:
    """The blob's size, and where each column read lies in it, with its spec and the field
    it fills: those this gputui knows (a newer writer's others are skipped), of ``only``'s
    where given; each one's code checked against its field's."""
    key, plan = _plan(listed)
    found = _LAYOUTS.get((key, ticks, only)) if key else None
    if found is not None:
        return found
    taken = []
    offset = 0
    for spec, expected in plan:
        size = spec.size(ticks)
        if expected is not None and (only is None or _takes(only, spec)):
            if spec.code != expected.code:
                raise FormatError(f"column {spec.field}: code {spec.code}, not {expected.code}")
            taken.append((offset, offset + size, spec, expected))
        offset += size
    layout = (offset, taken, _reach([spec for _, _, spec, _ in taken]))
    if key:
        if len(_LAYOUTS) >= _PLANS_MOST:
            _LAYOUTS.clear()
        _LAYOUTS[(key, ticks, only)] = layout
    return layout


def _reach(specs: list[Spec]) -> tuple[int, int, int]:
    """How many GPU and process slots columns fill (the highest one's number and one),
    and how many values their tuple columns hold."""
    top = {"gpu": 0, "proc": 0}
    for spec in specs:
        kind = spec.part.rstrip("0123456789")
        if kind in top:
            top[kind] = max(top[kind], int(spec.part[len(kind) :]) + 1)
    return top["gpu"], top["proc"], sum(spec.count for spec in specs)


def _takes(only: Only, spec: Spec) -> bool:
    """Whether a reader of ``only`` reads this column."""
    kind = spec.part.rstrip("0123456789")
    if kind == "gpu":
        return spec.field in only.gpu
    if kind == "proc":
        return spec.field in only.proc
    return kind == "time"


#: the checked specs of a block's column list, by its ``repr``: a recording's blocks list
#: the same columns block after block. ``repr`` tells JSON's values apart where ``==``
#: does not (``1``, ``1.0`` and ``true``); bounded in entries and in each key's size.
_PLANS: dict[str, list[tuple[Spec, _Field | None]]] = {}
_PLANS_MOST: Final = 32
_PLAN_KEY_MOST: Final = 256 * 1024


def _plan(listed: list[Any]) -> tuple[str, list[tuple[Spec, _Field | None]]]:
    """Each column's spec (checked by ``parse_spec``) and the field it fills (None: one
    this gputui does not know); and the key it is kept by ("": not kept)."""
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
        else:
            key = ""
    return key, plan


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


def _assembled(cls: type, lists: list[Sequence[Any]], present: Sequence[bool]) -> list[Any]:
    """A record a tick from its fields' lists, None where ``present`` says it has none."""
    rows = zip(*lists, strict=True)
    return [cls(*row) if here else None for row, here in zip(rows, present, strict=True)]


def _lists(
    cls: type,
    columns: Mapping[tuple[str, str], Any],
    part: str,
    changes: Mapping[str, Any],
    present: Sequence[bool],
    wanted: frozenset[str] | None = None,
) -> list[Sequence[Any]]:
    """One slot's fields, each one value a tick, in field order, every value checked; of
    a field not ``wanted`` (None: every one is), None at every tick, unread."""
    ticks = len(present)
    lists: list[Sequence[Any]] = []
    for f in stored_fields(cls):
        if wanted is not None and f.name not in wanted:
            lists.append(_repeated("NoneType", None, ticks))
            continue
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
            values = _repeated(type(f.default).__name__, f.default, ticks)
        lists.append(values)
    return lists


@lru_cache(maxsize=256)
def _repeated(kind: str, value: Any, ticks: int) -> tuple[Any, ...]:
    """``value`` at every tick, one tuple for every slot and block that never sets the
    field (``kind`` keeps 0, 0.0 and False apart): a field left out costs nothing a slot."""
    return (value,) * ticks


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


def _findings_of(skipped: list[int], pending: bool) -> Callable[[Any], tuple[Any, ...]]:
    """A change's findings, parsed (``Finding``), or with ``pending`` read as far as which
    they are (``PendingFinding``: a reader in part parses the words it keeps)."""
    parse: Callable[[Any], Any] = PendingFinding if pending else parse_finding

    def findings(raw: Any) -> tuple[Any, ...]:
        found = []
        for item in _listed(raw, "findings"):
            try:
                found.append(parse(item))
            except (FormatError, KeyError, TypeError, ValueError):
                skipped[0] += 1  # a rule this gputui does not know, say
        return tuple(found)

    return findings
