"""Recordings: frames and findings as JSON lines, readable up to the last complete line.

Format (docs/record.md): the first line is a header (schema, version, source, devices,
interval); every further line is one tick: ``{"frame": ..., "findings": [...]}`` with the
frame as in the snapshot's ``latest``. A ``.gz`` name is gzip-compressed with a sync flush
after every line, so a recorder killed at any moment leaves a file that reads back up to
its last complete line.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputui import __version__
from gputui.advisor import Finding
from gputui.exporters.snapshot import SourceInfo, frame_dict, from_record, parse_frame, record
from gputui.model import DeviceInfo, Frame

SCHEMA = "gputui.record"
VERSION = 1
GZIP_MAGIC = b"\x1f\x8b"


class RecordingError(ValueError):
    """A file that is not a readable gputui recording; the message names the line."""


@dataclass(frozen=True, slots=True)
class Header:
    source: SourceInfo
    devices: tuple[DeviceInfo, ...]
    interval_s: float
    version: int = VERSION


@dataclass(frozen=True, slots=True)
class Tick:
    frame: Frame
    findings: tuple[Finding, ...]


def rotated_name(path: Path, n: int) -> Path:
    """run.jsonl.gz -> run.1.jsonl.gz: the suffixes stay last, so tools still know them."""
    name = path.name
    stem, dot, rest = name.partition(".")
    return path.with_name(f"{stem}.{n}{dot}{rest}" if dot else f"{name}.{n}")


class RecordWriter:
    """Appends ticks to a recording; rotates past ``max_bytes``, keeping ``keep`` old files."""

    def __init__(
        self,
        path: Path,
        header: Header,
        max_bytes: int = 0,
        keep: int = 5,
    ) -> None:
        self.path = path
        self._header = header
        self._max_bytes = max_bytes
        self._keep = keep
        self._raw: io.BufferedIOBase | None = None
        self._out: io.BufferedIOBase | None = None
        self.lines = 0
        self._open()

    def _open(self) -> None:
        raw = open(self.path, "wb")  # noqa: SIM115 - closed in close()/rotation
        os.chmod(self.path, 0o600)  # command lines can hold secrets
        self._raw = raw
        self._out = gzip.GzipFile(fileobj=raw, mode="wb") if self.path.suffix == ".gz" else raw
        h = self._header
        self._line(
            {
                "schema": SCHEMA,
                "version": VERSION,
                "gputui_version": __version__,
                "source": record(h.source),
                "devices": [record(d) for d in h.devices],
                "interval_s": h.interval_s,
            }
        )

    def _line(self, data: dict[str, Any]) -> None:
        assert self._out is not None and self._raw is not None
        self._out.write(json.dumps(data, allow_nan=False, separators=(",", ":")).encode() + b"\n")
        self._out.flush()  # gzip: a sync flush, so every complete line can be read back
        if self._out is not self._raw:
            self._raw.flush()
        self.lines += 1

    def write(self, frame: Frame, findings: Sequence[Finding] = ()) -> None:
        self._line({"frame": frame_dict(frame), "findings": [f.to_dict() for f in findings]})
        if self._max_bytes and self._raw is not None and self._raw.tell() >= self._max_bytes:
            self._rotate()

    def _rotate(self) -> None:
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
        self._open()

    def close(self) -> None:
        if self._out is not None and self._out is not self._raw:
            self._out.close()
        if self._raw is not None:
            self._raw.close()
        self._out = self._raw = None


@dataclass(frozen=True, slots=True)
class Recording:
    header: Header
    ticks: tuple[Tick, ...]
    notices: tuple[str, ...]


def _lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, bytes, complete) for each line; a truncated gzip ends quietly."""
    with open(path, "rb") as raw:
        magic = raw.read(2)
        raw.seek(0)
        reader: io.BufferedIOBase = gzip.GzipFile(fileobj=raw) if magic == GZIP_MAGIC else raw
        number = 0
        while True:
            try:
                line = reader.readline()
            except (EOFError, gzip.BadGzipFile, OSError):
                return  # the compressed stream stops where the recorder was killed
            if not line:
                return
            number += 1
            yield number, line, line.endswith(b"\n")


def read_recording(path: Path) -> Recording:
    notices: list[str] = []
    header: Header | None = None
    ticks: list[Tick] = []
    pending: tuple[int, str] | None = None  # an undecodable line, fatal unless it is the last
    for number, raw, complete in _lines(path):
        if pending is not None:
            raise RecordingError(f"{path}:{pending[0]}: {pending[1]}")
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if number == 1:
                raise RecordingError(f"{path}:1: not a gputui recording ({exc})") from exc
            pending = (number, f"damaged line ({exc})")
            if not complete:
                notices.append(f"{path}:{number}: the last line is incomplete and was skipped")
                pending = None
                break
            continue
        if header is None:
            header = _header(path, data)
            continue
        try:
            findings = tuple(Finding.from_dict(f) for f in data.get("findings", ()))
            ticks.append(Tick(parse_frame(data["frame"]), findings))
        except (KeyError, TypeError, ValueError) as exc:
            raise RecordingError(f"{path}:{number}: not a frame ({exc!r})") from exc
    if pending is not None:
        # the final line is damaged though complete: a write cut short, skip it
        notices.append(f"{path}:{pending[0]}: the last line is damaged and was skipped")
    if header is None:
        raise RecordingError(f"{path}: empty, not a gputui recording")
    return Recording(header, tuple(ticks), tuple(notices))


def _header(path: Path, data: Any) -> Header:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise RecordingError(f"{path}:1: not a gputui recording (no 'schema': '{SCHEMA}')")
    if data.get("version") != VERSION:
        raise RecordingError(
            f"{path}:1: recording version {data.get('version')!r}; this gputui reads {VERSION}"
        )
    try:
        source = from_record(SourceInfo, data["source"])
        devices = tuple(from_record(DeviceInfo, d) for d in data["devices"])
        return Header(source, devices, float(data["interval_s"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordingError(f"{path}:1: damaged header ({exc!r})") from exc
