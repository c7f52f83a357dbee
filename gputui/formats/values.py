"""The model as plain JSON values and back: shared by the snapshot and the recording.

Readers ignore keys they do not know (a newer writer) and keep reading; ``None`` stays
``None`` (unknown), and NaN or infinity become ``null`` on the way out.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from gputui.core.model import (
    DeviceWaiter,
    Finding,
    Frame,
    GpuSample,
    HostSample,
    HostSettings,
    JobSettings,
    MigInstance,
    Note,
    NvLinkSample,
    ProcessSample,
    SourceInfo,
    XidEvent,
)
from gputui.core.names import NoteKind, RuleId, SourceKind
from gputui.core.ranges import within_ranges
from gputui.core.sanitize import clean, mask_optional, mask_secrets

T = TypeVar("T")

# What a file may claim, whatever it says: beyond these it is refused, not allocated.
MAX_GPUS = 1024
MAX_PROCESSES = 65_536
MAX_TIME = 1e11  # seconds since 1970: the year 5138; NaN, infinity and 1e300 are not times


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


class FormatError(ValueError):
    """A value of the wrong kind where the model expects another: the file is not ours."""


# Every counter NVML or DCGM reports fits 64 bits; a number past these is no reading, and
# formatting it (float(), "%.1f") is what would fail, far from where it entered.
MAX_INT = 2**64
MAX_FLOAT = 1e18


def _checked(cls: type, name: str, kind: str, value: Any) -> Any:
    """``value`` if it is what field ``name`` (annotation ``kind``) holds; else FormatError.

    Numbers must be finite; an int field takes a whole float (1980.0); lists become tuples.
    """
    return _checker(cls, name, kind)(value)


Check = Callable[[Any], Any]


def _checker(cls: type, name: str, kind: str) -> Check:
    """The check of one field, made once per class (``_plan``): a recording repeats the
    same fields on every line, so the annotation is read once, not once per value."""
    nullable = "None" in kind
    if kind.startswith("tuple["):
        inner = kind[len("tuple[") :].split(",", 1)[0].strip()
        each = _checker(cls, name, inner) if inner in ("str", "float", "int") else None

        def check_tuple(value: Any) -> Any:
            if value is None:
                return None if nullable else ()
            if not isinstance(value, list | tuple):
                raise FormatError(f"{cls.__name__}.{name}: not a list")
            # nested records are parsed by their owner
            return tuple(value) if each is None else tuple(each(v) for v in value)

        return check_tuple
    base = kind.replace(" | None", "").strip()
    exact = {"float": float, "int": int, "str": str, "bool": bool}.get(base)

    def check(value: Any) -> Any:
        kind_of = type(value)
        if kind_of is exact:  # the common case first: a finite float, a small int, a text
            if kind_of is float:
                if math.isfinite(value) and -MAX_FLOAT < value < MAX_FLOAT:
                    return value
            elif kind_of is int:
                if -MAX_INT < value < MAX_INT:
                    return value
            elif kind_of is str:
                return clean(value)  # GpuSample cleans nothing itself: a file's text is here
            else:
                return value
        if value is None:
            if nullable:
                return None
            raise FormatError(f"{cls.__name__}.{name}: null")
        return _checked_value(cls, name, base, value)

    return check


def _checked_value(cls: type, name: str, base: str, value: Any) -> Any:
    """``_checker``'s full check of a value that is not plainly of its field's type."""
    if base == "bool":
        if isinstance(value, bool):
            return value
    elif base == "int":
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            if -MAX_INT < value < MAX_INT:
                return value
            raise FormatError(f"{cls.__name__}.{name}: {_digits(value)} is no reading")
    elif base == "float":
        if isinstance(value, int) and not -MAX_INT < value < MAX_INT:
            raise FormatError(f"{cls.__name__}.{name}: {_digits(value)} is no reading")
        if isinstance(value, int | float) and not isinstance(value, bool):
            if math.isfinite(value) and abs(value) < MAX_FLOAT:
                return float(value)
            raise FormatError(f"{cls.__name__}.{name}: not a finite number in range")
    elif base == "str":
        if isinstance(value, str):
            return clean(value)
    else:
        return value  # an enum or a record: its own parser checks it
    raise FormatError(f"{cls.__name__}.{name}: {type(value).__name__} where {base} belongs")


def _digits(value: int) -> str:
    """A huge integer named by its size (printing it would be the attack)."""
    return f"a {value.bit_length()}-bit number" if abs(value) > MAX_INT else str(value)


def _kind(f: dataclasses.Field[Any]) -> str:
    """A field's annotation as written, ``Final[...]`` (an immutable field) unwrapped."""
    kind = str(f.type)
    return kind[len("Final[") : -1] if kind.startswith("Final[") else kind


