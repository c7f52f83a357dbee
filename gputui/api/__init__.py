"""gputui's public Python API: open a source, read ticks, get the advisor's findings as
plain records, write the run's report; and ``watch``, the advisor beside a training loop.

    from gputui import api

    with api.open_nvml() as session:          # or open_demo, open_recording, open_prometheus
        for tick in session.ticks(count=60):
            for reading in tick.readings:
                print(reading.gpu, reading.util_pct, reading.sm_clock_pct, reading.throttled)
            for finding in tick.findings:
                print(finding.text())
        session.report("run.html")

The names exported here are the API; they follow semantic versioning (``API_VERSION``,
CHANGELOG.md): a change that breaks a caller waits for the next major version. Nothing
here imports Textual, and nothing here is imported when the ``gputui`` app starts.
"""

from __future__ import annotations

from gputui.api.gpus import CHOICES, Gpus, NoSuchGpu, local_rank, visible
from gputui.api.metrics import Log
from gputui.api.opening import (
    SourceUnavailable,
    open_demo,
    open_nvml,
    open_prometheus,
    open_recording,
)
from gputui.api.records import Device, Finding, Reading, Tick
from gputui.api.session import Session, SourceEnded
from gputui.api.steps import Cause, StepLine
from gputui.api.watch import Watch, watch

#: the API's own version (semantic versioning), apart from the package's
API_VERSION = "1.0.0"

__all__ = [
    "API_VERSION",
    "CHOICES",
    "Cause",
    "Device",
    "Finding",
    "Gpus",
    "Log",
    "NoSuchGpu",
    "Reading",
    "Session",
    "SourceEnded",
    "SourceUnavailable",
    "StepLine",
    "Tick",
    "Watch",
    "local_rank",
    "open_demo",
    "open_nvml",
    "open_prometheus",
    "open_recording",
    "visible",
    "watch",
]
