"""The charts' data: per GPU, its readings downsampled onto one time axis, the limits
they are drawn against, the findings shaded behind them and the lanes of causes and
processes. Plain JSON values; every string in them is outside text made safe for a file
that travels (cleaned by the model, credentials masked here unless kept)."""

from __future__ import annotations

import math
import struct
import sys
from array import array
from collections.abc import Sequence
from typing import Any, Final

from gputui.core.names import Metric
from gputui.core.pcie import link_bandwidth
from gputui.core.sanitize import mask_secrets
from gputui.exporters.report import downsample
from gputui.exporters.report.accounting import CAUSES, Accounting
from gputui.exporters.report.run import Run, Track
from gputui.sampling.runlog import Episode, Span

#: time buckets over the whole run (two points each): enough for a wide screen's pixels
BUCKETS: Final = 1500
GIB: Final = float(1 << 30)
_PAIR: Final = struct.Struct("=ff")
#: findings shaded behind a GPU's charts, at most
MAX_SHADES: Final = 400
#: a chart's series: (label, metric, scale, digits, colour)
_Series = tuple[str, Metric, float, int, str]
CHARTS: Final[tuple[tuple[str, str, tuple[_Series, ...]], ...]] = (
    (
        "Utilisation",
        "%",
        (
            ("GPU utilisation", Metric.UTIL_GPU, 1.0, 1, "#2f7ed8"),
            ("SM activity", Metric.SM_ACTIVITY, 1.0, 1, "#8e44ad"),
        ),
    ),
    ("SM clock", "MHz", (("SM clock", Metric.SM_CLOCK_MHZ, 1.0, 0, "#16a085"),)),
    ("Temperature", "°C", (("GPU temperature", Metric.TEMP_C, 1.0, 1, "#e67e22"),)),
    ("Power", "W", (("power draw", Metric.POWER_W, 1.0, 0, "#c0392b"),)),
    ("VRAM", "GiB", (("VRAM used", Metric.MEM_USED, 1.0 / GIB, 2, "#2c3e50"),)),
    (
        "PCIe",
        "GB/s",
        (
            ("PCIe RX", Metric.PCIE_RX_BPS, 1e-9, 3, "#27ae60"),
            ("PCIe TX", Metric.PCIE_TX_BPS, 1e-9, 3, "#d35400"),
        ),
    ),
)


def text(value: str, keep_secrets: bool) -> str:
    """Outside text as it may leave the machine (already cleaned by the model)."""
    return value if keep_secrets else mask_secrets(value)


def payload(run: Run, accounting: Accounting, keep_secrets: bool) -> dict[str, Any]:
    """Everything the page's script draws, as JSON values."""
    b = downsample.buckets(run.times, BUCKETS)
    xs = [round(x, 3) for x in b.xs]
    return {
        "start": run.start,
        "end": run.end,
        "tzOffset": _offset(run.start),
        "x": xs,  # one time axis, every GPU's
        "causes": [{"key": c.value, "label": c.label} for c in CAUSES],
        "gpus": [
            _gpu(run, track, accounting, b, xs, keep_secrets) for track in run.tracks.values()
        ],
    }


def _offset(when: float) -> int:
    """This machine's UTC offset at the run's start: the page shows the times the tables
    show, wherever it is opened."""
    import time

    return int(time.localtime(when).tm_gmtoff)


def _gpu(
    run: Run,
    track: Track,
    accounting: Accounting,
    b: downsample.Buckets,
    xs: list[float],
    keep_secrets: bool,
) -> dict[str, Any]:
    device = track.device
    codes = downsample.dominant(accounting.causes[device.index], b, len(CAUSES))
    return {
        "index": device.index,
        "name": text(gpu_name(run, device.index), keep_secrets),
        "charts": [
            _chart(title, unit, series, track, b, _limits(title, track))
            for title, unit, series in CHARTS
        ],
        "findings": _shades(run, device.index, keep_secrets, (run.end - run.start) / BUCKETS),
        "causes": [list(r) for r in downsample.runs(xs, codes, run.end)],
        "processes": [_lane(s, keep_secrets) for s in run.spans if s.gpu == device.index][:500],
    }


def gpu_name(run: Run, index: int) -> str:
    device = next((d for d in run.devices if d.index == index), None)
    if device is None:
        return f"GPU {index}"
    where = f" on {device.node}" if device.node else ""
    return f"GPU {index}: {device.name}{where}"


