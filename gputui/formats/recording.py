"""The recording's line codec: frames and findings as JSON lines, and the reader.

Format (docs/record.md): the first line is a header (schema, version, source, devices,
interval); every further line is one tick: ``{"frame": ..., "findings": [...]}`` with the
frame as in the snapshot's ``latest``. The reader takes plain or gzip files and reads up to
the last complete line, so a recorder killed at any moment leaves a readable file.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputui import __version__
from gputui.formats.records import (
    frame_dict,
    from_record,
    parse_frame,
    parse_source,
    record,
    source_dict,
)
from gputui.model import DeviceInfo, Finding, Frame, SourceInfo

SCHEMA = "gputui.record"
#: 2: notes became objects with a kind (version 1 files still read)
VERSION = 2
READABLE_VERSIONS = (1, 2)
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


def header_line(header: Header) -> bytes:
    return _encode(
        {
            "schema": SCHEMA,
            "version": VERSION,
            "gputui_version": __version__,
            "source": source_dict(header.source),
            "devices": [record(d) for d in header.devices],
            "interval_s": header.interval_s,
        }
    )


def tick_line(frame: Frame, findings: Sequence[Finding] = ()) -> bytes:
    return _encode({"frame": frame_dict(frame), "findings": [f.to_dict() for f in findings]})


def _encode(data: dict[str, Any]) -> bytes:
    return json.dumps(data, allow_nan=False, separators=(",", ":")).encode() + b"\n"


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
    if data.get("version") not in READABLE_VERSIONS:
        raise RecordingError(
            f"{path}:1: recording version {data.get('version')!r}; this gputui reads versions "
            + ", ".join(str(v) for v in READABLE_VERSIONS)
        )
    try:
        source = parse_source(data["source"])
        devices = tuple(from_record(DeviceInfo, d) for d in data["devices"])
        return Header(source, devices, float(data["interval_s"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordingError(f"{path}:1: damaged header ({exc!r})") from exc
