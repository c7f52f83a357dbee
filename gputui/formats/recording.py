"""The recording's line codec: frames and findings as JSON lines, and the reader.

Format (docs/record.md): the first line is a header (schema, version, source, devices,
interval). In version 3 every further line is a block of ticks in typed columns
(``formats/blocks``); in versions 1 and 2 one tick, ``{"frame": ..., "findings": [...]}``
with the frame as in the snapshot's ``latest``. The reader takes plain or gzip files and
reads up to the last complete line, so a recorder killed at any moment leaves a readable
file.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import re
import zlib
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from gputui import __version__
from gputui.core.model import DeviceInfo, Finding, Frame, SourceInfo
from gputui.core.records import frozen, record
from gputui.core.sanitize import clean
from gputui.core.units import fmt_time
from gputui.formats.blocks import Block, Only, parse_block, parse_columns
from gputui.formats.cells import MAX_LINE_VALUES, MAX_READ_CELLS, frame_cells, json_values
from gputui.formats.journal import RUN_ID, read_journal
from gputui.formats.values import (
    MAX_GPUS,
    FormatError,
    finding_dict,
    frame_dict,
    from_record,
    parse_finding,
    parse_frame,
    parse_source,
    source_dict,
)
from gputui.formats.values import record as record_dict

# Bounds on what a file may make us do (docs/security.md): a longer line, a file claiming
# more, is refused or cut with a notice, never read into memory whole.
MAX_LINE_BYTES = 16 * 1024 * 1024
MAX_TICKS = 500_000  # nearly six days at 1 s; the rest of a longer file is left out
MAX_INTERVAL_S = 3600.0
#: what ``stream_size`` inflates of a gzip file to guess its ratio
SIZE_SAMPLE_BYTES = 1 << 18

SCHEMA = "gputui.record"
#: 2: notes became objects with a kind (version 1 files still read); 3: blocks of ticks in
#: typed columns (``formats/blocks``), what `gputui record` writes
VERSION = 3
LINE_VERSION = 2  # the last version of one tick a line, still written on request
READABLE_VERSIONS = (1, 2, 3)
GZIP_MAGIC = b"\x1f\x8b"


class RecordingError(ValueError):
    """A file that is not a readable gputui recording; the message names the line."""


#: the header's word for findings the recorder's own advisor judged as the live screen does
LIVE_FINDINGS = "live"
MAX_VERSION_CHARS = 64


@frozen
class Header:
    source: SourceInfo
    devices: tuple[DeviceInfo, ...]
    interval_s: float
    version: int = VERSION
    #: whether every tick's findings are those the recorder's monitor judged as it ran, with
    #: the live screen's rules and cadence (``gputui record``); False for a writer that
    #: passes findings of its own, or none
    live_findings: bool = False
    #: the gputui that wrote the file (None where the header does not say)
    gputui_version: str | None = None
    #: the file's run id, which its journal's mark repeats (``formats/journal``): None in
    #: a file with no journal (a stream, version 2, or written before journals)
    run: str | None = None

    def findings_judged_here(self) -> bool:
        """Whether the recorded findings are the ones this gputui's advisor gives: judged
        live by the same release, so the same rules and thresholds."""
        return self.live_findings and self.gputui_version == __version__


@frozen
class Tick:
    frame: Frame
    findings: tuple[Finding, ...]


def header_line(header: Header, keep_secrets: bool = False, version: int = VERSION) -> bytes:
    return _encode(
        {
            "schema": SCHEMA,
            "version": version,
            "gputui_version": __version__,
            "source": source_dict(header.source, keep_secrets),
            "devices": [record_dict(d) for d in header.devices],
            "interval_s": header.interval_s,
            **({"findings": LIVE_FINDINGS} if header.live_findings else {}),
            **({"run": header.run} if header.run else {}),
        }
    )


def tick_line(frame: Frame, findings: Sequence[Finding] = (), keep_secrets: bool = False) -> bytes:
    return _encode(
        {
            "frame": frame_dict(frame, keep_secrets),
            "findings": [finding_dict(f, keep_secrets) for f in findings],
        }
    )


def _encode(data: dict[str, Any]) -> bytes:
    return json.dumps(data, allow_nan=False, separators=(",", ":")).encode() + b"\n"


@frozen
class Recording:
    header: Header
    ticks: tuple[Tick, ...]
    notices: tuple[str, ...]


def _lines(
    path: Path, notices: list[str], state: _State | None = None
) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, bytes, complete) for each line; a gzip stream cut short ends the
    lines with a notice (a recorder killed, or still writing; a copy cut in transit).
    ``state.end``: how far into the file the lines read reach."""
    with open(path, "rb") as raw:
        magic = raw.read(2)
        raw.seek(0)
        reader: io.BufferedIOBase = gzip.GzipFile(fileobj=raw) if magic == GZIP_MAGIC else raw
        number = 0
        state = state or _State(0)
        while True:
            try:
                line = reader.readline(MAX_LINE_BYTES + 1)
            except (EOFError, gzip.BadGzipFile, OSError, zlib.error):
                state.end = raw.tell()
                notices.append(
                    f"{path}: the compressed stream ends early, after line {number} (the "
                    "recorder was killed or is still writing, or the copy was cut): read up "
                    "to there"
                )
                return
            state.end = raw.tell()  # a gzip stream's reader reads ahead: at its end, all
            if not line:
                return
            number += 1
            if len(line) > MAX_LINE_BYTES:
                raise RecordingError(f"{path}:{number}: a line longer than 16 MiB: not a recording")
            if json_values(line) > MAX_LINE_VALUES:
                raise RecordingError(
                    f"{path}:{number}: a line of more than {MAX_LINE_VALUES:,} JSON values: "
                    "not a recording"
                )
            yield number, line, line.endswith(b"\n")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a number here")