def _chart(
    title: str,
    unit: str,
    series: Sequence[_Series],
    track: Track,
    b: downsample.Buckets,
    limits: list[dict[str, Any]],
) -> dict[str, Any]:
    drawn = []
    for label, metric, scale, digits, colour in series:
        values = track.values[metric]
        if not any(v == v for v in values):
            continue  # never read (SM activity without GPM): no empty line in the legend
        points = downsample.series(values, b, digits, scale)
        drawn.append({"label": label, "colour": colour, "values": points})
    return {"title": title, "unit": unit, "series": drawn, "limits": limits}


def _constant(values: Sequence[float], scale: float = 1.0) -> float | None:
    """The one value a limit held through the run (the highest where it changed)."""
    whole = sum(values)
    known = values if whole == whole else [v for v in values if v == v]  # no NaN: as it is
    return max(known) * scale if known else None


def _limits(title: str, track: Track) -> list[dict[str, Any]]:
    d = track.device
    v = track.values
    found: list[tuple[str, float | None]] = []
    if title == "Utilisation":
        found = [("full", 100.0)]
    elif title == "SM clock":
        found = [("max SM clock", d.max_sm_clock_mhz)]
    elif title == "Temperature":
        found = [
            ("max operating", d.temp_gpu_max_c),
            ("slowdown", d.temp_slowdown_c),
            ("shutdown", d.temp_shutdown_c),
        ]
    elif title == "Power":
        found = [("power limit", _constant(v[Metric.POWER_LIMIT_W]) or d.power_limit_w)]
    elif title == "VRAM":
        total = _constant(v[Metric.MEM_TOTAL]) or d.memory_total
        found = [("total", total / GIB if total else None)]
    elif title == "PCIe":
        found = [("link, each way", _link(track))]
    return [
        {"label": label, "value": round(float(value), 3)}
        for label, value in found
        if value is not None and math.isfinite(value)
    ]


def _link(track: Track) -> float | None:
    """The fastest link the GPU reached in the run, in GB/s each way (idle links
    downshift: the one under load is the one that matters)."""
    gens, widths = track.values[Metric.PCIE_GEN], track.values[Metric.PCIE_WIDTH]
    best = None
    for gen, width in _pairs(gens, widths):
        bps = link_bandwidth(int(gen), int(width))
        if bps is not None and (best is None or bps > best):
            best = bps
    return None if best is None else best * 1e-9


def _pairs(gens: Sequence[float], widths: Sequence[float]) -> set[tuple[float, float]]:
    """The (generation, width) pairs a link was read at, NaN left out. Two float32
    columns (a run's) are told apart as 8-byte keys, a tick's two readings side by side,
    so a week's ticks are never a Python loop."""
    if (
        isinstance(gens, array)
        and isinstance(widths, array)
        and gens.typecode == widths.typecode == "f"
        and len(gens) == len(widths)
    ):
        g, w = gens.tobytes(), widths.tobytes()
        both = bytearray(8 * len(gens))
        for i in range(4):
            both[i::8] = g[i::4]
            both[4 + i :: 8] = w[i::4]
        keys = set(memoryview(both).cast("Q"))
        read = (_PAIR.unpack(key.to_bytes(8, sys.byteorder)) for key in keys)
        return {(g, w) for g, w in read if g == g and w == w}
    return {(g, w) for g, w in zip(gens, widths, strict=True) if g == g and w == w}


def _shades(run: Run, gpu: int, keep_secrets: bool, width: float) -> list[list[Any]]:
    """A GPU's findings to shade: a rule's stretches closer than a bucket drawn as one, at
    most ``MAX_SHADES`` (however often a finding came and went)."""
    out: list[list[Any]] = []
    last: dict[str, list[Any]] = {}
    for episode in sorted(run.episodes, key=lambda e: e.since):
        if episode.finding.gpu != gpu:
            continue
        held = last.get(episode.finding.rule.value)
        if held is not None and episode.since - held[1] <= width:
            held[1] = max(held[1], episode.until)
            continue
        if len(out) >= MAX_SHADES:
            break
        shade = _shade(episode, keep_secrets)
        out.append(shade)
        last[episode.finding.rule.value] = shade
    return out


def _shade(episode: Episode, keep_secrets: bool) -> list[Any]:
    f = episode.finding
    return [
        episode.since,
        episode.until,
        f.severity.value,
        text(f"{f.rule}: {f.title}", keep_secrets),
    ]


def _lane(span: Span, keep_secrets: bool) -> list[Any]:
    who = span.name or "process"
    label = f"{who} (pid {span.pid}" + (f", {span.user})" if span.user else ")")
    command = text(span.command or "", keep_secrets)
    return [span.start, span.end, text(label, keep_secrets), command[:300]]
