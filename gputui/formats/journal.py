"""The journal beside a version-3 recording: every tick of the block being filled, on its
own line as it is taken (docs/record.md, "What a crash loses").

A recording's block line is written when the block is full (a minute of ticks); until
then its ticks are in ``run.jsonl.journal`` (``journal_of``), so that a recorder killed at
any moment leaves every tick it took but the one it was writing. The journal starts again
after each block (a write-ahead log cut at every block, as Prometheus cuts its WAL into
blocks, SQLite checkpoints its WAL into the database):

- its first line is the **mark**: ``{"journal": RUN, "at": N}``, and for a gzip recording
  ``"crc"`` and ``"size"``: the run id the recording's header holds (a journal of another
  file, or of an older one in its place, is not read), how many bytes of the recording
  hold its whole blocks, and the CRC-32 and length of what the gzip stream holds there,
  so that a restarted recorder can end the stream at that point and fold the journal's
  ticks in as a block (``exporters/recovery``);
- each further line is a tick, ``{"tick": k, "time": t, ...}``, with what changed since the
  tick before in the block line's own words (``shape``, ``gpus``, ``host``, ``processes``,
  ``notes``, ``jobs``, ``settings``; ``findings`` as ``[[tick, value], ...]`` written where
  a block writes them, and at least every ``refresh_s`` of frame time while their words
  change); the first tick carries every value.

A gzip recording's journal is a gzip stream, flushed after every line. A reader joins the
ticks into one block (``read_journal``) that ``formats/blocks`` checks as it checks a
block line: every value, every range, every text. A cut or damaged line ends the journal
there, with a notice naming it; the ticks before it stand.
"""

from __future__ import annotations

import json
import math
import operator
import os
import re
import stat
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import compress
from pathlib import Path
from typing import Any, Final

from gputui.core.config import MAX_BLOCK_TICKS
from gputui.core.model import Finding, Frame, GpuSample, HostSample, ProcessSample
from gputui.core.records import frozen
from gputui.core.units import fmt_time
from gputui.formats.block_writer import findings_shown, time_origin
from gputui.formats.blocks import mapping_of, stored_fields
from gputui.formats.cells import MAX_LINE_VALUES, bounded_cells, json_values
from gputui.formats.columns import BlobWriter
from gputui.formats.values import (
    MAX_GPUS,
    MAX_PROCESSES,
    MAX_TIME,
    FormatError,
    finding_dict,
    masked,
    note_dict,
    plain,
    record,
)

SUFFIX: Final = ".journal"
#: the most a journal may hold; a writer closes its block before the journal grows past it
MAX_JOURNAL_BYTES: Final = 64 * 1024 * 1024
MAX_LINE_BYTES: Final = 16 * 1024 * 1024
#: the JSON values its ticks may hold in all (``formats/cells.json_values``): one a field
#: that changed, about, so twice what the block they join may expand to
MAX_JOURNAL_VALUES: Final = 1 << 20
#: while only their words change, a block's findings are journaled at least this often
#: (frame time): what a tail read from a journal may hold of stale words
REFRESH_S: Final = 15.0
#: a run id: what a recording's header and its journal's mark share
RUN_ID: Final = re.compile(r"[0-9a-f]{8,64}")
#: the slots of a tick: the block line's key, the columns' part, the record, how many
_PARTS: Final[tuple[tuple[str, str, type, int], ...]] = (
    ("gpus", "gpu", GpuSample, MAX_GPUS),
    ("processes", "proc", ProcessSample, MAX_PROCESSES),
)
_CLASSES: Final[tuple[type, ...]] = (GpuSample, HostSample, ProcessSample)
_NAMES: Final[dict[type, tuple[str, ...]]] = {
    cls: tuple(f.name for f in stored_fields(cls)) for cls in _CLASSES
}
_VALUES: Final[dict[type, Callable[[Any], tuple[Any, ...]]]] = {
    cls: operator.attrgetter(*names) for cls, names in _NAMES.items()
}
_CODES: Final[dict[type, dict[str, str]]] = {
    cls: {f.name: f.code for f in stored_fields(cls)} for cls in _CLASSES
}
_NOT_YET: Final[Any] = object()
_GZIP_MAGIC: Final = b"\x1f\x8b"
#: a gzip journal is inflated this many bytes at a time: a damaged stream loses no more
_PIECE: Final = 4096
#: no more lines
_END: Final[Any] = object()


