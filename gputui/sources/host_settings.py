"""The host's settings that slow a training job, and a process's limits: the CPU frequency
governor, transparent huge pages, automatic NUMA balancing, the InfiniBand ports, the
open-files limit, memory in swap, and who holds a GPU's device file. Read-only sysfs and
/proc; a file that cannot be read says why (``unreadable``), never a guess."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import field
from pathlib import Path

from gputui.core.model import DeviceWaiter
from gputui.core.records import record
from gputui.sources import proc_files
from gputui.sources.proc_stat import read_small

#: open files counted a process, at most: the kernel's own ceiling (fs.nr_open by default)
MAX_OPEN_FILES = 1 << 20


@record
class Governors:
    governor: str | None = None
    count: int | None = None  # CPUs using it
    cpus: int | None = None  # CPUs with a frequency driver
    driver: str | None = None
    preference: str | None = None
    mhz: float | None = None
    max_mhz: float | None = None


@record
class ProcessLimits:
    nofile: int | None = None  # the soft limit
    open_files: int | None = None
    swapped: int | None = None  # bytes (VmSwap)
    threads: int | None = None  # of all the processes together
    unreadable: list[str] = field(default_factory=list)


def _read(path: str | Path) -> str | None:
    try:
        return proc_files.text(path).strip()
    except OSError:
        return None


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def governors(sys: Path = Path("/sys")) -> Governors:
    """The CPU frequency policies (one per group of CPUs): the governor most CPUs use, the
    driver, the energy preference (HWP), mean current and highest frequency. Empty where
    the machine has no frequency driver (many VMs)."""
    votes: Counter[str] = Counter()
    out = Governors()
    current: list[float] = []
    for policy in sorted((sys / "devices/system/cpu/cpufreq").glob("policy[0-9]*")):
        governor = _read(policy / "scaling_governor")
        cpus = len((_read(policy / "affected_cpus") or "").split()) or 1
        if governor is None:
            continue
        votes[governor] += cpus
        out.driver = out.driver or _read(policy / "scaling_driver")
        out.preference = out.preference or _read(policy / "energy_performance_preference")
        now, top = (
            _number(_read(policy / "scaling_cur_freq")),
            _number(_read(policy / "cpuinfo_max_freq")),
        )
        if now is not None:
            current += [now / 1000.0] * cpus
        if top is not None:
            out.max_mhz = max(out.max_mhz or 0.0, top / 1000.0)
    if votes:
        out.governor, out.count = votes.most_common(1)[0]
        out.cpus = sum(votes.values())
        out.mhz = sum(current) / len(current) if current else None
    return out


def selected(text: str | None) -> str | None:
    """The bracketed choice of a sysfs switch: "always [madvise] never" -> "madvise"."""
    if text is None:
        return None
    start, end = text.find("["), text.find("]")
    return text[start + 1 : end] if 0 <= start < end else (text or None)


def huge_pages(sys: Path = Path("/sys")) -> tuple[str | None, str | None]:
    """Transparent huge pages: (enabled, defrag)."""
    base = sys / "kernel/mm/transparent_hugepage"
    return selected(_read(base / "enabled")), selected(_read(base / "defrag"))


def numa_balancing(
    proc: Path = Path("/proc"), sys: Path = Path("/sys")
) -> tuple[bool | None, int | None, int | None]:
    """Automatic NUMA balancing on or off, the NUMA nodes, pages it migrated since boot."""
    switch = _number(_read(proc / "sys/kernel/numa_balancing"))
    nodes = len(list((sys / "devices/system/node").glob("node[0-9]*"))) or None
    migrated = None
    for line in (_read(proc / "vmstat") or "").splitlines():
        name, _, value = line.partition(" ")
        if name == "numa_pages_migrated":
            migrated = _number(value.strip())
    return (switch > 0 if switch is not None else None), nodes, migrated


def infiniband_ports(sys: Path = Path("/sys")) -> tuple[str, ...] | None:
    """The active InfiniBand and RoCE ports NCCL could use ("mlx5_0/1 InfiniBand"); () none,
    None where the class cannot be listed."""
    base = sys / "class/infiniband"
    try:
        devices = sorted(p.name for p in base.iterdir())
    except FileNotFoundError:
        return ()
    except OSError:
        return None
    out = []
    for device in devices:
        for port in sorted((base / device / "ports").glob("[0-9]*")):
            state = _read(port / "state") or ""
            if "ACTIVE" not in state:
                continue
            layer = _read(port / "link_layer") or "?"
            out.append(f"{device}/{port.name} {'RoCE' if layer == 'Ethernet' else layer}")
    return tuple(out)


def process_limits(pids: Iterable[int], proc: Path = Path("/proc")) -> ProcessLimits:
    """Of the processes ``pids`` (a job's processes and workers): the soft open-files limit
    and open files of the one nearest its limit; their memory in swap and their threads
    together."""
    out = ProcessLimits()
    worst = -1.0
    swapped = threads = 0
    swap_known = threads_known = False
    for pid in pids:
        base = f"{proc}/{pid}"  # joined as strings: read for every worker of every job
        limit = _nofile(f"{base}/limits")
        status = _read(f"{base}/status")
        swap = _first_number(status, "VmSwap:")
        if swap is not None:
            swapped, swap_known = swapped + swap * 1024, True
        running = _first_number(status, "Threads:")
        if running is not None:
            threads, threads_known = threads + running, True
        if limit is None:
            continue
        try:  # counted up to its limit: more is as near it as a count can say
            count = proc_files.count(f"{base}/fd", min(limit, MAX_OPEN_FILES) + 1)
        except FileNotFoundError:
            continue  # gone meanwhile
        except OSError as exc:
            if out.nofile is None or limit < out.nofile:
                out.nofile = limit
            reason = f"files: {base}/fd: {exc.strerror or type(exc).__name__}"
            if reason not in out.unreadable:
                out.unreadable.append(reason)
            continue
        share = count / limit if limit > 0 else 0.0
        if share > worst:
            worst, out.nofile, out.open_files = share, limit, count
    out.swapped = swapped if swap_known else None
    out.threads = threads if threads_known else None
    return out


def _nofile(path: str) -> int | None:
    """The soft "Max open files" of a /proc/PID/limits file; None unreadable or unlimited."""
    return _first_number(_read(path), "Max open files")


def _first_number(text: str | None, name: str) -> int | None:
    """The first figure on the line of a /proc file's ``text`` that begins with ``name``."""
    value = proc_files.line_value(text, name) if text is not None else None
    fields = value.split(None, 1) if value is not None else ()
    return int(fields[0]) if fields and fields[0].isdigit() else None


def device_waiters(
    minors: Collection[int],
    skip: Collection[int],
    proc: Path = Path("/proc"),
) -> tuple[tuple[DeviceWaiter, ...], str | None]:
    """Processes that hold /dev/nvidia<minor> open for one of ``minors`` and mapped the CUDA
    driver (libcuda), other than ``skip`` (the GPU processes NVML lists, their workers,
    gputui): on an EXCLUSIVE_PROCESS GPU, a second process that waits for it or failed to
    get it. NVML-only tools (nvidia-smi, DCGM, persistenced) do not map libcuda. With the
    reason where other users' processes could not be looked at."""
    wanted = {f"/dev/nvidia{m}": m for m in minors}
    found: list[DeviceWaiter] = []
    hidden = 0
    try:
        names = [n for n in os.listdir(proc) if n.isdigit()]
    except OSError as exc:
        return (), f"{proc}: {exc.strerror or type(exc).__name__}"
    for name in names:
        pid = int(name)
        if pid in skip:
            continue
        try:
            fds = proc_files.entries(proc / name / "fd")
        except PermissionError:
            hidden += 1
            continue
        except OSError:
            continue
        minor = _held(proc / name / "fd", fds, wanted)
        if minor is None or not _maps_libcuda(proc / name / "maps"):
            continue
        comm = read_small(f"{proc}/{name}/comm")
        label = comm.decode("utf-8", "replace").strip() if comm else None
        found.append(DeviceWaiter(pid, minor, label))
    why = f"{hidden} processes' open files not readable (not root)" if hidden else None
    return tuple(found), why


def _held(fd_dir: Path, fds: list[str], wanted: dict[str, int]) -> int | None:
    for fd in fds:
        try:
            target = os.readlink(fd_dir / fd)
        except OSError:
            continue
        if target in wanted:
            return wanted[target]
    return None


def _maps_libcuda(path: Path) -> bool:
    try:
        maps, _cut = proc_files.lines(path, proc_files.MAX_MAPS_BYTES, proc_files.MAX_MAPS_LINES)
    except OSError:
        return False
    return any("libcuda.so" in line for line in maps)
