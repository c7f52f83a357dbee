"""Opening a session on each kind of source: this machine's GPUs through NVML, the demo's
simulated node, a recording, a Prometheus server."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from gputui.api.gpus import Gpus, Only, choose
from gputui.api.session import Session
from gputui.core.config import DEFAULT_HISTORY_S, DEFAULT_INTERVAL_S
from gputui.core.manual_clock import ManualClock
from gputui.core.model import DeviceInfo
from gputui.core.source import Backfills, Source, SourceUnavailable

__all__ = ["SourceUnavailable", "open_demo", "open_nvml", "open_prometheus", "open_recording"]


def _narrowed(
    source: Source,
    devices: Sequence[DeviceInfo],
    gpus: Gpus,
    env: Mapping[str, str] | None,
    rank: int | None,
) -> tuple[Source, tuple[DeviceInfo, ...]]:
    try:
        chosen = choose(devices, gpus, env, rank)
    except Exception:
        source.close()
        raise
    if len(chosen) == len(devices):
        return source, tuple(devices)
    only = Only(source, devices, chosen)
    return only, only.open()


def open_nvml(
    gpus: Gpus = "all",
    *,
    interval_s: float = DEFAULT_INTERVAL_S,
    history_s: float = DEFAULT_HISTORY_S,
    processes: bool = True,
    clock: Callable[[], float] = time.time,
    env: Mapping[str, str] | None = None,
    rank: int | None = None,
) -> Session:
    """This machine's GPUs through NVML (no CUDA context, no GPU memory, nothing changed on
    a GPU). ``gpus``: which (``gputui.api.gpus.Choice`` or NVML indices). ``processes``:
    join the GPU processes with the host's view (CPU, data-loader workers), which the
    input-starvation rules need. Raises ``SourceUnavailable`` without a driver."""
    from gputui.sources.host import HostReader
    from gputui.sources.nvml import NvmlSource

    source = NvmlSource(host=HostReader() if processes else None, clock=clock)
    devices = source.open()
    narrowed, devices = _narrowed(source, devices, gpus, env, rank)
    return Session(narrowed, devices, interval_s=interval_s, history_s=history_s)


def open_demo(
    scenario: str | None = None,
    gpus: int = 4,
    *,
    seed: int = 0,
    interval_s: float = DEFAULT_INTERVAL_S,
    history_s: float = DEFAULT_HISTORY_S,
    start: float | None = None,
) -> Session:
    """The demo's simulated node (``gputui --demo``): ``scenario`` on every GPU, or the
    mix. Its clock is its own: each read is ``interval_s`` after the one before, at once
    (the frames begin at ``start``, default now)."""
    from gputui.sources.simulated import SimulatedSource, resolve_scenarios

    clock = ManualClock(time.time() if start is None else start)
    source = SimulatedSource(resolve_scenarios(scenario, gpus), seed=seed, clock=clock)
    devices = source.open()
    detail = "scenario: " + (scenario or "mix")
    return Session(
        source,
        devices,
        interval_s=interval_s,
        history_s=history_s,
        detail=detail,
        wait=lambda _s: None,
        after_read=lambda: clock.advance(interval_s),
    )


def open_recording(path: str | Path, *, history_s: float = DEFAULT_HISTORY_S) -> Session:
    """A recording (``gputui record``'s file, gzip or plain), tick by tick at once; the
    findings are judged again by this release's advisor. The whole file is read in: for a
    week-long recording ``gputui report`` reads it in bounded memory."""
    from gputui.formats.recording import read_recording
    from gputui.sources.recorded import ReplayEnded, ReplaySource

    recording = read_recording(Path(path))
    header = recording.header
    frames = [tick.frame for tick in recording.ticks]
    source = ReplaySource(frames, header.devices, header.interval_s)
    return Session(
        source,
        source.open(),
        interval_s=header.interval_s,
        history_s=history_s,
        detail=f"recording {Path(path).name}",
        wait=lambda _s: None,
        ended=ReplayEnded,
    )


def open_prometheus(
    url: str,
    match: str | None = None,
    *,
    interval_s: float = 15.0,
    history_s: float = DEFAULT_HISTORY_S,
    timeout_s: float = 5.0,
) -> Session:
    """A cluster's GPUs through a Prometheus server that scrapes dcgm-exporter (``match``:
    a PromQL label matcher, ``{Hostname=~"node-1.*"}``). The server's recent history is
    judged first, so the advisor speaks from the first tick."""
    from gputui.sources.prometheus.source import PrometheusSource

    source = PrometheusSource(url, match, timeout_s=timeout_s)
    devices = source.open()
    session = Session(
        source, devices, interval_s=interval_s, history_s=history_s, detail=f"prometheus: {url}"
    )
    if isinstance(source, Backfills):
        for frame in source.backfill():
            session.take(frame)
    return session