def _json(raw: bytes) -> Any:
    return json.loads(raw.decode("utf-8"), parse_constant=_no_constants)


def read_recording(path: Path) -> Recording:
    """Every tick of a recording, checked line by line: a hostile or damaged file gives a
    RecordingError naming the file and line, never a traceback or a memory blow-up."""
    notices: list[str] = []
    stream = stream_recording(path, notices)
    header = next(stream)
    assert isinstance(header, Header)
    ticks = tuple(t for t in stream if isinstance(t, Tick))
    return Recording(header, ticks, tuple(notices))


def read_header(path: Path) -> Header:
    """A recording's header alone (its first line), checked as the reader checks it."""
    header = next(stream_recording(path, []))
    assert isinstance(header, Header)
    return header


def stream_recording(
    path: Path,
    notices: list[str],
    max_ticks: int | None = None,
    findings: bool = True,
    share: Share | None = None,
    columns: bool = False,
    only: Only | None = None,
    max_cells: int | None = None,
) -> Iterator[Header | Tick | Block | Border]:
    """The header, then each tick as read, checked as ``read_recording`` does; what the
    reader had to say in ``notices`` by the end. ``findings=False``: recorded findings
    left unread. ``share``: of a version-3 file that ``Share`` alone (its warm-up, its
    ``Border``, its ticks: ``max_ticks`` counts those alone). ``columns=True``: a block
    comes whole, a ``Block`` (one past ``max_ticks`` tick by tick, up to it); ``only``:
    those fields of it alone (``blocks.Only``; one past ``max_ticks`` left out). Read to
    its end, a file's journal follows: the ticks after its last block (``_journal``).
    ``max_cells``: the values the ticks kept may expand to in all (``formats/cells``;
    ``MAX_READ_CELLS`` unless given), as ``max_ticks`` bounds their count, the rest left
    out with a notice."""
    warm = share is not None and share.begin
    state = _State(
        MAX_TICKS if max_ticks is None else max_ticks,
        count=-math.inf if warm else 0,  # warm-up: no cap
        max_cells=MAX_READ_CELLS if max_cells is None else max_cells,
        cells=-math.inf if warm else 0,
    )
    header: Header | None = None
    for document in _documents(path, notices, share, state):
        if isinstance(document, Border):
            yield document
            # warm-up before: the share's own count from here
            state.count = state.skipped = state.cells = 0
            continue
        number, data = document
        if header is None:
            header = _header(path, data)
            yield header
            continue
        ticks, skipped = _ticks(path, number, data, header.version, findings, columns, only)
        state.skipped += skipped
        yield from _taken(path, number, ticks, state, notices)
        if state.stopped:
            break
    if header is None:
        raise RecordingError(f"{path}: empty, not a gputui recording")
    if not state.stopped and (share is None or share.end is None):
        yield from _taken(path, 0, _journal(path, header, state, notices, findings), state, notices)
    if state.skipped:
        notices.append(f"{path}: {state.skipped} recorded finding(s) not understood, skipped")