_PLANS: dict[type, tuple[tuple[str, Check], ...]] = {}


def _plan(cls: type) -> tuple[tuple[str, Check], ...]:
    """Each field of a model class with its check, in field order."""
    plan = _PLANS.get(cls)
    if plan is None:
        fields = dataclasses.fields(cls)
        plan = _PLANS[cls] = tuple((f.name, _checker(cls, f.name, _kind(f))) for f in fields)
    return plan


def field_checks(cls: type) -> list[tuple[dataclasses.Field[Any], str, Check]]:
    """Each field of a model class with its annotation (``Final`` unwrapped) and the check
    ``from_record`` makes of its value: the column reader checks values the same way."""
    checks = dict(_plan(cls))
    return [(f, _kind(f), checks[f.name]) for f in dataclasses.fields(cls)]


def from_record(cls: type[T], data: Mapping[str, Any]) -> T:
    """A model dataclass from its dict, every value checked against the field's type;
    unknown keys (a newer writer) are ignored, missing ones take the default."""
    if not isinstance(data, Mapping):
        raise FormatError(f"{cls.__name__}: not an object")
    return cls(**{name: check(data[name]) for name, check in _plan(cls) if name in data})


def source_dict(source: SourceInfo, keep_secrets: bool = False) -> dict[str, Any]:
    detail = source.detail if keep_secrets else mask_optional(source.detail)
    return {"label": source.label, "kind": source.kind.value, "detail": detail}


def masked(frame: Frame) -> Frame:
    """The frame as it may travel: credentials in command lines and environments hidden.
    A process or job with nothing to hide is the same object (a recorder masks every tick
    of the same few command lines: each text is masked once, ``masked_text``)."""
    if not frame.processes and not any(j.env for j in frame.jobs):
        return frame
    processes = tuple(_masked_process(p) for p in frame.processes)
    jobs = tuple(_masked_job(j) for j in frame.jobs)
    if all(map(operator.is_, processes, frame.processes)) and all(
        map(operator.is_, jobs, frame.jobs)
    ):
        return frame
    return dataclasses.replace(frame, processes=processes, jobs=jobs)


#: a text masked (``mask_secrets``), by the text: a pure function, and the recorder's
#: texts repeat tick after tick
masked_text: Final[Callable[[str], str]] = functools.lru_cache(maxsize=4096)(mask_secrets)


def _masked_process(p: ProcessSample) -> ProcessSample:
    command = None if p.command is None else masked_text(p.command)
    parent = None if p.parent_command is None else masked_text(p.parent_command)
    env = tuple(map(masked_text, p.env))
    if command == p.command and parent == p.parent_command and env == p.env:
        return p
    return dataclasses.replace(p, command=command, parent_command=parent, env=env)


def _masked_job(job: JobSettings) -> JobSettings:
    if not job.env:
        return job
    env = tuple(map(masked_text, job.env))
    return job if env == job.env else dataclasses.replace(job, env=env)


