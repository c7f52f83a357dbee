"""Files a recorder writes so that what it wrote stays written (docs/record.md).

``AppendFile`` writes only at its end, each write whole or taken back (a full disk leaves
no half line behind), and syncs to the disk when asked. A recording's lines go through a
sink: ``PlainLines``, or ``GzipLines``, one gzip member whose deflate stream is flushed to
a byte boundary after every line, so that every whole line inflates from what is on disk
whenever the writer stops; it says where its stream stands (the bytes on disk, the CRC-32
and length of what they inflate to), which is what a journal's mark records and what ends
the stream there later (``finished_member``). ``StreamLines`` writes a pipe or a terminal
as it is. ``JournalFile`` is a recording's journal (``formats/journal``) being written.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import os
import struct
import time
import zlib
from pathlib import Path
from typing import Final

from gputui.exporters.files import open_new
from gputui.formats.journal import Mark, mark_line

#: as Python's gzip module writes by default: the smallest file
GZIP_LEVEL: Final = 9
#: a journal's: the fastest (a journal is rewritten every block, and read only after a crash)
JOURNAL_LEVEL: Final = 1
_DEFLATE: Final = (zlib.DEFLATED, -zlib.MAX_WBITS, zlib.DEF_MEM_LEVEL, 0)
#: a file's data to the disk (its size with it); fsync where the system has no fdatasync
_DATA_SYNC: Final = getattr(os, "fdatasync", os.fsync)


class AppendFile:
    """A file gputui made (``files.open_new``), written at its end only: a write is whole,
    or on an error (or an exception a signal raised) what it had written is cut off again
    before the error is raised (an OSError with the file's name). ``size`` is where it
    ends."""

    def __init__(self, handle: io.BufferedWriter, path: Path) -> None:
        self.path = path
        self._handle = handle
        self._fd = handle.fileno()
        self.size = os.fstat(self._fd).st_size

    def append(self, data: bytes) -> None:
        start = self.size
        view = memoryview(data)
        try:
            while view:
                taken = os.pwrite(self._fd, view, start + len(data) - len(view))
                if not taken:  # no error and no byte: never wait on it forever
                    raise OSError(errno.EIO, "the file took no byte of a write")
                view = view[taken:]
        except BaseException as exc:  # a full disk, or a signal's exception mid-write
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, start)
            if isinstance(exc, OSError):
                raise self._named(exc) from exc
            raise
        self.size = start + len(data)

    def truncate(self, size: int) -> None:
        try:
            os.ftruncate(self._fd, size)
        except OSError as exc:
            raise self._named(exc) from exc
        self.size = size

    def sync(self) -> None:
        """What was written, on the disk: it outlives a power cut."""
        try:
            _DATA_SYNC(self._fd)
        except OSError as exc:
            raise self._named(exc) from exc

    def close(self) -> None:
        self._handle.close()

    def _named(self, exc: OSError) -> OSError:
        return OSError(exc.errno, exc.strerror or str(exc), str(self.path))


def sync_directory(path: Path) -> None:
    """The names in ``path``'s directory, on the disk (a new file, a rename): best effort,
    some file systems cannot open a directory for it."""
    with contextlib.suppress(OSError):
        fd = os.open(path.parent or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class PlainLines:
    """Lines into a plain file."""

    def __init__(self, file: AppendFile) -> None:
        self.file = file

    def write(self, line: bytes) -> None:
        self.file.append(line)

    def state(self) -> tuple[int, int | None, int | None]:
        """Where the lines end: the file's size (a plain file has no stream state)."""
        return self.file.size, None, None

    def finish(self) -> None:
        return

    def sync(self) -> None:
        self.file.sync()

    def close(self) -> None:
        self.file.close()


class GzipLines:
    """Lines into one gzip member, each flushed to a byte boundary of the deflate stream
    (Z_SYNC_FLUSH), so that every whole line inflates from what is on disk: the member is
    Python's gzip module's, its header without the file's name."""

    def __init__(self, file: AppendFile, level: int = GZIP_LEVEL) -> None:
        self.file = file
        self._deflate = zlib.compressobj(level, *_DEFLATE)
        self._crc = 0
        self._length = 0
        # magic, deflate, no flags, the time, "maximum compression", OS unknown
        file.append(b"\x1f\x8b\x08\x00" + struct.pack("<I", int(time.time())) + b"\x02\xff")

    def write(self, line: bytes) -> None:
        data = self._deflate.compress(line) + self._deflate.flush(zlib.Z_SYNC_FLUSH)
        self.file.append(data)
        self._crc = zlib.crc32(line, self._crc)
        self._length += len(line)

    def state(self) -> tuple[int, int | None, int | None]:
        """Where the stream stands: its bytes on disk, the CRC-32 and length (modulo
        2**32) of what they inflate to."""
        return self.file.size, self._crc, self._length & 0xFFFFFFFF

    def finish(self) -> None:
        """The member's end: the last deflate block and the trailer."""
        self.file.append(self._deflate.flush(zlib.Z_FINISH) + _trailer(self._crc, self._length))

    def sync(self) -> None:
        self.file.sync()

    def close(self) -> None:
        self.file.close()


def finished_member(line: bytes, crc: int, length: int, level: int = GZIP_LEVEL) -> bytes:
    """What ends a gzip member cut at a flush point (``GzipLines.state``: what it held, its
    CRC-32 and length there) with ``line`` as its last: a deflate stream of its own from
    that byte boundary on, and the trailer of the whole member."""
    deflate = zlib.compressobj(level, *_DEFLATE)
    body = deflate.compress(line) + deflate.flush(zlib.Z_FINISH)
    return body + _trailer(zlib.crc32(line, crc), length + len(line))


def _trailer(crc: int, length: int) -> bytes:
    return struct.pack("<II", crc & 0xFFFFFFFF, length & 0xFFFFFFFF)


class StreamLines:
    """Lines into a pipe, a terminal or a device: flushed, never synced or cut back."""

    def __init__(self, handle: io.BufferedWriter, compressed: bool) -> None:
        self._raw = handle
        self._out: io.BufferedIOBase = (
            gzip.GzipFile(fileobj=handle, mode="wb") if compressed else handle
        )

    def write(self, line: bytes) -> None:
        self._out.write(line)
        self._out.flush()  # gzip: a sync flush, so every complete line can be read back
        if self._out is not self._raw:
            self._raw.flush()

    def state(self) -> tuple[int, int | None, int | None]:
        return 0, None, None

    def finish(self) -> None:
        if self._out is not self._raw:
            self._out.close()

    def sync(self) -> None:
        return

    def close(self) -> None:
        self._raw.close()


class JournalFile:
    """A recording's journal being written: made anew (one left by a recorder before is
    replaced), its mark first; the ticks appended, synced when asked; started again with a
    new mark after each block; removed once the recording is closed. A gzip recording's
    journal is a gzip stream too, flushed line by line (a tick's changes take a third of
    their bytes beside the tick before), at the fastest level: it is rewritten every block."""

    def __init__(self, path: Path, mark: Mark, compressed: bool = False) -> None:
        self.path = path
        self._compressed = compressed
        self._file = AppendFile(open_new(path, replace=True), path)
        self._lines = self._started(mark)
        sync_directory(path)

    def _started(self, mark: Mark) -> PlainLines | GzipLines:
        lines = GzipLines(self._file, JOURNAL_LEVEL) if self._compressed else PlainLines(self._file)
        lines.write(mark_line(mark))
        return lines

    @property
    def size(self) -> int:
        return self._file.size

    def append(self, line: bytes) -> None:
        self._lines.write(line)

    def sync(self) -> None:
        self._file.sync()

    def restart(self, mark: Mark) -> None:
        self._file.truncate(0)
        self._lines = self._started(mark)

    def close(self) -> None:
        self._file.close()

    def remove(self) -> None:
        self._file.close()
        os.unlink(self.path)
        sync_directory(self.path)
