"""Host readings and the join of NVML's PIDs with the host's processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gputui.core.names import NoteKind
from gputui.sources.host import MAX_COMMAND_CHARS, GpuProcess, HostReader


def test_host_sample_has_real_readings() -> None:
    reader = HostReader()
    sample = reader.read_host()
    assert sample.cpu_count and sample.cpu_count >= 1
    assert len(sample.per_cpu_percent) == sample.cpu_count
    assert sample.mem_total and sample.mem_available is not None
    assert sample.hostname


def test_own_process_is_joined_with_host_details() -> None:
    reader = HostReader(device_check=lambda pid: True)
    procs, notes = reader.join_processes([GpuProcess(os.getpid(), 0, 1024, "compute")])
    (p,) = procs
    assert p.visible and p.command and "python" in (p.name or "").lower() + p.command.lower()
    assert p.rss and p.threads and p.cpu_percent is None  # first reading: no delta yet
    assert notes == ()
    (again,), _ = reader.join_processes([GpuProcess(os.getpid(), 0, 1024, "compute")])
    assert again.cpu_percent is not None


def test_pid_from_another_namespace_is_not_shown_as_ours() -> None:
    reader = HostReader(device_check=lambda pid: True)
    missing_pid = 2**22 + 12345  # above pid_max on Linux
    procs, notes = reader.join_processes([GpuProcess(missing_pid, 0, 1024, "compute")])
    assert procs[0].visible is False and procs[0].command is None
    assert notes and notes[0].kind is NoteKind.PID_NAMESPACE
    assert "PID namespace" in notes[0].text


def test_local_process_without_nvidia_device_is_foreign() -> None:
    reader = HostReader(device_check=lambda pid: False)
    procs, notes = reader.join_processes([GpuProcess(os.getpid(), 0, 1024, "compute")])
    assert procs[0].visible is False and notes


def test_vanished_process_keeps_nvml_facts() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    reader = HostReader(device_check=lambda pid: True)
    reader.join_processes([GpuProcess(child.pid, 0, 5, "compute")])
    child.kill()
    child.wait()
    (p,), _ = reader.join_processes([GpuProcess(child.pid, 0, 5, "compute")])
    assert p.pid == child.pid and p.gpu_memory == 5


def test_long_and_non_utf8_command_lines_are_cut_and_printable() -> None:
    child = subprocess.Popen(
        [
            sys.executable.encode(),
            b"-c",
            b"import time; time.sleep(30)",
            b"\xff\xfe",
            b"x" * 100_000,
        ]
    )
    try:
        reader = HostReader(device_check=lambda pid: True)
        (p,), _ = reader.join_processes([GpuProcess(child.pid, 0, 5, "compute")])
        assert p.command is not None and len(p.command) <= MAX_COMMAND_CHARS + 1
        p.command.encode("utf-8")  # printable and writable, whatever the bytes were
    finally:
        child.kill()
        child.wait()


def test_cuda_runtime_and_variables_of_a_process(tmp_path: Path) -> None:
    """A process that mapped a libcudart and runs with CUDA_LAUNCH_BLOCKING=1."""
    lib = tmp_path / "libcudart.so.12.6.37"
    lib.write_bytes(b"\0" * 4096)
    code = (
        "import mmap, sys, time\n"
        f"f = open({str(lib)!r}, 'rb')\n"
        "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    env = {**os.environ, "CUDA_LAUNCH_BLOCKING": "1", "SECRET_TOKEN": "hunter2"}
    env["OMPI_COMM_WORLD_LOCAL_SIZE"] = "4"  # the ranks an MPI launcher started on this node
    child = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        reader = HostReader(device_check=lambda pid: True)
        (p,), _ = reader.join_processes([GpuProcess(child.pid, 0, 5, "compute")])
        assert p.cuda_runtime == "12.6"
        assert "CUDA_LAUNCH_BLOCKING=1" in p.env
        assert "OMPI_COMM_WORLD_LOCAL_SIZE=4" in p.env
        assert not any("SECRET" in e for e in p.env)  # nothing else of the environment
    finally:
        child.kill()
        child.wait()


def test_the_process_tree_comes_from_one_pass_over_proc(tmp_path: Path) -> None:
    from gputui.sources.host import _process_tree

    for pid, stat in {
        "100": b"100 (python) S 1 100 100 0",
        "101": b"101 (pt_data_worker) S 100 100 100 0",
        "102": b"102 (a (weird) name) S 100 100 100 0",  # a comm with spaces and parentheses
        "103": b"103 (python) Z 101 100 100 0",
    }.items():
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "stat").write_bytes(stat)
    (tmp_path / "self").mkdir()  # not a PID
    (tmp_path / "104").mkdir()  # exited while listed: no stat file
    tree = {parent: sorted(children) for parent, children in _process_tree(tmp_path).items()}
    assert tree == {1: [100], 100: [101, 102], 101: [103]}
    assert _process_tree(tmp_path / "missing") == {}


def test_workers_are_found_with_one_scan_for_every_gpu_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Eight ranks each asked psutil for their children: eight scans of every process on the
    machine a second. One scan now serves them all, every few seconds."""
    from gputui.core.manual_clock import ManualClock
    from gputui.sources import host

    scans = []
    real = host._process_tree

    def counted() -> dict[int, list[int]]:
        scans.append(1)
        return real()

    monkeypatch.setattr(host, "_process_tree", counted)
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        clock = ManualClock(0.0)
        reader = HostReader(clock=clock, device_check=lambda pid: True)
        gpus = [GpuProcess(os.getpid(), gpu, 1024, "compute") for gpu in range(8)]
        for _ in range(3):
            procs, _notes = reader.join_processes(gpus)
            clock.advance(1.0)
        assert len(scans) == 1
        assert all(p.children is not None and p.children >= 1 for p in procs)
        assert procs[0].workers_cpu_percent is not None  # primed, then measured
        clock.advance(host.TREE_PERIOD_S)
        reader.join_processes(gpus)
        assert len(scans) == 1  # every GPU process has its workers: the slow period
        clock.advance(host.TREE_STEADY_S)
        reader.join_processes(gpus)
        assert len(scans) == 2
        before = procs[0].children
        assert before is not None
        worker.kill()  # an epoch ends: its workers exit (and new ones start)
        worker.wait()
        clock.advance(1.0)
        reader.join_processes(gpus)  # finds one gone ...
        clock.advance(1.0)
        (after, *_), _notes = reader.join_processes(gpus)  # ... and looks again at once
        assert len(scans) == 3
        assert after.children == before - 1
    finally:
        worker.kill()
        worker.wait()


