"""What many tests build: a monitor over the simulated node, fed on a fixed clock."""

from __future__ import annotations

from gputui.advisor import make_monitor
from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import SourceInfo
from gputui.core.names import SourceKind
from gputui.sampling.monitor import Monitor
from gputui.sources.simulated import SimulatedSource, resolve_scenarios

START = 1_800_000_000.0


def demo_monitor(
    scenario: str = "mix", seconds: int = 90, gpus: int = 4, start: float = START
) -> Monitor:
    """A monitor that has seen ``seconds`` of the scenario, one frame a second."""
    clock = ManualClock(start)
    source = SimulatedSource(resolve_scenarios(scenario, gpus), clock=clock)
    info = SourceInfo("SIMULATED", SourceKind.SIMULATED, scenario)
    monitor = make_monitor(source.open(), Config(), info)
    for _ in range(seconds):
        monitor.ingest(source.read())
        clock.advance(1.0)
    return monitor
