"""A recording as ``gputui record`` writes one, of the simulated mix on a manual clock:
every tick with the findings its monitor judged live (header ``"findings": "live"``).
For the tests, the report benchmark and the report screenshots."""

from __future__ import annotations

from pathlib import Path

from gputui.advisor import make_monitor
from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import SourceInfo
from gputui.core.names import SourceKind
from gputui.exporters.recorder import RecordWriter
from gputui.formats.recording import Header
from gputui.sampling.monitor import Monitor
from gputui.sources.simulated import SimulatedSource, resolve_scenarios

START = 1_800_000_000.0


def record_live(path: Path, ticks: int, gpus: int = 4, interval_s: float = 1.0) -> Monitor:
    """``ticks`` of the demo mix on ``gpus`` GPUs written to ``path``; the monitor that
    judged them, its run log kept whole (what a report of the file must tell again)."""
    clock = ManualClock(START)
    source = SimulatedSource(resolve_scenarios("mix", gpus), clock=clock)
    devices = source.open()
    info = SourceInfo("SIMULATED", SourceKind.SIMULATED, "mix")
    monitor = make_monitor(devices, Config(interval_s=interval_s), info)
    monitor.runlog.horizon_s = None
    writer = RecordWriter(path, Header(info, devices, interval_s, live_findings=True))
    for _ in range(ticks):
        frame = source.read()
        writer.write(frame, monitor.ingest(frame))
        clock.advance(interval_s)
    writer.close()
    monitor.runlog.finish()
    return monitor
