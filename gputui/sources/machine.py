"""The machine's own readings, from /proc as psutil reads them: each CPU's times, memory,
swap, the disks' reads, the load and when it booted; psutil only where /proc cannot say
(another system, or a /proc without the file), so that a live screen never loads it (most
of a megabyte and ten milliseconds of start-up; its per-CPU times are a tuple object per
CPU a tick).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final

from gputui.sources.proc_stat import TICKS_PER_S, read_small, read_until


def loadavg(path: str = "/proc/loadavg") -> tuple[tuple[float, float, float], int | None]:
    """The load averages and the threads ready to run now, this reader left out: one read
    of /proc/loadavg ("0.61 0.52 0.48 3/912 4242"); the system's call where it has none."""
    text = read_small(path)
    if text is not None:
        fields = text.split()
        try:
            running = int(fields[3].split(b"/")[0])
            return (float(fields[0]), float(fields[1]), float(fields[2])), max(0, running - 1)
        except (IndexError, ValueError):
            pass
    try:
        return os.getloadavg(), None
    except OSError:
        return (float("nan"),) * 3, None


def memory(meminfo: str = "/proc/meminfo") -> tuple[int, int]:
    """Total and available memory in bytes: the head of /proc/meminfo, where psutil parses
    all of it for a dozen figures; psutil where the kernel does not say (no MemAvailable
    before Linux 3.14, or no /proc)."""
    head = read_small(meminfo)
    if head is not None:
        found = _kilobytes(head.splitlines()[:8], (b"MemTotal", b"MemAvailable"))
        if found is not None:
            return found[b"MemTotal"], found[b"MemAvailable"]
    import psutil

    vm = psutil.virtual_memory()
    return int(vm.total), int(vm.available)


# Each CPU's busy, total and I/O-wait seconds (None where the system does not count it).
# psutil's cpu_percent(percpu=True) and cpu_times_percent() read /proc/stat once each.
CpuTime = tuple[float, float, float | None]


def cpu_times(proc: str = "/proc") -> list[CpuTime]:
    """Each CPU's times from its line of /proc/stat ("cpu3 user nice system idle iowait irq
    softirq steal guest guest_nice", in clock ticks); psutil's where /proc has none."""
    text = read_until(f"{proc}/stat", b"intr")
    out: list[CpuTime] = []
    for line in text.split(b"\n") if text is not None else ():
        if not line.startswith(b"cpu"):
            if out:
                break  # the CPUs' lines come together, first
            continue
        if not line[3:4].isdigit():
            continue  # all CPUs together
        try:
            ticks = [int(value) for value in line.split()[1:9]]
        except ValueError:
            continue
        if len(ticks) < 4:
            continue
        # guest time is counted in user time too: the first eight fields are all of it
        total = sum(ticks) / TICKS_PER_S
        iowait = ticks[4] / TICKS_PER_S if len(ticks) > 4 else None
        out.append((total - ticks[3] / TICKS_PER_S - (iowait or 0.0), total, iowait))
    return out or _psutil_cpu_times()


def _psutil_cpu_times() -> list[CpuTime]:
    import psutil

    out = []
    for t in psutil.cpu_times(percpu=True):
        # guest time is counted in user time too (Linux): psutil leaves it out the same way
        total = sum(t) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)
        iowait: float | None = getattr(t, "iowait", None)
        out.append((total - t.idle - (iowait or 0.0), total, iowait))
    return out


def _kilobytes(lines: Sequence[bytes], names: tuple[bytes, ...]) -> dict[bytes, int] | None:
    """Figures of /proc/meminfo's ``lines`` in bytes ("SwapTotal:  8388604 kB"), all of
    ``names``, or None where the lines do not give them all."""
    found: dict[bytes, int] = {}
    for line in lines:
        name, _, rest = line.partition(b":")
        if name in names and rest.strip().endswith(b"kB"):
            found[name] = int(rest.split()[0]) * 1024
    return found if len(found) == len(names) else None


def swap(meminfo: str = "/proc/meminfo") -> tuple[int, int]:
    """Swap's size and what of it is used, in bytes (psutil's where /proc has none)."""
    text = read_until(meminfo)
    found = _kilobytes(text.splitlines(), (b"SwapTotal", b"SwapFree")) if text else None
    if found is not None:
        return found[b"SwapTotal"], found[b"SwapTotal"] - found[b"SwapFree"]
    import psutil

    swap = psutil.swap_memory()
    return int(swap.total), int(swap.used)


#: the unit of /proc/diskstats' sector counts, whatever the disk's own sectors are
SECTOR_BYTES: Final = 512


def disk_read_bytes(diskstats: str = "/proc/diskstats", block: str = "/sys/block") -> int | None:
    """The bytes read from the disks so far: every whole device's (those in /sys/block,
    as psutil counts them; a partition's reads are its disk's too); psutil's where /proc
    has none, None where neither can say."""
    text = read_until(diskstats)
    try:
        devices = set(os.listdir(block))
    except OSError:
        devices = set()
    if text is None or not devices:
        return _psutil_disk_read_bytes()
    read = 0
    for line in text.splitlines():
        fields = line.split()
        # "major minor name reads merged sectors ...": 14 fields, more on newer kernels
        if len(fields) < 14:
            continue
        name = fields[2].decode("utf-8", "replace").replace("/", "!")
        if name in devices and fields[5].isdigit():
            read += int(fields[5]) * SECTOR_BYTES
    return read


def _psutil_disk_read_bytes() -> int | None:
    import psutil

    try:
        counters = psutil.disk_io_counters()
    except (OSError, RuntimeError):
        return None
    return None if counters is None else int(counters.read_bytes)


def cpu_shares(
    before: Sequence[CpuTime], after: Sequence[CpuTime]
) -> tuple[tuple[float, ...], float | None]:
    """Each CPU's busy % between two readings, and the % of all CPU time spent waiting
    for I/O."""
    shares = []
    waited = elapsed = 0.0
    counted = bool(after)
    for (busy0, total0, io0), (busy1, total1, io1) in zip(before, after, strict=False):
        spent = total1 - total0
        shares.append(min(100.0, max(0.0, 100.0 * (busy1 - busy0) / spent)) if spent > 0 else 0.0)
        if io0 is None or io1 is None:
            counted = False
        else:
            waited += max(0.0, io1 - io0)
        elapsed += max(0.0, spent)
    iowait = 100.0 * waited / elapsed if counted and elapsed > 0 else None
    return tuple(shares), iowait


def boot_time(proc: str = "/proc") -> float | None:
    """When the host booted (seconds since the epoch: /proc/stat's "btime"), or None where
    neither /proc nor psutil can say."""
    text = read_until(f"{proc}/stat", b"btime")
    boot: float | None = None
    for line in text.splitlines() if text is not None else ():
        if line.startswith(b"btime ") and line[6:].strip().isdigit():
            boot = float(line[6:].strip())
    if boot is None:
        import psutil

        try:
            boot = float(psutil.boot_time())
        except (psutil.Error, OSError, RuntimeError, ValueError):
            return None
    return boot if boot > 0 else None