def parse_source(data: Mapping[str, Any]) -> SourceInfo:
    if not isinstance(data, Mapping) or not isinstance(data.get("label"), str):
        raise FormatError("the source is not an object with a label")
    detail = data.get("detail")
    return SourceInfo(
        label=data["label"],
        kind=SourceKind(data["kind"]),
        detail=detail if isinstance(detail, str) else None,
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
    if not isinstance(data, Mapping) or not isinstance(data.get("text"), str):
        raise FormatError("a note is not an object with a text")
    return Note(NoteKind(data["kind"]), data["text"])


def parse_finding(data: Any) -> Finding:
    """A finding from a file, checked: a rule id this gputui knows, texts, finite times."""
    if not isinstance(data, Mapping):
        raise FormatError("a finding is not an object")
    texts = [data.get("title"), *(data.get("evidence") or ()), *(data.get("remedies") or ())]
    if not all(isinstance(t, str) for t in texts):
        raise FormatError("a finding's title, evidence and remedies must be text")
    _finding_gpu(data)
    for key in ("since", "updated"):
        _finding_time(data.get(key))
    return Finding.from_dict(dict(data))


def _finding_gpu(data: Mapping[str, Any]) -> int | None:
    """A recorded finding's GPU, checked: an index, or None for the node."""
    gpu = data.get("gpu")
    if gpu is not None and (isinstance(gpu, bool) or not isinstance(gpu, int)):
        raise FormatError("a finding's gpu is not an index")
    return gpu


_TIME_CHECK: Final = _checker(Finding, "since", "float")


def _finding_time(value: Any) -> float:
    """A recorded finding's since or updated: a time, as a frame's is (1e17 is none)."""
    time = float(_TIME_CHECK(value))
    if not 0 <= time < MAX_TIME:
        raise FormatError(f"a finding's time {time!r} is not a time")
    return time


class PendingFinding:
    """A recorded finding read as far as which it is: its rule and GPU (``key``), since
    when and when last seen, checked; its words parsed and checked (``parse_finding``)
    only when ``finding()`` is asked. A report takes a finding's words only where an
    episode ends or a block does; a block repeats them at every change of the others."""

    __slots__ = ("_raw", "key", "since", "updated")

    def __init__(self, raw: Any) -> None:
        if not isinstance(raw, Mapping):
            raise FormatError("a finding is not an object")
        self.key: Final = (RuleId(raw.get("rule")), _finding_gpu(raw))
        self.since: Final = _finding_time(raw.get("since"))
        self.updated: Final = _finding_time(raw.get("updated"))
        self._raw = raw

    def finding(self) -> Finding:
        """The whole finding (FormatError, KeyError, TypeError or ValueError where its words
        are not what a finding holds)."""
        return parse_finding(self._raw)


def finding_dict(finding: Finding, keep_secrets: bool = False) -> dict[str, Any]:
    """A finding as it may travel: its evidence can quote a command line."""
    data = finding.to_dict()
    if not keep_secrets:
        data["title"] = mask_secrets(data["title"])
        data["evidence"] = [mask_secrets(e) for e in data["evidence"]]
    return data


def frame_dict(frame: Frame, keep_secrets: bool = False) -> dict[str, Any]:
    if not keep_secrets:
        frame = masked(frame)
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
        "jobs": [record(j) for j in frame.jobs],
        "settings": record(frame.settings) if frame.settings is not None else None,
    }


def parse_frame(data: Mapping[str, Any]) -> Frame:
    if not isinstance(data, Mapping) or not isinstance(data.get("gpus"), list):
        raise FormatError("a frame needs an object with a list of gpus")
    if len(data["gpus"]) > MAX_GPUS or len(data.get("processes") or ()) > MAX_PROCESSES:
        raise FormatError(f"more than {MAX_GPUS} GPUs or {MAX_PROCESSES} processes in a frame")
    gpus = []
    for entry in data["gpus"]:
        if not isinstance(entry, Mapping):
            raise FormatError("a GPU sample is not an object")
        clean = {k: v for k, v in entry.items() if k != "clock_reason_names"}
        clean["xid_events"] = [from_record(XidEvent, x) for x in entry.get("xid_events") or ()]
        clean["mig_instances"] = [
            from_record(MigInstance, m) for m in entry.get("mig_instances") or ()
        ]
        clean["nvlinks"] = [from_record(NvLinkSample, n) for n in entry.get("nvlinks") or ()]
        gpus.append(within_ranges(from_record(GpuSample, clean)))
    host = data.get("host")
    time = data.get("time")
    if isinstance(time, bool) or not isinstance(time, int | float) or not 0 <= time < MAX_TIME:
        raise FormatError(f"frame time {time!r} is not a time")
    return Frame(
        time=float(time),
        gpus=tuple(gpus),
        host=from_record(HostSample, host) if host is not None else None,
        processes=tuple(from_record(ProcessSample, p) for p in data.get("processes", ())),
        notes=tuple(parse_note(n) for n in data.get("notes", ())),
        jobs=tuple(from_record(JobSettings, j) for j in (data.get("jobs") or ())[:MAX_PROCESSES]),
        settings=parse_settings(data.get("settings")),
    )


def parse_settings(data: Any) -> HostSettings | None:
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise FormatError("the host settings are not an object")
    waiters = data.get("waiters") or ()
    if not isinstance(waiters, list | tuple) or len(waiters) > MAX_PROCESSES:
        raise FormatError("the host settings' waiters are not a list")
    fields = {k: v for k, v in data.items() if k != "waiters"}
    fields["waiters"] = [from_record(DeviceWaiter, w) for w in waiters]
    return from_record(HostSettings, fields)
