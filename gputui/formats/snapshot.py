"""The snapshot: the whole current state as versioned JSON, or as a Markdown report.

The schema is documented in docs/snapshot.md; ``parse_snapshot`` reads back exactly what
``snapshot_dict`` writes, so a snapshot is a file other tools can rely on.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from gputui import __version__
from gputui.clock_events import describe_reasons
from gputui.history import GPU_METRICS, HOST_METRICS, History
from gputui.model import DeviceInfo, Frame, GpuSample, HostSample, ProcessSample
from gputui.pcie import link_bandwidth
from gputui.units import NA, fmt_bytes, fmt_num, fmt_rate, known

SCHEMA = "gputui.snapshot"
SCHEMA_VERSION = 1

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SourceInfo:
    label: str
    kind: str
    detail: str | None = None


@dataclass(frozen=True, slots=True)
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


def _plain(value: Any) -> Any:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def record(obj: Any) -> dict[str, Any]:
    """A model dataclass as a JSON-ready dict (NaN and inf become null)."""
    return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}


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


def _iso(timestamp: float) -> str:
    return (
        dt.datetime.fromtimestamp(timestamp, tz=dt.timezone.utc)
        .isoformat(timespec="seconds")
        .replace("+00:00", "Z")
    )


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
        "notes": list(frame.notes),
    }


def parse_frame(data: Mapping[str, Any]) -> Frame:
    gpus = []
    for entry in data["gpus"]:
        clean = {k: v for k, v in entry.items() if k != "clock_reason_names"}
        gpus.append(from_record(GpuSample, clean))
    host = data.get("host")
    return Frame(
        time=float(data["time"]),
        gpus=tuple(gpus),
        host=from_record(HostSample, host) if host is not None else None,
        processes=tuple(from_record(ProcessSample, p) for p in data.get("processes", ())),
        notes=tuple(data.get("notes", ())),
    )


def snapshot_dict(
    source: SourceInfo,
    devices: Sequence[DeviceInfo],
    history: History,
    interval_s: float,
    window_points: int | None = None,
    findings: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The snapshot document. ``window_points`` limits the history to the newest points."""
    latest = history.latest
    generated = latest.time if latest is not None else 0.0
    times = history.times()
    if window_points is not None:
        times = times[-window_points:]
    n = len(times)
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "generated_at": _iso(generated),
        "gputui_version": __version__,
        "source": record(source),
        "devices": [record(d) for d in devices],
        "latest": frame_dict(latest) if latest is not None else None,
        "history": {
            "interval_s": interval_s,
            "times": times,
            "gpus": {
                str(i): {m: _plain(history.series(i, m, n)) for m in GPU_METRICS}
                for i in history.gpu_indices
            },
            "host": {m: _plain(history.host_series(m, n)) for m in HOST_METRICS},
        },
        "findings": list(findings),
    }


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
    if version != SCHEMA_VERSION:
        raise SnapshotFormatError(
            f"snapshot version {version!r}; this gputui reads {SCHEMA_VERSION}"
        )
    history = data["history"]
    return Snapshot(
        version=version,
        generated_at=data["generated_at"],
        gputui_version=data["gputui_version"],
        source=from_record(SourceInfo, data["source"]),
        devices=tuple(from_record(DeviceInfo, d) for d in data["devices"]),
        latest=parse_frame(data["latest"]) if data.get("latest") is not None else None,
        history_times=tuple(history["times"]),
        history_gpus={
            int(i): {m: tuple(v) for m, v in metrics.items()}
            for i, metrics in history["gpus"].items()
        },
        history_host={m: tuple(v) for m, v in history["host"].items()},
        findings=tuple(data.get("findings", ())),
    )


