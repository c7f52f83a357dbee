"""The live source's glance: the first screen's frame, quick (the GPUs and their processes,
the host's memory and load), the slow host readings left to the first full read; and the
app's start taking one where the source offers it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from gputui.cli.opening import _glance
from gputui.core.manual_clock import ManualClock
from gputui.core.model import Frame
from gputui.sources.host import HostReader
from gputui.sources.nvml import NvmlSource
from gputui.sources.settings import SettingsReader
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from tests.nvml_double import MIB, FakeGpu, FakeProcess, driver, install


def test_a_glance_reads_the_gpus_and_processes_and_leaves_the_slow_host_readings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    me = os.getpid()
    install(monkeypatch, driver(580, [FakeGpu(processes=[FakeProcess(me, 1000 * MIB)])]))
    settings = SettingsReader()
    reads: list[object] = []
    read = settings.read

    def counted(*args: Any) -> object:
        reads.append(args)
        return read(*args)

    monkeypatch.setattr(settings, "read", counted)
    source = NvmlSource(
        host=HostReader(device_check=lambda _pid: True),
        settings=settings,
        clock=ManualClock(1_700_000_000.0),
        monotonic=ManualClock(1000.0),
        sysfs=Path("/nonexistent"),
    )
    source.open()
    first = source.glance()
    [gpu] = first.gpus
    assert not gpu.lost and gpu.util_gpu is not None and gpu.mem_used is not None
    [proc] = first.processes
    assert (proc.pid, proc.gpu_memory) == (me, 1000 * MIB)
    assert proc.command is None and proc.cpu_percent is None and proc.user is None
    assert first.host is not None and first.host.mem_total and first.host.load_1 is not None
    assert first.host.cpu_percent is None and first.host.per_cpu_percent == ()
    assert (first.jobs, first.settings, reads) == ((), None, [])
    full = source.read()  # the first read has it all
    assert full.processes[0].command is not None and full.processes[0].user is not None
    assert len(reads) == 1 and full.settings is not None
    assert full.host is not None and full.host.per_cpu_percent
    source.close()


def test_the_app_starts_with_a_glance_where_the_source_takes_one() -> None:
    class Glancing(SimulatedSource):
        def glance(self) -> Frame:
            return self.read()

    class Failing(SimulatedSource):
        def glance(self) -> Frame:
            raise RuntimeError("the driver said no")

    scenarios = resolve_scenarios("healthy", 2)
    glancing = Glancing(scenarios)
    glancing.open()
    [frame] = _glance(glancing)
    assert len(frame.gpus) == 2
    assert _glance(SimulatedSource(scenarios)) == ()  # no glance: the sampler's first read
    failing = Failing(scenarios)
    failing.open()
    assert _glance(failing) == ()  # the sampler's first read meets the error and says it
