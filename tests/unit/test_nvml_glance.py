"""The live source's glance: the first screen's frame, quick (the GPUs and their processes,
the host's memory and load), the slow host readings left to the first full read; and the
app's start taking one where the source offers it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from gputui.cli.opening import glance_frames
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
    [frame] = glance_frames(glancing)
    assert len(frame.gpus) == 2
    assert glance_frames(SimulatedSource(scenarios)) == ()  # no glance: the sampler's first read
    failing = Failing(scenarios)
    failing.open()
    assert glance_frames(failing) == ()  # the sampler's first read meets the error and says it


def test_topology_later_leaves_the_gpu_pairs_to_the_first_full_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The app's open leaves the GPUs' PCIe paths, NVLinks, NUMA node and P2P matrix to
    the first full read, whose frame brings the same facts an ordinary open gives."""
    lib = driver(580, [FakeGpu(), FakeGpu(bus_id="00000000:3B:00.0")])
    install(monkeypatch, lib)

    def opened() -> NvmlSource:
        return NvmlSource(
            clock=ManualClock(1_700_000_000.0),
            monotonic=ManualClock(1000.0),
            sysfs=Path("/nonexistent"),
        )

    plain = opened()
    complete = plain.open()
    assert all(d.pcie_topology and d.p2p_read for d in complete)
    assert plain.read().joined == ()
    plain.close()

    source = opened()
    source.topology_later()
    pair_calls = ("nvmlDeviceGetTopologyCommonAncestor", "nvmlDeviceGetP2PStatus")
    before = {name: lib.calls.get(name, 0) for name in pair_calls}
    quick = source.open()
    assert {name: lib.calls.get(name, 0) for name in pair_calls} == before  # none asked
    assert [d.pcie_topology for d in quick] == [None, None]
    assert [d.p2p_read for d in quick] == [None, None]
    assert [d.name for d in quick] == [d.name for d in complete]
    assert source.glance().joined == ()  # the glance is for the first paint: no pairs
    assert source.read().joined == complete  # the first full read completes the facts
    assert source.read().joined == ()  # once
    source.close()


def test_the_app_asks_for_the_topology_later_before_it_opens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gputui.cli.commands as commands
    from gputui.cli.parser import parse_command_line

    asked: list[str] = []

    class Later(SimulatedSource):
        def topology_later(self) -> None:
            asked.append("later")

        def open(self) -> Any:
            asked.append("open")
            return super().open()

    monkeypatch.setattr(
        commands, "make_source", lambda _args: Later(resolve_scenarios("healthy", 1))
    )
    commands.cmd_app(parse_command_line([])[0])  # ends at the missing terminal
    assert asked == ["later", "open"]
