"""Writing recordings: a block of ticks a line (version 3; one tick a line with
``version=2``), every tick durable as it is taken, rotated past a size (docs/record.md).

Version 3 keeps a block's ticks in memory until the block is full (``block_ticks`` ticks,
as many seconds of frame time) and writes it as one line; each tick is first appended to
the file's journal (``formats/journal``), so that a recorder killed at any moment leaves
every tick but the one it was writing: a reader takes the file's blocks, then the
journal's ticks after them. The order of the writes is what makes every moment safe:

1. each tick: its journal line, whole (a write cut short is cut off again); the journal
   synced to the disk once ``sync_s`` of frame time has passed since it last was;
2. a block: the journal synced (it holds every tick of the block), the block line written
   and the file synced, then the journal started again with a mark of where the file's
   blocks end, and synced (so a journal never lacks a tick the file lacks);
3. the end: the last block as in 2, the gzip stream's end, the file synced, the journal
   removed.

A pipe or a terminal gets the blocks alone, as they are written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import io
import math
import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path

from gputui.core.config import RECORD_BLOCK_TICKS, RECORD_SYNC_S
from gputui.core.model import Finding, Frame
from gputui.exporters.durable import (
    AppendFile,
    GzipLines,
    JournalFile,
    PlainLines,
    StreamLines,
    sync_directory,
)
from gputui.exporters.files import open_new, stream_target
from gputui.formats.block_writer import block_lines
from gputui.formats.cells import MAX_BLOCK_CELLS, cells
from gputui.formats.journal import MAX_JOURNAL_BYTES, Mark, TickEncoder, journal_of
from gputui.formats.recording import MAX_LINE_BYTES, VERSION, Header, header_line, tick_line

Sink = PlainLines | GzipLines | StreamLines


def rotated_name(path: Path, n: int) -> Path:
    """run.jsonl.gz -> run.1.jsonl.gz: the suffixes stay last, so tools still know them."""
    name = path.name
    stem, dot, rest = name.partition(".")
    return path.with_name(f"{stem}.{n}{dot}{rest}" if dot else f"{name}.{n}")


class RecordWriter:
    """Appends ticks to a recording; rotates past ``max_bytes``, keeping ``keep`` old files.

    The file is new (an existing one only with ``replace``, never through a link; with
    ``rotate_existing`` an existing one is rotated away first, as if it had filled); a
    rotated name held by anything but a recording of ours (a directory, a link) stops the
    rotation, says so in ``notices`` and the recording goes on in the current file.

    A write that fails (a full disk, a file system turned read-only) raises the OSError,
    naming the file; what was written stays readable up to the tick before
    (``held_until``), and the writer writes no more."""

    def __init__(
        self,
        path: Path,
        header: Header,
        max_bytes: int = 0,
        keep: int = 5,
        keep_secrets: bool = False,
        replace: bool = False,
        version: int = VERSION,
        block_ticks: int = RECORD_BLOCK_TICKS,
        sync_s: float = RECORD_SYNC_S,
        rotate_existing: bool = False,
    ) -> None:
        self.path = path
        self.version = version
        #: a block closes at this many ticks or this many seconds of frame time
        self.block_ticks = block_ticks
        self.sync_s = sync_s
        #: the ticks of the block being filled (version 3)
        self._block: list[tuple[Frame, tuple[Finding, ...]]] = []
        #: the most GPUs and processes a tick of the block holds
        self._widest = (0, 0)
        #: bytes a tick of the last block took in the file (unknown before the first)
        self._tick_bytes = math.inf
        self._header = header
        self._keep_secrets = keep_secrets
        self._max_bytes = max_bytes
        self._keep = keep
        self._encoder = TickEncoder(keep_secrets)
        self._sink: Sink | None = None
        self._journal: JournalFile | None = None
        self._run = ""
        #: the frame time of the last tick synced to the disk
        self._synced = -math.inf
        #: ticks written whole to the files so far (a block line's, or the journal's),
        #: rotated ones included
        self.ticks = 0
        #: the frame time of the last tick written whole (to the journal or a block line)
        self.held_until: float | None = None
        #: ticks in the journal and in no block line yet
        self.journaled = 0
        #: how many times the file was rotated (its older ticks moved to run.1.jsonl...)
        self.rotations = 0
        #: what the caller should tell the user (once each)
        self.notices: list[str] = []
        #: a write failed: nothing more is written, the journal is kept
        self.failed = False
        if rotate_existing and os.path.lexists(path):
            blocked = self._blocked()
            if blocked is not None:
                raise FileExistsError(errno.EEXIST, f"{path} exists and {blocked}: not rotated")
            self._shift()
        self._open(replace)

    def _abandon(self, handle: io.BufferedWriter) -> None:
        """A file that could not be begun (a full disk at its header) is taken back whole,
        its journal too: an empty file left there would be refused by the next ``record -o``
        as an earlier recording."""
        for part in (self._sink, self._journal):
            if part is not None:
                with contextlib.suppress(OSError):
                    part.close()
        with contextlib.suppress(OSError):
            handle.close()
        self._sink = self._journal = None
        for leftover in (self.path, journal_of(self.path)):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()

    @property
    def journal(self) -> Path | None:
        """The journal beside the file, while it holds ticks not yet in a block line."""
        return self._journal.path if self._journal is not None else None

    def _open(self, replace: bool = False) -> None:
        #: whether it writes a file of its own (a report can be made of it), not a stream
        self.regular_file = not stream_target(self.path)
        handle = open_new(self.path, replace)
        compressed = self.path.suffix == ".gz"
        if not self.regular_file or not handle.seekable():
            self._max_bytes = 0  # a pipe or a terminal: no size to rotate at, no journal
            self._sink = StreamLines(handle, compressed)
            self._sink.write(header_line(self._header, self._keep_secrets, self.version))
            return
        journaled = self.version >= 3
        self._run = secrets.token_hex(8) if journaled else ""
        header = dataclasses.replace(self._header, run=self._run or None)
        try:
            file = AppendFile(handle, self.path)
            self._sink = GzipLines(file) if compressed else PlainLines(file)
            self._sink.write(header_line(header, self._keep_secrets, self.version))
            self._sink.sync()
            sync_directory(self.path)
            if journaled:
                self._journal = JournalFile(journal_of(self.path), self._mark(), compressed)
                self._journal.sync()
        except OSError:
            self._abandon(handle)
            raise
        self._encoder.reset()

    def _mark(self) -> Mark:
        assert self._sink is not None
        return Mark(self._run, *self._sink.state())

    def write(self, frame: Frame, findings: Sequence[Finding] = ()) -> None:
        if self.failed or self._sink is None:
            raise ValueError(f"{self.path}: the recording has stopped")
        try:
            self._write(frame, tuple(findings))
        except BaseException:  # a write failed, or a signal's exception cut one short:
            self.failed = True  # a gzip stream past it cannot go on, the journal holds all
            raise

    def _write(self, frame: Frame, found: tuple[Finding, ...]) -> None:
        assert self._sink is not None
        if self.version < 3:
            self._sink.write(tick_line(frame, found, self._keep_secrets))
            self.ticks += 1
            self.held_until = frame.time
            self._sync_due(frame.time, self._sink)
        else:
            if not self._room_for(frame):
                self._flush_block()  # read back, the block would expand past its bound
            self._block.append((frame, found))
            if self._journal is not None:
                self._journal.append(self._encoder.line(frame, found))
                self.ticks += 1
                self.journaled += 1
                self.held_until = frame.time
            if self._block_full():
                self._flush_block()
            elif self._journal is not None:
                self._sync_due(frame.time, self._journal)
        if self._max_bytes and self._sink.state()[0] >= self._max_bytes:
            self._rotate()

    def _sync_due(self, now: float, what: Sink | JournalFile) -> None:
        """The policy: synced once ``sync_s`` of frame time has passed since the last."""
        if now - self._synced >= self.sync_s or now < self._synced:
            what.sync()
            self._synced = now

    def _rotatable(self) -> bool:
        """Whether every name rotation touches is a regular file of ours or free."""
        blocked = self._blocked()
        if blocked is None:
            return True
        self._max_bytes = 0  # rotation ends here; the recording goes on
        self.notices.append(f"{blocked}: no more rotation, recording on in {self.path}")
        return False

    def _blocked(self) -> str | None:
        """What holds a name rotation touches and is no regular file ("run.1.jsonl is a
        directory"), None where none does."""
        for path in (self.path, *(rotated_name(self.path, n) for n in range(1, self._keep + 1))):
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(st.st_mode):
                what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a plain file"
                return f"{path} is {what}"
        return None

    def _rotate(self) -> None:
        if not self._rotatable():
            return
        self._finish()
        self._shift()
        self._open(replace=True)
        self.rotations += 1

    def _shift(self) -> None:
        """The older files one number up (the oldest past ``keep`` removed), the file
        itself to run.1.jsonl."""
        oldest = rotated_name(self.path, self._keep)
        if oldest.exists():
            oldest.unlink()
        for n in range(self._keep - 1, 0, -1):
            older = rotated_name(self.path, n)
            if older.exists():
                older.rename(rotated_name(self.path, n + 1))
        if self._keep > 0:
            self.path.rename(rotated_name(self.path, 1))
        sync_directory(self.path)

    def _room_for(self, frame: Frame) -> bool:
        """Whether the block, ``frame`` added, still expands to at most ``MAX_BLOCK_CELLS``
        values when read back (``formats/cells``); the block's widest tick kept."""
        gpus, processes = self._widest if self._block else (0, 0)
        self._widest = (max(gpus, len(frame.gpus)), max(processes, len(frame.processes)))
        if not self._block or cells(len(self._block) + 1, *self._widest) <= MAX_BLOCK_CELLS:
            return True
        self._widest = (len(frame.gpus), len(frame.processes))
        return False

    def _block_full(self) -> bool:
        """Whether the block holds enough: ``block_ticks`` ticks or seconds, a journal near
        its bound, or with rotation as many bytes as the file has room for by the last
        block's size a tick (a file rotates near its size, not a block past it)."""
        ticks = len(self._block)
        if (
            ticks >= self.block_ticks
            or self._block[-1][0].time - self._block[0][0].time >= self.block_ticks
            or (self._journal is not None and self._journal.size >= MAX_JOURNAL_BYTES // 2)
        ):
            return True
        if not self._max_bytes or self._sink is None:
            return False
        return ticks * self._tick_bytes >= self._max_bytes - self._sink.state()[0]

    def _flush_block(self) -> None:
        """The ticks held so far as block lines (halved until each fits a line), with the
        journal synced first and started again after (the module's order)."""
        assert self._sink is not None
        if self._journal is not None:
            self._journal.sync()
        before = self._sink.state()[0]
        count = len(self._block)
        last = self._block[-1][0].time
        for line, _ticks in block_lines(self._block, self._keep_secrets, MAX_LINE_BYTES):
            self._sink.write(line)
        self._sink.sync()
        self._block = []
        if self._journal is None:  # a journal's ticks were counted as they were written
            self.ticks += count
        self.journaled = 0
        self.held_until = last
        if self._journal is not None:
            self._journal.restart(self._mark())
            self._journal.sync()
            self._synced = last
        self._encoder.reset()
        if self._max_bytes:  # the file's size a tick, for rotation (a pipe never rotates)
            self._tick_bytes = (self._sink.state()[0] - before) / count

    def _finish(self) -> None:
        """The last block written, the stream ended and synced, the journal removed."""
        if self._sink is None:
            return
        if self._block:
            self._flush_block()
        self._sink.finish()
        self._sink.sync()
        self._sink.close()
        self._sink = None
        if self._journal is not None:
            self._journal.remove()
            self._journal = None

    def close(self) -> None:
        """The recording finished; after a failed write, only the files closed (the
        journal stays: it holds the ticks the file's blocks do not)."""
        try:
            if not self.failed:
                self._finish()
        except OSError:
            self.failed = True
            raise
        finally:
            if self.failed:
                for part in (self._sink, self._journal):
                    if part is not None:
                        part.close()
                self._sink = self._journal = None