def journal_of(path: Path) -> Path:
    """Where a recording's journal lies: beside it, ``run.jsonl.gz.journal``."""
    return path.with_name(path.name + SUFFIX)


@frozen
class Mark:
    """A journal's first line: whose it is, and where its recording's whole blocks end."""

    run: str
    #: bytes of the recording (the file, as it lies on disk) holding its whole blocks
    at: int
    #: gzip: the CRC-32 and length (modulo 2**32) of what the stream holds up to ``at``
    crc: int | None = None
    size: int | None = None


def mark_line(mark: Mark) -> bytes:
    data: dict[str, Any] = {"journal": mark.run, "at": mark.at}
    if mark.crc is not None:
        data.update(crc=mark.crc, size=mark.size)
    return json.dumps(data, separators=(",", ":")).encode() + b"\n"


def parse_mark(data: Any) -> Mark:
    if not isinstance(data, dict) or not isinstance(data.get("journal"), str):
        raise FormatError("no journal mark")
    run = data["journal"]
    if not RUN_ID.fullmatch(run):
        raise FormatError("not a run id")
    numbers = [data.get(key) for key in ("at", "crc", "size")]
    for value in numbers:
        if value is not None and (type(value) is not int or not 0 <= value < 2**63):
            raise FormatError("a mark's offsets are counts of bytes")
    at, crc, size = numbers
    if at is None or (crc is None) != (size is None) or (crc is not None and crc >= 2**32):
        raise FormatError("a mark without its offset")
    return Mark(run, at, crc, size)


# -- writing


class TickEncoder:
    """Each tick of a block as a journal line: what changed since the tick before (the
    block's first tick: every value), credentials masked unless ``keep_secrets``."""

    def __init__(self, keep_secrets: bool = False, refresh_s: float = REFRESH_S) -> None:
        self._keep_secrets = keep_secrets
        #: while the findings' words change, they are written at least this often
        self._refresh_s = refresh_s
        self.reset()

    def reset(self) -> None:
        """A new block: its first tick carries every value."""
        self.ticks = 0
        self._last: dict[tuple[str, int], tuple[Any, ...]] = {}
        self._rest: list[Any] = [_NOT_YET] * 4  # shape, notes, jobs, settings
        self._found: tuple[Finding, ...] = ()
        self._shown: tuple[Any, ...] = ()
        self._written: tuple[Finding, ...] | None = None
        self._written_at = -1
        self._written_time = -math.inf

    def line(self, frame: Frame, findings: Sequence[Finding]) -> bytes:
        if not self._keep_secrets:
            frame = masked(frame)
        out: dict[str, Any] = {"tick": self.ticks, "time": frame.time}
        shape = (len(frame.gpus), frame.host is not None, len(frame.processes))
        rest = (shape, frame.notes, frame.jobs, frame.settings)
        for n, (key, value) in enumerate(zip(_REST, rest, strict=True)):
            if value != self._rest[n]:
                self._rest[n] = value
                out[key] = _REST_JSON[n](value)
        for key, kind, cls, _most in _PARTS:
            items = frame.gpus if cls is GpuSample else frame.processes
            slots = {}
            for j, item in enumerate(items):
                changed = self._changed((kind, j), cls, item)
                if changed:
                    slots[str(j)] = changed
            if slots:
                out[key] = slots
        host = self._changed(("host", 0), HostSample, frame.host)
        if host:
            out["host"] = host
        found = self._findings(frame.time, tuple(findings))
        if found:
            out["findings"] = found
        self.ticks += 1
        return _dumps(out)

    def _changed(self, key: tuple[str, int], cls: type, item: Any) -> dict[str, Any] | None:
        """The fields of a record that differ from its slot's last ones (all, the first
        time): an absent record writes nothing, and the slot keeps its last values."""
        if item is None:
            return None
        values = _VALUES[cls](item)
        before = self._last.get(key)
        if values == before:
            return None
        self._last[key] = values
        names = _NAMES[cls]
        if before is None:
            return dict(zip(names, values, strict=True))
        differ = list(map(operator.ne, values, before))
        return dict(zip(compress(names, differ), compress(values, differ), strict=True))

    def _findings(self, time: float, found: tuple[Finding, ...]) -> list[list[Any]]:
        """Where a block writes its findings (its first tick, and either side of a change
        of which stand: the tick before and this one), and while only their words change,
        at least every ``refresh_s``: the tick before a change is written with it."""
        k = self.ticks
        shown = findings_shown(found)
        changes: list[tuple[int, tuple[Finding, ...]]] = []
        if k == 0:
            changes.append((k, found))
        elif shown != self._shown:
            if self._written_at < k - 1 and self._found != self._written:
                changes.append((k - 1, self._found))
            changes.append((k, found))
        elif time - self._written_time >= self._refresh_s and found != self._written:
            changes.append((k, found))
        self._found, self._shown = found, shown
        if not changes:
            return []
        self._written, self._written_at, self._written_time = found, k, time
        keep = self._keep_secrets
        return [[at, [finding_dict(f, keep) for f in value]] for at, value in changes]


