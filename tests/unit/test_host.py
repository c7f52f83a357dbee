"""Host readings and the join of NVML's PIDs with the host's processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gputui.names import NoteKind
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
    child = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        reader = HostReader(device_check=lambda pid: True)
        (p,), _ = reader.join_processes([GpuProcess(child.pid, 0, 5, "compute")])
        assert p.cuda_runtime == "12.6"
        assert "CUDA_LAUNCH_BLOCKING=1" in p.env
        assert not any("SECRET" in e for e in p.env)  # nothing else of the environment
    finally:
        child.kill()
        child.wait()