# -- Markdown ------------------------------------------------------------------------
def _of(value: float | int | None, limit: float | int | None, unit: str) -> str:
    if not known(value):
        return NA
    suffix = f" {unit}" if unit else ""
    if not known(limit):
        return f"{value:.0f}{suffix}"
    return f"{value:.0f} / {limit:.0f}{suffix}"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def markdown_report(document: Mapping[str, Any]) -> str:
    """A readable report of a snapshot document (the dict ``snapshot_dict`` returns)."""
    snap = parse_snapshot(dumps(document))
    frame = snap.latest
    lines = [
        f"# gputui snapshot: {snap.generated_at}",
        "",
        f"- Source: **{snap.source.label}**"
        + (f" ({snap.source.detail})" if snap.source.detail else ""),
    ]
    if snap.devices:
        d0 = snap.devices[0]
        lines.append(
            f"- Driver {d0.driver_version or NA}, CUDA driver {d0.cuda_driver_version or NA}, "
            f"{len(snap.devices)} GPU(s)"
        )
    if frame is not None and frame.host is not None:
        h = frame.host
        lines.append(
            f"- Host {h.hostname or NA}: CPU {fmt_num(h.cpu_percent, ' %', 1)} "
            f"of {h.cpu_count or NA} cores, "
            f"load {fmt_num(h.load_1, '', 2)}, memory available {fmt_bytes(h.mem_available)} of "
            f"{fmt_bytes(h.mem_total)}, swap used {fmt_bytes(h.swap_used)}, iowait "
            f"{fmt_num(h.iowait_pct, ' %', 1)}"
        )
    lines.append(f"- History: {len(snap.history_times)} points")
    lines += ["", "## Findings", ""]
    if snap.findings:
        for finding in snap.findings:
            where = "host" if finding.get("gpu") is None else f"GPU {finding['gpu']}"
            lines.append(
                f"- **{finding.get('severity', '?').upper()}** `{finding.get('rule')}` ({where}): "
                f"{finding.get('title')}"
            )
            for evidence in finding.get("evidence", ()):
                lines.append(f"  - {evidence}")
            for remedy in finding.get("remedies", ()):
                lines.append(f"  - Do: {remedy}")
    else:
        lines.append("No findings.")
    lines += ["", "## GPUs", ""]
    header = [
        "GPU",
        "Name",
        "Util",
        "SM clock (MHz)",
        "Temp (°C)",
        "Power (W)",
        "VRAM",
        "PCIe",
        "RX / TX",
        "Clock events",
    ]
    lines += [_row(header), _row(["---"] * len(header))]
    samples = {s.index: s for s in frame.gpus} if frame is not None else {}
    for device in snap.devices:
        s = samples.get(device.index)
        if s is None or s.lost:
            lines.append(_row([str(device.index), device.name, "lost" if s else NA] + [NA] * 7))
            continue
        capacity = link_bandwidth(s.pcie_gen, s.pcie_width)
        link = (
            f"Gen{s.pcie_gen} x{s.pcie_width} "
            f"(max Gen{device.pcie_max_gen or '?'} x{device.pcie_max_width or '?'})"
            if known(s.pcie_gen)
            else NA
        )
        lines.append(
            _row(
                [
                    str(device.index),
                    device.name,
                    fmt_num(s.util_gpu, " %"),
                    _of(s.sm_clock_mhz, device.max_sm_clock_mhz, ""),
                    _of(s.temp_c, device.temp_slowdown_c, "(slowdown)"),
                    _of(s.power_w, s.power_limit_w, ""),
                    f"{fmt_bytes(s.mem_used)} / {fmt_bytes(s.mem_total)}",
                    link + (f", {fmt_rate(capacity)}" if capacity else ""),
                    f"{fmt_rate(s.pcie_rx_bps)} / {fmt_rate(s.pcie_tx_bps)}",
                    ", ".join(describe_reasons(s.clock_reasons)) or "none",
                ]
            )
        )
    lines += ["", "## Processes", ""]
    if frame is not None and frame.processes:
        header = [
            "GPU",
            "PID",
            "User",
            "GPU memory",
            "CPU %",
            "RSS",
            "Threads",
            "Workers",
            "Command",
        ]
        lines += [_row(header), _row(["---"] * len(header))]
        for p in frame.processes:
            lines.append(
                _row(
                    [
                        str(p.gpu_index),
                        str(p.pid),
                        p.user or NA,
                        fmt_bytes(p.gpu_memory),
                        fmt_num(p.cpu_percent, "", 1),
                        fmt_bytes(p.rss),
                        fmt_num(p.threads),
                        fmt_num(p.children),
                        (p.command or ("(not visible here)" if not p.visible else NA))[:200],
                    ]
                )
            )
    else:
        lines.append("No processes on the GPUs.")
    if frame is not None and frame.notes:
        lines += ["", "## Notes", ""] + [f"- {note}" for note in frame.notes]
    return "\n".join(lines) + "\n"
