"""Another process's /proc files are read within bounds (issue 52): a job in a mount
namespace of its own made its mountinfo 137 MB, which every watching gputui read whole
every 10 s (5.4 s and 420 MB each time). Each reader is fed a file far past its bound,
laid out where /proc would be, and may cost no more than the bound; a file a process
names (beside a library it mapped) is read only if it is a regular file; a call that can
block on a job's filesystem answers within its deadline."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.sources import deadline, proc_files
from gputui.sources.cgroups import read_cgroup
from gputui.sources.cuda_facts import process_facts, runtime_version
from gputui.sources.host_settings import process_limits
from gputui.sources.placement import allowed_cpus, numa_memory
from gputui.sources.shm import read_shm
from tests.hostile import peak_below

PID = 4242
MB = 1 << 20


def _fake_proc(tmp_path: Path) -> Path:
    """/proc with one process, 4242, whose root holds a /dev/shm."""
    proc = tmp_path / "proc"
    (proc / str(PID) / "root" / "dev" / "shm").mkdir(parents=True)
    return proc


def _mount(k: int, point: str, fstype: str = "tmpfs", options: str = "size=65536k") -> str:
    return f"{k + 100} 1 0:{k} / {point} rw,nosuid - {fstype} {fstype} rw,{options}\n"


def test_a_mount_table_past_its_bound_costs_only_the_bound(tmp_path: Path) -> None:
    """40 MB of mounts (the job's own namespace), /dev/shm last: the reader stops at its
    bound and calls the mount unknown; the size and use still come from statvfs."""
    proc = _fake_proc(tmp_path)
    lines = [_mount(k, f"/mnt/many/{k:07d}") for k in range(300_000)]
    text = "".join(lines) + _mount(300_001, "/dev/shm", options="size=1k")
    (proc / str(PID) / "mountinfo").write_text(text)
    assert len(text) > 20 * MB
    started = time.monotonic()
    with peak_below(6 * proc_files.MAX_MOUNTINFO_BYTES):
        shm = read_shm(PID, proc)
    assert time.monotonic() - started < 2.0
    assert shm.mount is None and shm.size is not None and shm.unreadable is None


def test_a_mount_table_within_its_bound_names_the_mount(tmp_path: Path) -> None:
    proc = _fake_proc(tmp_path)
    text = "".join(_mount(k, f"/mnt/{k}") for k in range(200)) + _mount(999, "/dev/shm")
    (proc / str(PID) / "mountinfo").write_text(text)
    shm = read_shm(PID, proc)
    assert shm.mount == "tmpfs size=65536k"


@pytest.mark.parametrize(
    "name", ["maps", "numa_maps", "environ", "status", "limits", "cgroup", "cmdline"]
)
def test_every_proc_file_of_another_process_is_read_within_its_bound(
    tmp_path: Path, name: str
) -> None:
    proc = _fake_proc(tmp_path)
    folder = proc / str(PID)
    (folder / "fd").mkdir()
    line = {
        "maps": "7f0000000000-7f0000001000 r-xp 00000000 08:01 1 /usr/lib/libfoo.so\n",
        "numa_maps": "7f0000000000 default file=/usr/lib/libfoo.so N0=1 kernelpagesize_kB=4\n",
        "environ": "FILLER=" + "x" * 100 + "\0",
        "status": "Junk:\t" + "y" * 100 + "\n",
        "limits": "Max junk   " + "z" * 100 + "\n",
        "cgroup": "0::/" + "c" * 100 + "\n",
        "cmdline": "argument" * 12 + "\0",
    }[name]
    (folder / name).write_text(line * (48 * MB // len(line)))
    readers: dict[str, Callable[[], object]] = {
        "maps": lambda: process_facts(PID, str(proc)),
        "numa_maps": lambda: numa_memory(PID, proc),
        "environ": lambda: process_facts(PID, str(proc)),
        "status": lambda: (allowed_cpus(PID, proc), process_limits([PID], proc)),
        "limits": lambda: process_limits([PID], proc),
        "cgroup": lambda: read_cgroup(PID, proc),
        "cmdline": lambda: proc_files.arguments(PID, str(proc)),
    }
    started = time.monotonic()
    with peak_below(12 * MB):
        readers[name]()
    assert time.monotonic() - started < 2.0


def test_the_command_line_is_cut_where_it_is_shown(tmp_path: Path) -> None:
    proc = _fake_proc(tmp_path)
    (proc / str(PID) / "cmdline").write_bytes(b"python\0train.py\0" + b"--x\0" * 1_000_000)
    parts = proc_files.arguments(PID, str(proc))
    assert parts is not None and parts[:2] == ["python", "train.py"]
    assert len("\0".join(parts)) <= proc_files.MAX_ARGUMENTS_BYTES


def test_a_real_process_with_megabytes_of_arguments_and_environment_costs_the_bound() -> None:
    """The kernel lets a process carry about 6 MB of arguments and environment."""
    big = "v" * 100_000
    env = {**os.environ, **{f"FILLER_{k}": big for k in range(8)}, "OMP_NUM_THREADS": "4"}
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", *([big] * 8)], env=env
    )
    try:
        time.sleep(0.2)
        with peak_below(6 * MB):
            facts = process_facts(child.pid)
            parts = proc_files.arguments(child.pid)
        assert parts is not None and parts[0] == sys.executable
        assert "OMP_NUM_THREADS=4" in facts.env
        assert all(not v.startswith("FILLER") for v in facts.env)
    finally:
        child.kill()
        child.wait()


def test_open_files_are_counted_and_listed_only_so_far(tmp_path: Path) -> None:
    folder = tmp_path / "fd"
    folder.mkdir()
    for k in range(3000):
        (folder / str(k)).touch()
    assert len(proc_files.entries(folder, 100)) == 100
    assert proc_files.count(folder, 500) == 500
    assert proc_files.count(folder, 10_000) == 3000


def test_a_line_is_found_by_its_name_wherever_it_sits() -> None:
    """First line, a middle one, the last without its newline; a name inside another
    line's value is not a line of that name."""
    status = "Name:\tpython\nUmask:\t0022\nCpus_allowed_list:\t0-3,8\nVmSwap:\t 12 kB"
    assert proc_files.line_value(status, "Name:") == "\tpython"
    assert proc_files.line_value(status, "Cpus_allowed_list:") == "\t0-3,8"
    assert proc_files.line_value(status, "VmSwap:") == "\t 12 kB"
    assert proc_files.line_value(status, "python") is None
    assert proc_files.line_value(status, "Threads:") is None
    assert proc_files.line_value("", "Name:") is None


def test_a_file_a_process_names_is_read_only_if_it_is_a_regular_file(tmp_path: Path) -> None:
    """A process may map a "libcudart" from a folder of its own making: the version files
    gputui reads beside it could be a FIFO (a read that never returns) or /dev/zero (one
    that never ends)."""
    site = tmp_path / "site-packages"
    (site / "torch").mkdir(parents=True)
    os.mkfifo(site / "torch" / "version.py")
    (site / "tensorflow" / "python" / "platform").mkdir(parents=True)
    (site / "tensorflow" / "python" / "platform" / "build_info.py").symlink_to("/dev/zero")
    found: list[tuple[str | None, str | None]] = []
    reader = threading.Thread(
        target=lambda: found.append(runtime_version(str(site / "libcudart.so.12"))),
        daemon=True,
    )
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "a FIFO beside a mapped library blocked the reader"
    assert found == [("12", "libcudart.so.12")]


def test_a_filesystem_that_never_answers_is_given_up_at_its_deadline(tmp_path: Path) -> None:
    proc = _fake_proc(tmp_path)
    release = threading.Event()

    def never_answers(path: Path) -> os.statvfs_result:
        release.wait(30)
        return os.statvfs(tmp_path)

    try:
        started = time.monotonic()
        first = read_shm(PID, proc, statvfs=never_answers)
        assert deadline.STATVFS_DEADLINE_S <= time.monotonic() - started < 2.0
        assert first.unreadable is not None and "no answer within 0.5 s" in first.unreadable
        started = time.monotonic()
        again = read_shm(PID, proc, statvfs=never_answers)  # still stuck: not asked again
        assert time.monotonic() - started < 0.2
        assert again.unreadable is not None and "still no answer" in again.unreadable
    finally:
        release.set()
    time.sleep(0.1)
    assert read_shm(PID, proc).unreadable is None  # answered at last: asked again