@pytest.mark.parametrize("kernel_lists_children", [True, False])
def test_a_gpu_process_without_workers_is_looked_at_again_soon(
    monkeypatch: pytest.MonkeyPatch, kernel_lists_children: bool
) -> None:
    """A job starts its data loaders after CUDA: until its workers show, it is looked at
    every few seconds, not at the slow period: its main thread's children where the kernel
    lists them (the whole tree is read again only once it has some), else the whole tree."""
    from gputui.core.manual_clock import ManualClock
    from gputui.sources import host

    scans = []
    probes = []
    started = [False]

    def tree() -> dict[int, list[int]]:
        scans.append(1)  # readable; our process has a (live) child once they have started
        return {1: [os.getpid()], os.getpid(): [os.getppid()] if started[0] else []}

    def has_children(pid: int) -> bool | None:
        probes.append(pid)
        return started[0] if kernel_lists_children else None

    monkeypatch.setattr(host, "_process_tree", tree)
    monkeypatch.setattr(host, "_has_children", has_children)
    clock = ManualClock(0.0)
    reader = HostReader(clock=clock, device_check=lambda pid: True)
    gpus = [GpuProcess(os.getpid(), 0, 1024, "compute")]
    for _ in range(int(host.TREE_PERIOD_S) * 3):
        (proc,), _notes = reader.join_processes(gpus)
        clock.advance(1.0)
    assert proc.children == 0 and proc.workers_cpu_percent == 0.0
    assert len(probes) == 2  # at 5 s and 10 s
    assert len(scans) == (1 if kernel_lists_children else 3)
    started[0] = True  # its data loaders start
    for _ in range(int(host.TREE_PERIOD_S)):
        (proc,), _notes = reader.join_processes(gpus)
        clock.advance(1.0)
    assert proc.children == 1
    assert len(scans) == (2 if kernel_lists_children else 4)


