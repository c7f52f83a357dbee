"""A process's CPU time, threads and memory from /proc/PID/stat, and CPU % from two reads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from gputui.core.manual_clock import ManualClock
from gputui.sources.host import GpuProcess, HostReader
from gputui.sources.proc_stat import (
    CpuMeter,
    ProcStat,
    StatFiles,
    parse_cpu,
    parse_stat,
    read_small,
    read_stat,
)

# A real stat line's layout (man 5 proc), with a command that holds ") (" and spaces.
_LINE = (
    "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 2000 0 0 0 "
    "250 150 0 0 20 0 12 0 98765 8000000000 5000 18446744073709551615"
)


def _fake_proc(tmp_path: Path, pid: int, line: str) -> str:
    (tmp_path / str(pid)).mkdir()
    (tmp_path / str(pid) / "stat").write_text(line)
    return str(tmp_path)


def test_fields_are_counted_from_the_last_parenthesis(tmp_path: Path) -> None:
    stat = read_stat(4242, _fake_proc(tmp_path, 4242, _LINE))
    ticks = os.sysconf("SC_CLK_TCK")
    assert stat == ProcStat(
        started=98765,
        cpu_s=(250 + 150) / ticks,
        threads=12,
        rss=5000 * os.sysconf("SC_PAGE_SIZE"),
    )


def test_gone_or_garbled_is_none(tmp_path: Path) -> None:
    proc = _fake_proc(tmp_path, 7, "7 (short) S 1 2 3")
    assert read_stat(7, proc) is None
    assert read_stat(8, proc) is None  # no such process
    assert parse_cpu(read_small(f"{proc}/7/stat")) is None
    assert parse_cpu(None) is None  # no such process


def test_a_workers_cpu_reading_is_the_full_readings_start_and_time(tmp_path: Path) -> None:
    """The lean read every worker gets each tick agrees with the whole line's."""
    proc = _fake_proc(tmp_path, 4242, _LINE)
    stat = read_stat(4242, proc)
    assert stat is not None
    assert parse_cpu(read_small(f"{proc}/4242/stat")) == (stat.started, stat.cpu_s)
    me = read_stat(os.getpid())
    mine = parse_cpu(read_small(f"/proc/{os.getpid()}/stat"))
    assert me is not None and mine is not None
    assert mine[0] == me.started and 0.0 <= mine[1] - me.cpu_s < 0.5
    meter = CpuMeter(ManualClock(0.0))
    assert meter.share(4242, *mine) is None  # the same count as ``percent``'s


def test_own_process_agrees_with_psutil() -> None:
    stat = read_stat(os.getpid())
    assert stat is not None
    me = psutil.Process()
    with me.oneshot():
        times, threads, rss = me.cpu_times(), me.num_threads(), me.memory_info().rss
    assert stat.threads == threads
    assert abs(stat.cpu_s - (times.user + times.system)) < 0.5
    assert abs(stat.rss - rss) < 8 << 20  # the interpreter allocates between the reads


def test_cpu_percent_from_two_readings() -> None:
    clock = ManualClock(100.0)
    meter = CpuMeter(clock)
    first = ProcStat(started=5, cpu_s=10.0, threads=1, rss=0)
    assert meter.percent(1, first) is None  # no delta yet: unknown, not 0 %
    clock.advance(2.0)
    assert meter.percent(1, ProcStat(started=5, cpu_s=13.0, threads=1, rss=0)) == 150.0
    clock.advance(1.0)
    # the PID now names a process that started later: its count starts over
    assert meter.percent(1, ProcStat(started=900, cpu_s=0.5, threads=1, rss=0)) is None
    clock.advance(1.0)
    assert meter.percent(1, ProcStat(started=900, cpu_s=0.75, threads=1, rss=0)) == 25.0


def test_forgotten_processes_start_over() -> None:
    clock = ManualClock(0.0)
    meter = CpuMeter(clock)
    stat = ProcStat(started=1, cpu_s=1.0, threads=1, rss=0)
    meter.percent(1, stat)
    meter.percent(2, stat)
    meter.keep_only([2])
    clock.advance(1.0)
    assert meter.percent(1, stat) is None
    assert meter.percent(2, stat) == 0.0