@record
class _State:
    """Where a reading of a recording stands."""

    max_ticks: int
    count: float = 0
    #: the values the ticks kept expand to (``formats/cells``), and the most they may
    cells: float = 0
    max_cells: int = MAX_READ_CELLS
    #: the last tick's time
    last: float | None = None
    #: recorded findings not understood
    skipped: int = 0
    #: stopped at ``max_ticks``
    stopped: bool = False
    #: how far into the file (its bytes on disk) the lines read reach
    end: int = 0


def _taken(
    path: Path, number: int, ticks: list[Tick] | Block, state: _State, notices: list[str]
) -> Iterator[Tick | Block]:
    """A line's ticks (a block whole where ``max_ticks`` leaves room for it), in order;
    past ``max_ticks``, a notice and ``state.stopped``."""
    if isinstance(ticks, Block):
        fits = state.cells + ticks.cells <= state.max_cells
        if fits and state.count + len(ticks) <= state.max_ticks:
            if state.last is not None and ticks.times[0] < state.last:
                raise RecordingError(f"{path}:{number}: time goes backwards")
            state.last = ticks.times[-1]
            state.count += len(ticks)
            state.cells += ticks.cells
            yield ticks
            return
        if ticks.partial:
            _stop(path, state, notices, fits)
            return
        ticks = [Tick(frame, found) for frame, found in ticks.pairs()]
    for tick in ticks:
        size = frame_cells(tick.frame)
        fits = state.cells + size <= state.max_cells
        if state.count >= state.max_ticks or not fits:
            _stop(path, state, notices, fits)
            return
        if state.last is not None and tick.frame.time < state.last:
            raise RecordingError(f"{path}:{number}: time goes backwards")
        state.last = tick.frame.time
        state.count += 1
        state.cells += size
        yield tick


def _stop(path: Path, state: _State, notices: list[str], fits: bool) -> None:
    """The reading stops at a bound: past its ticks, or (``fits`` False) its values."""
    if fits:
        notices.append(f"{path}: more than {state.max_ticks:,} ticks; the rest was left out")
    else:
        notices.append(
            f"{path}: its ticks expand to more than {state.max_cells:,} values (each GPU's "
            "and process's fields a tick); the rest was left out"
        )
    state.stopped = True


def _journal(
    path: Path, header: Header, state: _State, notices: list[str], findings: bool
) -> list[Tick]:
    """The ticks of the file's journal after its last block (a recorder killed, or still
    recording, before it closed their block), with a notice saying so; none where the
    file has no journal of its own, or grew past the journal's mark while it was read."""
    if header.run is None or header.version < 3:
        return []
    journal = read_journal(path, header.run, notices)
    if journal is None or journal.block is None:
        return []
    if journal.mark.at > state.end:
        notices.append(f"{path}: written to while it was read: read up to its last block")
        return []
    try:
        pairs, skipped = parse_block(journal.block, findings)
    except (FormatError, KeyError, TypeError, ValueError, RecursionError) as exc:
        notices.append(f"{journal.path}: not ticks of this recording ({exc}): not read")
        return []
    last = state.last
    ticks = [Tick(f, found) for f, found in pairs if last is None or f.time > last]
    if ticks:
        state.skipped += skipped
        first, final = fmt_time(ticks[0].frame.time), fmt_time(ticks[-1].frame.time)
        notices.append(
            f"{path}: {len(ticks)} tick(s), {first} to {final}, read from its journal "
            f"{journal.path.name}: its recorder did not close their block (stopped, or "
            "still recording)"
        )
    return ticks