def test_main_thread_children_as_the_kernel_lists_them(tmp_path: Path) -> None:
    from gputui.sources.host import _has_children

    assert _has_children(os.getpid()) is False  # pytest's process starts none here
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        listed = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists()
        assert _has_children(os.getpid()) is (True if listed else None)
    finally:
        child.kill()
        child.wait()
    (tmp_path / "7" / "task" / "7").mkdir(parents=True)
    (tmp_path / "7" / "task" / "7" / "children").write_text("")
    assert _has_children(7, str(tmp_path)) is False
    assert _has_children(8, str(tmp_path)) is None  # gone, or no such file on this kernel


def test_a_process_on_several_gpus_is_read_once_with_one_cpu_figure() -> None:
    """A second CPU reading a moment after the first would say 0 %: a process on four GPUs
    gets the same host details on each."""
    reader = HostReader(device_check=lambda pid: True)
    gpus = [GpuProcess(os.getpid(), gpu, (gpu + 1) << 30, "compute") for gpu in range(4)]
    reader.join_processes(gpus)
    _spend_cpu(0.05)  # some CPU between the two readings, past /proc's 10 ms ticks
    procs, _ = reader.join_processes(gpus)
    assert [p.gpu_index for p in procs] == [0, 1, 2, 3]
    assert [p.gpu_memory for p in procs] == [(g + 1) << 30 for g in range(4)]
    assert len({p.cpu_percent for p in procs}) == 1 and procs[0].cpu_percent


