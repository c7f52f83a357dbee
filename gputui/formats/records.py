"""The model as plain JSON values and back: shared by the snapshot and the recording.

Readers ignore keys they do not know (a newer writer) and keep reading; ``None`` stays
``None`` (unknown), and NaN or infinity become ``null`` on the way out.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, TypeVar

from gputui.model import (
    Frame,
    GpuSample,
    HostSample,
    Note,
    ProcessSample,
    SourceInfo,
    XidEvent,
)
from gputui.names import NoteKind, SourceKind

T = TypeVar("T")


def plain(value: Any) -> Any:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return record(value)
    return value


def record(obj: Any) -> dict[str, Any]:
    """A model dataclass as a JSON-ready dict (NaN and inf become null), nested ones too."""
    return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}


def from_record(cls: type[T], data: Mapping[str, Any]) -> T:
    """A model dataclass from its dict; unknown keys (a newer writer) are ignored."""
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name not in data:
            continue
        value = data[f.name]
        if isinstance(value, list):
            value = tuple(value)
        kwargs[f.name] = value
    return cls(**kwargs)


def source_dict(source: SourceInfo) -> dict[str, Any]:
    return {"label": source.label, "kind": source.kind.value, "detail": source.detail}


def parse_source(data: Mapping[str, Any]) -> SourceInfo:
    return SourceInfo(
        label=str(data["label"]), kind=SourceKind(data["kind"]), detail=data.get("detail")
    )


def note_dict(note: Note) -> dict[str, str]:
    return {"kind": note.kind.value, "text": note.text}


def _legacy_note_kind(text: str) -> NoteKind:
    """Version 1 files kept notes as bare text: recognise the kinds gputui wrote then."""
    if "PID namespace" in text:
        return NoteKind.PID_NAMESPACE
    if text.startswith("node ") and " is down" in text:
        return NoteKind.NODE_DOWN
    if text.startswith("node ") and "gave no GPUs" in text:
        return NoteKind.NODE_EMPTY
    if text.startswith("remote source:"):
        return NoteKind.RULES_BLIND
    if "fell off the bus" in text:
        return NoteKind.GPU_LOST
    return NoteKind.GENERAL


def parse_note(data: Any) -> Note:
    if isinstance(data, str):
        return Note(_legacy_note_kind(data), data)
    return Note(NoteKind(data["kind"]), str(data["text"]))


def frame_dict(frame: Frame) -> dict[str, Any]:
    gpus = []
    for sample in frame.gpus:
        entry = record(sample)
        entry["clock_reason_names"] = list(sample.reason_names)
        gpus.append(entry)
    return {
        "time": frame.time,
        "gpus": gpus,
        "host": record(frame.host) if frame.host is not None else None,
        "processes": [record(p) for p in frame.processes],
        "notes": [note_dict(n) for n in frame.notes],
    }


def parse_frame(data: Mapping[str, Any]) -> Frame:
    gpus = []
    for entry in data["gpus"]:
        clean = {k: v for k, v in entry.items() if k != "clock_reason_names"}
        clean["xid_events"] = [from_record(XidEvent, x) for x in entry.get("xid_events", ())]
        gpus.append(from_record(GpuSample, clean))
    host = data.get("host")
    return Frame(
        time=float(data["time"]),
        gpus=tuple(gpus),
        host=from_record(HostSample, host) if host is not None else None,
        processes=tuple(from_record(ProcessSample, p) for p in data.get("processes", ())),
        notes=tuple(parse_note(n) for n in data.get("notes", ())),
    )