_REST: Final = ("shape", "notes", "jobs", "settings")
_REST_JSON: Final[tuple[Callable[[Any], Any], ...]] = (
    lambda shape: dict(zip(("gpus", "host", "processes"), shape, strict=True)),
    lambda notes: [note_dict(n) for n in notes],
    lambda jobs: [record(j) for j in jobs],
    plain,
)


def _dumps(data: dict[str, Any]) -> bytes:
    try:
        text = json.dumps(data, default=_as_json, allow_nan=False, separators=(",", ":"))
    except ValueError:  # a NaN or an infinity among the readings: unknown, as a block has it
        text = json.dumps(_finite(data), allow_nan=False, separators=(",", ":"))
    return text.encode() + b"\n"


def _as_json(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return record(value)
    raise TypeError(f"{type(value).__name__} is not written to a journal")


def _finite(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return plain(value)


# -- reading


@frozen
class Journal:
    """A journal read: its mark, and its ticks joined into one block line's dict (None: no
    tick), unchecked: ``formats/blocks`` checks it as it checks a block line."""

    path: Path
    mark: Mark
    block: dict[str, Any] | None


def read_journal(recording: Path, run: str, notices: list[str]) -> Journal | None:
    """The journal of ``recording`` (its header's run id ``run``), or None where it has
    none of its own: none there, a link or not a file, another owner's, another run's.
    A cut or damaged line ends it, the ticks before it kept, with a notice naming it."""
    path = journal_of(recording)
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.stat(recording).st_uid:
        notices.append(f"{path}: not a plain file of the recording's owner: not read")
        return None
    if st.st_size > MAX_JOURNAL_BYTES:
        notices.append(f"{path}: more than {MAX_JOURNAL_BYTES >> 20} MiB: not read")
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        notices.append(f"{path}: cannot be read ({exc.strerror or exc}): not read")
        return None
    said: list[str] = []
    with os.fdopen(fd, "rb") as handle:
        pieces = _Pieces(handle)
        journal = _joined(path, run, _lines(pieces), said)
        if pieces.drained() > MAX_JOURNAL_BYTES:
            notices.append(f"{path}: more than {MAX_JOURNAL_BYTES >> 20} MiB: not read")
            return None
    notices.extend(said)
    return journal


def _joined(
    path: Path, run: str, lines: Iterator[bytes | None], notices: list[str]
) -> Journal | None:
    """A journal's lines read and joined as far as they are whole ticks of run ``run``,
    each parsed as it comes: what a journal costs is a line or two and the block joined,
    never the file."""
    first = next(lines, _END)
    if first is _END:
        return None
    try:
        mark = parse_mark(_loads(first))
    except (FormatError, ValueError, RecursionError) as exc:
        notices.append(f"{path}:1: not a journal ({exc}): not read")
        return None
    if mark.run != run:
        return None  # an older recording's, in the place of this one: not this one's
    joiner = _Joiner()
    values = 0
    for number, raw in enumerate(lines, start=2):
        if number > MAX_BLOCK_TICKS + 1:
            notices.append(f"{path}: more than {MAX_BLOCK_TICKS:,} ticks: the rest left out")
            break
        values += json_values(raw or b"")
        try:
            if values > MAX_JOURNAL_VALUES:
                raise FormatError(f"more than {MAX_JOURNAL_VALUES:,} JSON values in all")
            cut = raw is not None and not raw.endswith(b"\n")
            joiner.add(None if cut else _loads(raw))
        except (FormatError, ValueError, RecursionError) as exc:
            last = next(lines, _END) is _END
            notices.append(_cut(path, number, last, joiner.times, exc))
            break
    return Journal(path, mark, joiner.block())


class _Pieces:
    """A journal's bytes a piece at a time (inflated, for a gzip one), up to where its
    stream ends, is cut or breaks (the line there is then a cut one), and never more than
    a piece past ``MAX_JOURNAL_BYTES``; ``drained`` reads what is left, to count it."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self.size = 0
        head = handle.read(len(_GZIP_MAGIC))
        self._inflate = zlib.decompressobj(wbits=31) if head == _GZIP_MAGIC else None
        self._head = head

    def __iter__(self) -> Iterator[bytes]:
        raw, self._head = self._head, b""
        while self.size <= MAX_JOURNAL_BYTES:
            raw += self._handle.read(_PIECE)
            if not raw:
                return
            piece = raw if self._inflate is None else self._inflated(raw)
            raw = b""
            if piece is None:
                return
            self.size += len(piece)
            yield piece

    def _inflated(self, raw: bytes) -> bytes | None:
        inflate = self._inflate
        assert inflate is not None
        if inflate.eof:
            return None
        try:
            piece = inflate.decompress(raw, MAX_JOURNAL_BYTES + 1 - self.size)
        except zlib.error:
            return None
        if inflate.unconsumed_tail:  # more than the bound: counted as past it
            self.size = MAX_JOURNAL_BYTES + 1
        return piece

    def drained(self) -> int:
        """The journal's size, reading what no line took (and holding none of it)."""
        for _ in self:
            pass
        return self.size


def _lines(pieces: Iterable[bytes]) -> Iterator[bytes | None]:
    """The lines of a journal as its pieces come, each with its newline (the last one
    perhaps without: cut); None for a line past ``MAX_LINE_BYTES``, whose bytes are
    skipped, never held."""
    buffer = bytearray()
    skipping = False
    for piece in pieces:
        start = 0
        while (end := piece.find(b"\n", start)) >= 0:
            if not skipping:
                buffer += piece[start : end + 1]
                yield bytes(buffer) if len(buffer) <= MAX_LINE_BYTES else None
            buffer.clear()
            skipping = False
            start = end + 1
        if not skipping:
            buffer += piece[start:]
            if len(buffer) > MAX_LINE_BYTES:
                buffer.clear()
                skipping = True
                yield None
    if buffer:
        yield bytes(buffer)


def _cut(path: Path, number: int, last: bool, times: list[float], exc: Exception) -> str:
    """What the reader says of the line that ended the journal (``last``: the file's)."""
    after = f", after the tick of {fmt_time(times[-1])}" if times else ""
    if last:
        return (
            f"{path}:{number}: its last tick{after} was cut short (the recorder stopped while "
            "writing it): skipped"
        )
    return f"{path}:{number}: a damaged tick{after} ({exc}): it and the ticks after it left out"


def _loads(raw: bytes | None) -> Any:
    if raw is None or len(raw) > MAX_LINE_BYTES:
        raise FormatError("a line longer than 16 MiB")
    if json_values(raw) > MAX_LINE_VALUES:
        raise FormatError(f"more than {MAX_LINE_VALUES:,} JSON values in a line")
    return json.loads(raw.decode("utf-8"), parse_constant=_no_constants)


def _no_constants(name: str) -> Any:
    raise FormatError(f"{name} is not a number here")


class _Joiner:
    """Ticks of a journal joined, in order, into one block line's lists of changes."""

    def __init__(self) -> None:
        self.times: list[float] = []
        #: the most GPU and process slots the ticks so far hold (their shape, or a slot
        #: they set): what the block joined expands to (``formats/cells``)
        self._widest = [0, 0]
        self._changes: dict[str, Any] = {
            "shape": {"gpus": [], "host": [], "processes": []},
            "gpus": {},
            "host": {},
            "processes": {},
            "notes": [],
            "jobs": [],
            "settings": [],
            "findings": [],
        }

    def add(self, data: Any) -> None:
        """One tick's line (None: a line cut short), checked whole before any of it is
        joined: a tick refused leaves the ticks before it as they were."""
        if not isinstance(data, dict):
            raise FormatError("a tick cut short" if data is None else "a tick is not an object")
        k = len(self.times)
        if data.get("tick") != k or type(data.get("tick")) is not int:
            raise FormatError(f"tick {data.get('tick')!r} where tick {k} was due")
        time = data.get("time")
        if not isinstance(time, int | float) or isinstance(time, bool) or not 0 <= time < MAX_TIME:
            raise FormatError("a tick's time is not a time")
        shape = mapping_of(data.get("shape"), "shape")
        widest = list(self._widest)
        slots: list[tuple[str, str, Mapping[str, Any]]] = []
        for n, (key, _kind, _cls, most) in enumerate(_PARTS):
            if type(shape.get(key)) is int:
                widest[n] = max(widest[n], shape[key])
            for slot, fields in mapping_of(data.get(key), key).items():
                if not slot.isdigit() or int(slot) >= most:
                    raise FormatError(f"{key}: slot {slot!r}")
                widest[n] = max(widest[n], int(slot) + 1)
                slots.append((key, slot, _fields_of(fields)))
        host = _fields_of(data.get("host"))
        bounded_cells(k + 1, *widest)  # as the block joined will be read: checked here
        found = self._findings(k, _listed(data.get("findings")))
        changes = self._changes
        for key in ("notes", "jobs", "settings"):
            if key in data:
                changes[key].append([k, data[key]])
        for key in ("gpus", "host", "processes"):
            if key in shape:
                changes["shape"][key].append([k, shape[key]])
        for key, slot, fields in slots:
            _join_fields(changes[key].setdefault(slot, {}), fields, k)
        _join_fields(changes["host"], host, k)
        changes["findings"].extend(found)
        self._widest = widest
        self.times.append(float(time))

    def _findings(self, k: int, items: list[Any]) -> list[Any]:
        """A tick's findings, each where a block writes them (this tick or the one
        before, after the last written)."""
        written = self._changes["findings"]
        after = written[-1][0] if written else -1
        for item in items:
            at = item[0] if isinstance(item, list) and len(item) == 2 else None
            if not isinstance(at, int) or not max(k - 1, after + 1) <= at <= k:
                raise FormatError("findings out of order")
            after = at
        return items

    def block(self) -> dict[str, Any] | None:
        """The ticks as a block line's dict (what ``formats/blocks`` reads), None if none:
        the readings in typed columns where they fit one, as ``block_line`` keeps them,
        the rest as changes."""
        ticks = len(self.times)
        if not ticks:
            return None
        blob = BlobWriter(ticks)
        t0 = time_origin(self.times)
        blob.put("time", "time", "d", [t - t0 for t in self.times])
        changes = dict(self._changes)
        for key, kind, cls, _most in _PARTS:
            changes[key] = {
                slot: _columns(blob, f"{kind}{slot}", cls, fields, ticks)
                for slot, fields in changes[key].items()
            }
        changes["host"] = _columns(blob, "host", HostSample, changes["host"], ticks)
        return {
            **changes,
            "block": ticks,
            "t0": t0,
            "columns": [spec.as_json() for spec in blob.specs],
            "data": blob.blob(),
        }


def _columns(
    blob: BlobWriter, part: str, cls: type, fields: dict[str, Any], ticks: int
) -> dict[str, Any]:
    """A record's fields: those a column holds put in ``blob``, the others' changes
    (unknown, absent, before the tick a record was first seen)."""
    codes = _CODES[cls]
    kept = {}
    for name, changes in fields.items():
        code = codes.get(name, "")
        if code and blob.put(part, name, code, _each_tick(changes, ticks, code in "DI")):
            continue
        kept[name] = changes if changes[0][0] == 0 else [[0, None], *changes]
    return kept


def _each_tick(changes: list[list[Any]], ticks: int, tuples: bool) -> list[Any]:
    """Changes ``[[tick, value], ...]`` (ticks rising) as one value a tick, None before the
    first; lists as tuples where the column holds tuples."""
    out: list[Any] = []
    value = None
    for at, new in changes:
        out.extend([value] * (at - len(out)))
        value = tuple(new) if tuples and isinstance(new, list) else new
    out.extend([value] * (ticks - len(out)))
    return out


def _fields_of(fields: Any) -> Mapping[str, Any]:
    """A record's fields in a tick, their names checked."""
    checked = mapping_of(fields, "a record")
    if any(len(name) > 64 for name in checked):
        raise FormatError("a field's name is too long")
    return checked


def _join_fields(lists: dict[str, Any], fields: Mapping[str, Any], k: int) -> None:
    for name, value in fields.items():
        lists.setdefault(name, []).append([k, value])


def _listed(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise FormatError("findings: not a list")
    return value