def test_swap_and_disk_are_read_every_few_seconds_not_every_tick(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gputui.core.manual_clock import ManualClock
    from gputui.sources import host, machine

    calls = {"swap": 0, "disk": 0}
    swap, disk = machine.swap, machine.disk_read_bytes

    def counted_swap(*args: str) -> tuple[int, int]:
        calls["swap"] += 1
        return swap(*args)

    def counted_disk(*args: str) -> int | None:
        calls["disk"] += 1
        return disk(*args)

    monkeypatch.setattr(host, "swap", counted_swap)
    monkeypatch.setattr(host, "disk_read_bytes", counted_disk)
    clock = ManualClock(0.0)
    reader = HostReader(clock=clock)
    samples = []
    for _ in range(10):  # ten one-second ticks
        samples.append(reader.read_host())
        clock.advance(1.0)
    assert calls == {"swap": 2, "disk": 2}  # at 0 s and 5 s
    assert all(s.swap_total is not None for s in samples)
    assert samples[5].disk_read_bps is not None  # a rate over the 5 s between the reads
    assert host.SLOW_HOST_PERIOD_S == 5.0


def test_cpu_shares_from_two_readings_of_proc_stat() -> None:
    """Busy is everything but idle and I/O wait; the I/O-wait share is of all CPUs' time."""
    from gputui.sources.machine import cpu_shares

    before = [(10.0, 100.0, 1.0), (50.0, 100.0, 0.0)]
    after = [(40.0, 200.0, 21.0), (50.0, 100.0, 0.0)]  # the second CPU went offline a tick
    shares, iowait = cpu_shares(before, after)
    assert shares == (30.0, 0.0)
    assert iowait == 20.0
    assert cpu_shares(before, [(5.0, 300.0, None)]) == ((0.0,), None)  # no iowait counted


def test_host_cpu_is_one_share_per_cpu() -> None:
    import psutil

    reader = HostReader()
    _spend_cpu(0.05)
    sample = reader.read_host()
    assert sample.cpu_count == psutil.cpu_count()
    assert all(0.0 <= share <= 100.0 for share in sample.per_cpu_percent)
    assert sample.iowait_pct is None or 0.0 <= sample.iowait_pct <= 100.0


def test_memory_from_the_head_of_meminfo(tmp_path: Path) -> None:
    import psutil

    from gputui.sources.machine import memory

    meminfo = tmp_path / "meminfo"
    meminfo.write_text(
        "MemTotal:       16384 kB\nMemFree:         1024 kB\nMemAvailable:    8192 kB\n"
    )
    assert memory(str(meminfo)) == (16384 * 1024, 8192 * 1024)
    meminfo.write_text("MemTotal:       16384 kB\nMemFree:         1024 kB\n")  # Linux < 3.14
    vm = psutil.virtual_memory()
    total, available = memory(str(meminfo))
    assert total == vm.total and abs(available - vm.available) < 1 << 30
    live_total, live_available = memory()
    assert live_total == vm.total and 0 < live_available <= live_total


def _proc_files(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_host_is_read_from_proc_as_psutil_reads_it(tmp_path: Path) -> None:
    """Each CPU's share from its /proc/stat line (guest time inside user time, the line
    of all CPUs left out), swap from meminfo, and the disks' reads as psutil counts them:
    whole devices only (those in /sys/block), 512-byte sectors whatever the disk's."""
    from gputui.core.manual_clock import ManualClock
    from gputui.sources.machine import cpu_times, disk_read_bytes, swap

    stat = "cpu  {a} 0 0 {i} 0 0 0 0 0 0\ncpu0 {a} 0 0 {i} {w} 0 0 0 {g} 0\nintr 5 6\nbtime 1\n"
    proc = _proc_files(tmp_path / "proc", {"stat": stat.format(a=100, i=100, w=0, g=50)})
    ((busy, total, iowait),) = cpu_times(str(proc))
    assert (busy, total, iowait) == (100 / TICKS, 200 / TICKS, 0.0)
    _proc_files(
        proc,
        {
            "meminfo": (
                "MemTotal: 16 kB\nMemAvailable: 8 kB\nSwapTotal: 4096 kB\nSwapFree: 1024 kB\n"
            ),
            "diskstats": (
                "   8       0 sda 10 0 100 0 0 0 0 0 0 0 0 0 0 0\n"
                "   8       1 sda1 9 0 90 0 0 0 0 0 0 0 0 0 0 0\n"
                "   7       0 loop0 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
                " 104       0 cciss/c0d0 1 0 2 0 0 0 0 0 0 0 0 0 0 0\n"
            ),
            "loadavg": "1.00 0.50 0.25 3/100 7\n",
        },
    )
    block = _proc_files(
        tmp_path / "block", {"sda/size": "1", "loop0/size": "1", "cciss!c0d0/size": "1"}
    )
    assert swap(str(proc / "meminfo")) == (4096 * 1024, 3072 * 1024)
    assert disk_read_bytes(str(proc / "diskstats"), str(block)) == (100 + 8 + 2) * 512
    clock = ManualClock(0.0)
    reader = HostReader(clock=clock, proc=str(proc), sys_block=str(block))
    _proc_files(proc, {"stat": stat.format(a=130, i=160, w=10, g=60)})
    clock.advance(1.0)
    sample = reader.read_host()
    # busy 30 of 100 ticks (iowait 10 is not busy), iowait 10 of them
    assert sample.per_cpu_percent == pytest.approx((30.0,))
    assert sample.iowait_pct == pytest.approx(10.0)
    assert (sample.swap_total, sample.swap_used) == (4096 * 1024, 3072 * 1024)
    assert (sample.load_1, sample.run_queue) == (1.0, 2)


TICKS = float(os.sysconf("SC_CLK_TCK"))


def test_a_process_is_named_and_owned_as_psutil_says(tmp_path: Path) -> None:
    """The kernel's name, or the program's where the kernel cut it at 15 characters; the
    real user's name, or the number where the system has none; the start from the boot
    time and the process's start in clock ticks."""
    import pwd

    from gputui.sources.host import _name, _user

    line = b"42 (python3.11-long) S 7 42 42 0"
    assert _name(b"42 (py (x) y) S 7", None) == "py (x) y"
    assert _name(line, ["/opt/bin/python3.11-long-running-name", "train.py"]) == (
        "python3.11-long-running-name"
    )
    assert _name(line, ["torchrun"]) == "python3.11-long"
    unknown = max(u.pw_uid for u in pwd.getpwall()) + 12345
    status = _proc_files(
        tmp_path, {"a": "Name:\tx\nUid:\t0\t0\t0\t0\n", "b": f"Uid:\t{unknown}\t0\n"}
    )
    assert _user(str(status / "a")) == pwd.getpwuid(0).pw_name
    assert _user(str(status / "b")) == str(unknown)
    assert _user(str(status / "gone")) is None


def _spend_cpu(seconds: float) -> None:
    """This process's CPU time moved on by ``seconds`` (a fixed loop could finish inside
    one of the clock ticks /proc counts in, on a fast or a busy machine alike)."""
    until = time.process_time() + seconds
    while time.process_time() < until:
        sum(i * i for i in range(1_000))