def _stop(child: subprocess.Popen[bytes]) -> None:
    """SIGSTOP, and wait until it has taken: the kernel stops the process a moment later."""
    child.send_signal(signal.SIGSTOP)
    while psutil.Process(child.pid).status() != psutil.STATUS_STOPPED:
        time.sleep(0.001)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_workers_cpu_is_the_sum_of_the_childrens() -> None:
    """The busy worker is stopped at each reading, so the CPU time it used in between is
    known exactly; the sleeping one adds nothing."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    idle = subprocess.Popen(
        [sys.executable, "-c", "import time; print(flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE,
    )
    try:
        assert idle.stdout is not None
        idle.stdout.readline()  # started up: asleep from here on
        clock = ManualClock(0.0)
        reader = HostReader(clock=clock, device_check=lambda pid: True)
        gpu = [GpuProcess(os.getpid(), 0, 1 << 30, "compute")]
        _stop(busy)
        (first,), _ = reader.join_processes(gpu)
        assert first.children is not None and first.children >= 2
        assert first.workers_cpu_percent is None  # every worker read once: no delta yet
        before = read_stat(busy.pid)
        busy.send_signal(signal.SIGCONT)
        time.sleep(0.3)
        _stop(busy)
        after = read_stat(busy.pid)
        clock.advance(2.0)
        (second,), _ = reader.join_processes(gpu)
        assert before is not None and after is not None and after.cpu_s > before.cpu_s
        assert second.workers_cpu_percent == pytest.approx(50.0 * (after.cpu_s - before.cpu_s))
    finally:
        for child in (busy, idle):
            child.kill()
            child.wait()


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_stat_files_are_kept_open_and_read_as_the_pid_is_now() -> None:
    """A kept stat file answers as a fresh read; once its process has gone it reads as
    gone and is let go; no more than ``most`` are kept; ``keep_only`` closes the rest."""
    children = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
    files = StatFiles(most=2)
    before = _open_descriptors()
    try:
        for child in children:
            line = files.read(child.pid)
            fresh = read_small(f"/proc/{child.pid}/stat")
            assert line is not None and fresh is not None
            assert parse_stat(line) == parse_stat(fresh)
        assert _open_descriptors() == before + 2  # the third is read, not kept
        first = children[0]
        started = parse_stat(files.read(first.pid))
        first.kill()
        first.wait()  # reaped: its PID names no process now (or, reused, another one)
        now = parse_stat(files.read(first.pid))
        assert now is None or started is None or now.started != started.started
        assert _open_descriptors() == before + 1 + (now is not None)
        assert parse_cpu(files.read(children[1].pid)) == parse_cpu(
            read_small(f"/proc/{children[1].pid}/stat")
        )
        files.keep_only([children[2].pid])
        assert _open_descriptors() == before
        files.read(children[2].pid)
        files.close()
        assert _open_descriptors() == before
    finally:
        for child in children:
            child.kill()
            child.wait()


def test_stat_files_on_a_disk_are_read_afresh(tmp_path: Path) -> None:
    """A copy of /proc on a disk is no kernel's: a removed process reads as gone."""
    proc = _fake_proc(tmp_path, 4242, _LINE)
    files = StatFiles(proc, most=8)
    before = _open_descriptors()
    assert files.read(4242) == _LINE.encode()
    assert _open_descriptors() == before
    (Path(proc) / "4242" / "stat").unlink()
    assert files.read(4242) is None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_a_kept_stat_file_reads_the_process_as_it_is_now() -> None:
    """Read again in place, a kept file gives the CPU time spent since, not the first read."""
    files = StatFiles(most=8)
    before = _open_descriptors()
    first = parse_cpu(files.read(os.getpid()))
    assert _open_descriptors() == before + 1  # kept
    spent = time.thread_time() + 0.2
    while time.thread_time() < spent:
        pass
    second = parse_cpu(files.read(os.getpid()))
    assert first is not None and second is not None
    assert second[0] == first[0] and second[1] - first[1] >= 0.15
    files.close()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_the_host_reader_keeps_files_only_where_asked_and_lets_them_go() -> None:
    """gputui's own process keeps its GPU processes' and workers' stat files open while they
    are listed; a reader inside another program (the default) keeps none."""
    gpu = [GpuProcess(os.getpid(), 0, 1 << 30, "compute")]
    worker = subprocess.Popen(["sleep", "30"])
    try:
        before = _open_descriptors()
        borrowed = HostReader(device_check=lambda pid: True)
        borrowed.join_processes(gpu)
        borrowed.join_processes(gpu)
        assert _open_descriptors() == before
        own = HostReader(device_check=lambda pid: True, keep_files=True)
        (sample,), _ = own.join_processes(gpu)
        assert sample.children is not None and sample.children >= 1
        kept = _open_descriptors() - before
        assert kept == 1 + sample.children  # this process and each of its children
        own.join_processes([])  # no longer on a GPU: its files are let go
        assert _open_descriptors() == before
        own.join_processes(gpu)
        assert _open_descriptors() == before + kept
        own.close()
        assert _open_descriptors() == before
    finally:
        worker.kill()
        worker.wait()
