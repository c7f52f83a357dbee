"""The snapshot document: the whole current state as versioned JSON, and its reader.

The schema is documented in docs/snapshot.md; ``parse_snapshot`` reads back exactly what
``snapshot_dict`` writes, so a snapshot is a file other tools can rely on.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

from gputui import __version__
from gputui.advisor import judgement_of
from gputui.core.model import DeviceInfo, Finding, Frame, SourceInfo
from gputui.core.names import HostMetric, Metric
from gputui.core.records import frozen
from gputui.formats.values import (
    finding_dict,
    frame_dict,
    from_record,
    parse_frame,
    parse_source,
    plain,
    record,
    source_dict,
)
from gputui.sampling.history import History
from gputui.sampling.monitor import Monitor

SCHEMA = "gputui.snapshot"
#: 2: notes became objects with a kind (version 1 files still read)
SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)


@frozen
class Snapshot:
    """A snapshot read back from its JSON form."""

    version: int
    generated_at: str
    gputui_version: str
    source: SourceInfo
    devices: tuple[DeviceInfo, ...]
    latest: Frame | None
    history_times: tuple[float, ...]
    history_gpus: Mapping[int, Mapping[str, tuple[float | None, ...]]]
    history_host: Mapping[str, tuple[float | None, ...]]
    findings: tuple[Mapping[str, Any], ...]
    #: how far the verdict reaches (absent in files written before it existed)
    judgement: Mapping[str, Any] | None = None


def _iso(timestamp: float) -> str:
    return (
        dt.datetime.fromtimestamp(timestamp, tz=dt.timezone.utc)
        .isoformat(timespec="seconds")
        .replace("+00:00", "Z")
    )


def snapshot_dict(
    source: SourceInfo,
    devices: Sequence[DeviceInfo],
    history: History,
    interval_s: float,
    window_points: int | None = None,
    findings: Sequence[Finding] = (),
    keep_secrets: bool = False,
    judgement: Mapping[str, Any] | None = None,
    with_history: bool = True,
) -> dict[str, Any]:
    """The snapshot document. ``window_points`` limits the history to the newest points;
    credentials in command lines are masked unless ``keep_secrets``; without
    ``with_history`` the document has none (doctor's: a cluster's is tens of MB)."""
    latest = history.latest
    generated = latest.time if latest is not None else 0.0
    times = history.times()
    if window_points is not None:
        times = times[-window_points:]
    document = {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "generated_at": _iso(generated),
        "gputui_version": __version__,
        "source": source_dict(source, keep_secrets),
        "devices": [record(d) for d in devices],
        "latest": frame_dict(latest, keep_secrets) if latest is not None else None,
        "history": _history(history, interval_s, times) if with_history else None,
        "findings": [finding_dict(f, keep_secrets) for f in findings],
        # "No findings" is a verdict only over what was judged: how much history, and what
        # could not be judged ("gathering: 2 s of 10 s" in the first seconds).
        "judgement": dict(judgement) if judgement is not None else None,
    }
    if not with_history:
        del document["history"]
    return document


def _history(history: History, interval_s: float, times: list[float]) -> dict[str, Any]:
    n = len(times)
    return {
        "interval_s": interval_s,
        "times": times,
        "gpus": {
            str(i): {m.value: plain(history.series(i, m, n)) for m in Metric}
            for i in history.gpu_indices
        },
        "host": {m.value: plain(history.host_series(m, n)) for m in HostMetric},
    }


def snapshot_of(
    monitor: Monitor,
    window_points: int | None = None,
    keep_secrets: bool = False,
    with_history: bool = True,
    findings: Sequence[Finding] | None = None,
) -> dict[str, Any]:
    """The snapshot document of what a monitor holds now; ``findings``: those to write
    where they are not the live pane's (a headless command's point-in-time verdict);
    ``with_history=False``: none of the history (doctor's: a cluster's is tens of MB)."""
    return snapshot_dict(
        monitor.source,
        monitor.devices,
        monitor.history,
        monitor.config.interval_s,
        window_points=window_points,
        findings=monitor.findings if findings is None else findings,
        keep_secrets=keep_secrets,
        judgement=judgement_of(monitor).to_dict(),
        with_history=with_history,
    )


def dumps(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, allow_nan=False) + "\n"


class SnapshotFormatError(ValueError):
    pass


def parse_snapshot(text: str) -> Snapshot:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SnapshotFormatError(f"not JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise SnapshotFormatError("not a gputui snapshot (no 'schema': 'gputui.snapshot')")
    version = data.get("version")
    if version not in READABLE_VERSIONS:
        raise SnapshotFormatError(
            f"snapshot version {version!r}; this gputui reads versions "
            + ", ".join(str(v) for v in READABLE_VERSIONS)
        )
    history = data["history"]
    return Snapshot(
        version=version,
        generated_at=data["generated_at"],
        gputui_version=data["gputui_version"],
        source=parse_source(data["source"]),
        devices=tuple(from_record(DeviceInfo, d) for d in data["devices"]),
        latest=parse_frame(data["latest"]) if data.get("latest") is not None else None,
        history_times=tuple(history["times"]),
        history_gpus={
            int(i): {m: tuple(v) for m, v in metrics.items()}
            for i, metrics in history["gpus"].items()
        },
        history_host={m: tuple(v) for m, v in history["host"].items()},
        findings=tuple(data.get("findings", ())),
        judgement=data.get("judgement"),
    )
