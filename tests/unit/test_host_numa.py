"""Where a process may run and where its memory sits: /proc and /sys as Linux writes them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gputui.core.manual_clock import ManualClock
from gputui.sources.host import GpuProcess, HostReader
from gputui.sources.placement import (
    allowed_cpus,
    node_cpus,
    nodes_of,
    numa_memory,
    parse_cpu_list,
)

NUMA_MAPS = (
    "55d0c0000000 default file=/usr/bin/python3.11 mapped=800 mapmax=4 N0=600 N1=200 "
    "kernelpagesize_kB=4\n"
    "7f0000000000 default anon=1024 dirty=1024 N1=1024 kernelpagesize_kB=4\n"
    "7f1000000000 default huge anon=2 dirty=2 N1=2 kernelpagesize_kB=2048\n"
    "7f2000000000 default\n"
)


def test_parse_cpu_list() -> None:
    assert parse_cpu_list("0-2,5,8-9") == {0, 1, 2, 5, 8, 9}
    assert parse_cpu_list("") == set() and parse_cpu_list("x,3") == {3}


def test_node_cpus_and_nodes_of(tmp_path: Path) -> None:
    for node, cpus in ((0, "0-3,8-11"), (1, "4-7,12-15")):
        folder = tmp_path / "devices" / "system" / "node" / f"node{node}"
        folder.mkdir(parents=True)
        (folder / "cpulist").write_text(cpus + "\n")
    nodes = node_cpus(tmp_path)
    assert nodes == {0: {0, 1, 2, 3, 8, 9, 10, 11}, 1: {4, 5, 6, 7, 12, 13, 14, 15}}
    assert nodes_of({4, 5}, nodes) == (1,) and nodes_of({0, 15}, nodes) == (0, 1)


def test_allowed_cpus_and_numa_memory(tmp_path: Path) -> None:
    folder = tmp_path / "4242"
    folder.mkdir()
    (folder / "status").write_text("Name:\tpython\nCpus_allowed:\tff\nCpus_allowed_list:\t4-7\n")
    (folder / "numa_maps").write_text(NUMA_MAPS)
    assert allowed_cpus(4242, tmp_path) == "4-7"
    assert numa_memory(4242, tmp_path) == (600 * 4096, (200 + 1024) * 4096 + 2 * 2048 * 1024)
    assert allowed_cpus(1, tmp_path) is None and numa_memory(1, tmp_path) == ()


def test_this_process_placement_is_read() -> None:
    reader = HostReader(device_check=lambda pid: True)
    (sample,), _ = reader.join_processes([GpuProcess(os.getpid(), 0, 1 << 20, "compute")])
    assert sample.cpus_allowed is not None
    assert parse_cpu_list(sample.cpus_allowed) == set(os.sched_getaffinity(0))


def test_memory_placement_is_read_rarely_and_only_where_there_are_nodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """numa_maps makes the kernel walk every page of the process: on one node it is never
    read (nothing to place), on several once a minute, not every affinity check."""
    from gputui.sources import host

    reads: list[int] = []

    def counted(pid: int) -> tuple[int, ...]:
        reads.append(pid)
        return (1 << 30, 3 << 30)

    monkeypatch.setattr(host, "numa_memory", counted)
    gpu = [GpuProcess(os.getpid(), 0, 1 << 20, "compute")]
    clock = ManualClock(0.0)
    one = HostReader(clock=clock, device_check=lambda pid: True)
    one._nodes = {0: set(os.sched_getaffinity(0))}
    (sample,), _ = one.join_processes(gpu)
    assert sample.numa_memory == () and reads == []

    two = HostReader(clock=clock, device_check=lambda pid: True)
    two._nodes = {0: {0}, 1: {1}}
    seen = []
    for _ in range(int(host.NUMA_MEMORY_PERIOD_S) + 1):
        (sample,), _ = two.join_processes(gpu)
        seen.append(sample.numa_memory)
        clock.advance(1.0)
    assert len(reads) == 2  # at the start and a minute on
    assert set(seen) == {(1 << 30, 3 << 30)}  # the ticks between keep the last reading