def _documents(
    path: Path, notices: list[str], share: Share | None = None, state: _State | None = None
) -> Iterator[tuple[int, Any] | Border]:
    """Each line's number and JSON document; a damaged or cut last line is skipped with a
    notice, a damaged one before it is an error naming it. With ``share``, the lines of
    that share alone (``_shared``), and its ``Border``."""
    pending: tuple[int, str] | None = None  # an undecodable line, fatal unless it is the last
    lines = _lines(path, notices, state) if share is None else _shared(path, notices, share, state)
    short = False  # stopped where a share ends, not at the file's end
    for line in lines:
        if isinstance(line, Border):
            yield line
            continue
        if isinstance(line, _ShareEnds):
            short = True
            break
        number, raw, complete = line
        if pending is not None:
            raise RecordingError(f"{path}:{pending[0]}: {pending[1]}")
        mark = _mark(raw) if number > 1 else None
        try:
            data = _json(raw)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            if number == 1:
                raise RecordingError(f"{path}:1: not a gputui recording ({reason})") from exc
            pending = (number, f"damaged line ({reason})")
            if not complete:
                notices.append(f"{path}:{number}: the last line is incomplete and was skipped")
                return
            continue
        if mark is not None and (
            not isinstance(data, dict) or (data.get("t0"), data.get("block")) != mark
        ):
            # what its start says is how a long run is cut into shares: it must be true
            raise RecordingError(f"{path}:{number}: a block whose start and body disagree")
        yield number, data
    if pending is not None and short:
        raise RecordingError(f"{path}:{pending[0]}: {pending[1]}")
    if pending is not None:
        # the final line is damaged though complete: a write cut short, skip it
        notices.append(f"{path}:{pending[0]}: the last line is damaged and was skipped")


@frozen
class Share:
    """One stretch of a version-3 recording, told by where its lines start in the stream
    (the file, or what its gzip stream holds): from the first line starting at or past
    ``begin`` (0: the header on) up to the first one at or past ``end`` (None: to the
    end). Two readers agree on where a cut falls without reading the file first, each from
    its own side: the line holds its place in the stream."""

    begin: int
    end: int | None
    #: before its first line, the blocks whose first tick lies this many seconds before
    #: that line's: what warms up a reader of the share (they come before its ``Border``)
    warm_s: float = 0.0


@frozen
class Border:
    """Where a share that does not begin at the start begins: its first block's first
    tick. What the reader yields before it is warm-up."""

    time: float


class NotBlocks(RecordingError):
    """A share's reader met a line before its share that is not a block line: only a
    reading of the whole file can say what is wrong with it."""


class _ShareEnds:
    """Where a share's reader stops short of the file's end: a damaged line just before
    is no cut last line, but an error."""


_SHARE_ENDS: Final = _ShareEnds()


def _shared(
    path: Path, notices: list[str], share: Share, state: _State | None = None
) -> Iterator[tuple[int, bytes, bool] | Border | _ShareEnds]:
    """The header and the lines of ``share``, its warm-up and ``Border`` before it where it
    does not begin at the start (at least the block just before it, however far back).
    The lines before it are only looked at (where a block starts and when), not parsed."""
    offset = 0
    warm: deque[tuple[float, int, bytes, bool]] = deque()
    begun = share.begin == 0
    for number, raw, complete in _lines(path, notices, state):
        at, offset = offset, offset + len(raw)
        if number == 1:
            yield number, raw, complete
            continue
        if share.end is not None and at >= share.end:
            yield _SHARE_ENDS
            return
        if begun:
            yield number, raw, complete
            continue
        mark = _mark(raw)
        if mark is None:
            raise NotBlocks(f"{path}:{number}: not a block line, before a share")
        while len(warm) > 1 and warm[0][0] < mark[0] - share.warm_s:
            warm.popleft()
        if at < share.begin:
            warm.append((mark[0], number, raw, complete))
            continue
        begun = True
        kept = [w for w in warm if w[0] >= mark[0] - share.warm_s] or list(warm)[-1:]
        for _t0, *line in kept:
            yield tuple(line)  # type: ignore[misc]
        warm.clear()
        yield Border(mark[0])
        yield number, raw, complete


def stream_size(path: Path) -> int:
    """About how many bytes a recording's lines hold: its size, or what its gzip stream
    holds: the size its trailer gives (modulo 2**32) plus the multiple of 2**32 nearest
    what the start of the stream says of its ratio, or that guess where the trailer is far
    from it. Where the shares of a long run are cut; a wrong guess only makes them
    unequal."""
    size = path.stat().st_size
    try:
        with open(path, "rb") as f:
            if f.read(2) != GZIP_MAGIC or size < 32:
                return size
            f.seek(-4, io.SEEK_END)
            trailer = int.from_bytes(f.read(4), "little")
            f.seek(0)
            start = f.read(SIZE_SAMPLE_BYTES)
        inflate = zlib.decompressobj(wbits=31)
        out = len(inflate.decompress(start, SIZE_SAMPLE_BYTES * 64))
        taken = len(start) - len(inflate.unconsumed_tail) - len(inflate.unused_data)
    except (OSError, zlib.error):
        return size
    guess = out * size / max(1, taken)
    said = trailer + max(0, round((guess - trailer) / 2**32)) * 2**32
    # a stream cut short (a recorder killed, or still writing) ends in no trailer at all
    return said if guess / 2 <= said <= guess * 2 else round(guess)


