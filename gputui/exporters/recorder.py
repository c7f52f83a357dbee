"""Writing recordings: one tick a line, flushed, rotated past a size (docs/record.md).

A ``.gz`` name is gzip-compressed with a sync flush after every line, so a recorder killed
at any moment leaves a file that reads back up to its last complete line.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from gputui.core.model import Finding, Frame
from gputui.exporters.files import open_new
from gputui.formats.recording import Header, header_line, tick_line


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
    ) -> None:
        self.path = path
        self._header = header
        self._keep_secrets = keep_secrets
        self._max_bytes = max_bytes
        self._keep = keep
        self._raw: io.BufferedIOBase | None = None
        self._out: io.BufferedIOBase | None = None
        self.lines = 0
        #: what the caller should tell the user (once each)
        self.notices: list[str] = []
        self._open(replace)

    def _open(self, replace: bool = False) -> None:
        raw = open_new(self.path, replace)
        self._raw = raw
        self._out = gzip.GzipFile(fileobj=raw, mode="wb") if self.path.suffix == ".gz" else raw
        self._line(header_line(self._header, self._keep_secrets))

    def _line(self, line: bytes) -> None:
        assert self._out is not None and self._raw is not None
        self._out.write(line)
        self._out.flush()  # gzip: a sync flush, so every complete line can be read back
        if self._out is not self._raw:
            self._raw.flush()
        self.lines += 1

    def write(self, frame: Frame, findings: Sequence[Finding] = ()) -> None:
        self._line(tick_line(frame, findings, self._keep_secrets))
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

    def close(self) -> None:
        if self._out is not None and self._out is not self._raw:
            self._out.close()
        if self._raw is not None:
            self._raw.close()
        self._out = self._raw = None
