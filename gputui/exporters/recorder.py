"""Writing recordings: a block of ticks a line (version 3; one tick a line with
``version=2``), flushed, rotated past a size (docs/record.md).

A ``.gz`` name is gzip-compressed with a sync flush after every line, so a recorder killed
at any moment leaves a file that reads back up to its last complete line: it loses at most
the block it was filling (``BLOCK_TICKS`` ticks, ``BLOCK_SECONDS`` of frame time).
"""

from __future__ import annotations

import gzip
import io
import math
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from gputui.core.model import Finding, Frame
from gputui.exporters.files import open_new, stream_target
from gputui.formats.block_writer import BLOCK_SECONDS, BLOCK_TICKS, block_line
from gputui.formats.recording import MAX_LINE_BYTES, VERSION, Header, header_line, tick_line


def rotated_name(path: Path, n: int) -> Path:
    """run.jsonl.gz -> run.1.jsonl.gz: the suffixes stay last, so tools still know them."""
    name = path.name
    stem, dot, rest = name.partition(".")
    return path.with_name(f"{stem}.{n}{dot}{rest}" if dot else f"{name}.{n}")


class RecordWriter:
    """Appends ticks to a recording; rotates past ``max_bytes``, keeping ``keep`` old files.

    The file is new (an existing one only with ``replace``, never through a link); a
    rotated name held by anything but a recording of ours (a directory, a link) stops the
    rotation, says so in ``notices`` and the recording goes on in the current file."""

    def __init__(
        self,
        path: Path,
        header: Header,
        max_bytes: int = 0,
        keep: int = 5,
        keep_secrets: bool = False,
        replace: bool = False,
        version: int = VERSION,
    ) -> None:
        self.path = path
        self.version = version
        #: the ticks of the block being filled (version 3)
        self._block: list[tuple[Frame, Sequence[Finding]]] = []
        #: bytes a tick of the last block took in the file (unknown before the first)
        self._tick_bytes = math.inf
        self._header = header
        self._keep_secrets = keep_secrets
        self._max_bytes = max_bytes
        self._keep = keep
        self._raw: io.BufferedIOBase | None = None
        self._out: io.BufferedIOBase | None = None
        self.lines = 0
        #: ticks written to the files so far, rotated ones included (a block's once its
        #: line is written)
        self.ticks = 0
        #: how many times the file was rotated (its older ticks moved to run.1.jsonl...)
        self.rotations = 0
        #: what the caller should tell the user (once each)
        self.notices: list[str] = []
        self._open(replace)

    def _open(self, replace: bool = False) -> None:
        #: whether it writes a file of its own (a report can be made of it), not a stream
        self.regular_file = not stream_target(self.path)
        raw = open_new(self.path, replace)
        self._raw = raw
        if not raw.seekable():  # a pipe or a terminal: no size to rotate at, nothing to tell
            self._max_bytes = 0
        self._out = gzip.GzipFile(fileobj=raw, mode="wb") if self.path.suffix == ".gz" else raw
        self._line(header_line(self._header, self._keep_secrets, self.version))

    def _line(self, line: bytes) -> None:
        assert self._out is not None and self._raw is not None
        self._out.write(line)
        self._out.flush()  # gzip: a sync flush, so every complete line can be read back
        if self._out is not self._raw:
            self._raw.flush()
        self.lines += 1

    def write(self, frame: Frame, findings: Sequence[Finding] = ()) -> None:
        if self.version < 3:
            self._line(tick_line(frame, findings, self._keep_secrets))
            self.ticks += 1
        else:
            self._block.append((frame, tuple(findings)))
            if not self._block_full():
                return
            self._flush_block()
        if self._max_bytes and self._raw is not None and self._raw.tell() >= self._max_bytes:
            self._rotate()

    def _rotatable(self) -> bool:
        """Whether every name rotation touches is a regular file of ours or free."""
        for path in (self.path, *(rotated_name(self.path, n) for n in range(1, self._keep + 1))):
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(st.st_mode):
                self._max_bytes = 0  # rotation ends here; the recording goes on
                what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a plain file"
                self.notices.append(
                    f"{path} is {what}: no more rotation, recording on in {self.path}"
                )
                return False
        return True

    def _rotate(self) -> None:
        if not self._rotatable():
            return
        self.close()
        oldest = rotated_name(self.path, self._keep)
        if oldest.exists():
            oldest.unlink()
        for n in range(self._keep - 1, 0, -1):
            older = rotated_name(self.path, n)
            if older.exists():
                older.rename(rotated_name(self.path, n + 1))
        if self._keep > 0:
            self.path.rename(rotated_name(self.path, 1))
        self._open(replace=True)
        self.rotations += 1

    def _block_full(self) -> bool:
        """Whether the block holds enough: ``BLOCK_TICKS``, ``BLOCK_SECONDS``, or with
        rotation, as many bytes as the file has room for by the last block's size a tick
        (a file rotates near its size, not a block past it)."""
        ticks = len(self._block)
        if (
            ticks >= BLOCK_TICKS
            or self._block[-1][0].time - self._block[0][0].time >= BLOCK_SECONDS
        ):
            return True
        if not self._max_bytes or self._raw is None:
            return False
        return ticks * self._tick_bytes >= self._max_bytes - self._raw.tell()

    def _flush_block(self) -> None:
        """The ticks held so far as block lines (halved until each fits a line)."""
        # the file's size per tick, for rotation (a pipe has no size, and never rotates)
        sized = self._raw if self._max_bytes else None
        before = sized.tell() if sized is not None else 0
        count = len(self._block)
        pending = [self._block]
        self._block = []
        while pending:
            ticks = pending.pop(0)
            line = block_line(ticks, self._keep_secrets)
            if len(line) > MAX_LINE_BYTES and len(ticks) > 1:
                half = len(ticks) // 2
                pending[:0] = [ticks[:half], ticks[half:]]
                continue
            self._line(line)
            self.ticks += len(ticks)
        if sized is not None:
            self._tick_bytes = (sized.tell() - before) / count

    def close(self) -> None:
        if self._block and self._out is not None:
            self._flush_block()
        if self._out is not None and self._out is not self._raw:
            self._out.close()
        if self._raw is not None:
            self._raw.close()
        self._out = self._raw = None