#: how a version-3 block line starts (``block_line``): its tick count and first time
_BLOCK_START = re.compile(rb'^\{"block":([0-9]{1,9}),"t0":(-?[0-9][0-9.eE+-]{0,30}),')


def _mark(raw: bytes) -> tuple[float, int] | None:
    """A block line's first time and tick count, read from its start without parsing it;
    None for a line that does not start as gputui writes blocks."""
    found = _BLOCK_START.match(raw)
    if found is None:
        return None
    try:
        t0 = float(found.group(2))
    except ValueError:
        return None
    return (t0, int(found.group(1))) if math.isfinite(t0) else None  # (t0, ticks)


def _ticks(
    path: Path,
    number: int,
    data: Any,
    version: int,
    findings: bool,
    columns: bool = False,
    only: Only | None = None,
) -> tuple[list[Tick] | Block, int]:
    """The ticks of one line (one tick before version 3, a block since: a ``Block`` with
    ``columns``), and how many recorded findings were not understood."""
    if version < 3:
        tick, skipped = _tick(path, number, data)
        return [tick], skipped
    try:
        if not isinstance(data, dict):
            raise FormatError("a block is not an object")
        if columns:
            return parse_columns(data, findings, only)
        pairs, skipped = parse_block(data, findings)
    except (FormatError, KeyError, TypeError, ValueError, RecursionError) as exc:
        raise RecordingError(f"{path}:{number}: not a block of ticks ({exc})") from exc
    return [Tick(frame, findings) for frame, findings in pairs], skipped


def _tick(path: Path, number: int, data: Any) -> tuple[Tick, int]:
    """One tick line's frame and findings, and how many findings were not understood."""
    skipped = 0
    try:
        if not isinstance(data, dict):
            raise FormatError("a tick is not an object")
        frame = parse_frame(data["frame"])
        findings: list[Finding] = []
        for item in data.get("findings") or ():
            try:
                findings.append(parse_finding(item))
            except (FormatError, KeyError, TypeError, ValueError):
                skipped += 1  # a rule this gputui does not know, say
    except (FormatError, KeyError, TypeError, ValueError, RecursionError) as exc:
        raise RecordingError(f"{path}:{number}: not a frame ({exc})") from exc
    return Tick(frame, tuple(findings)), skipped


def _release(value: Any) -> str | None:
    """The header's gputui release, as text fit to show (None where it is none)."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_VERSION_CHARS:
        return None
    return clean(value)


def _run(value: Any) -> str | None:
    """The header's run id, where it is one."""
    return value if isinstance(value, str) and RUN_ID.fullmatch(value) else None


def _header(path: Path, data: Any) -> Header:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise RecordingError(f"{path}:1: not a gputui recording (no 'schema': '{SCHEMA}')")
    if data.get("version") not in READABLE_VERSIONS:
        raise RecordingError(
            f"{path}:1: recording version {data.get('version')!r}; this gputui reads versions "
            + ", ".join(str(v) for v in READABLE_VERSIONS)
        )
    try:
        source = parse_source(data["source"])
        listed = data["devices"]
        if not isinstance(listed, list) or len(listed) > MAX_GPUS:
            raise FormatError(f"devices: a list of at most {MAX_GPUS} GPUs expected")
        devices = tuple(from_record(DeviceInfo, d) for d in listed)
        interval = data["interval_s"]
        if (
            isinstance(interval, bool)
            or not isinstance(interval, int | float)
            or not math.isfinite(interval)
            or not 0 < interval <= MAX_INTERVAL_S
        ):
            raise FormatError(f"interval_s {interval!r}: not a positive number of seconds")
        return Header(
            source,
            devices,
            float(interval),
            data["version"],
            live_findings=data.get("findings") == LIVE_FINDINGS,
            gputui_version=_release(data.get("gputui_version")),
            run=_run(data.get("run")),
        )
    except (FormatError, KeyError, TypeError, ValueError) as exc:
        raise RecordingError(f"{path}:1: damaged header ({exc})") from exc
