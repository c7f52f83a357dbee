"""A process's CPU time, threads and resident memory from one read of /proc/PID/stat.

psutil gets the same figures from three files (stat, statm, status) and asks the system
for its CPU count on every ``cpu_percent()`` call; for every GPU process and each of its
data-loader workers, every tick, that was most of what the host side of a tick cost.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from gputui.core.records import frozen

#: the clock ticks /proc counts CPU time and process starts in, a second
TICKS_PER_S = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@frozen
class ProcStat:
    started: int  # clock ticks after boot: with the PID, names one process (PIDs are reused)
    cpu_s: float  # user + system time so far
    threads: int
    rss: int  # bytes


def read_small(path: str) -> bytes | None:
    """A short /proc file's bytes, or None where it cannot be read. A bare descriptor: a
    Python file object costs more than the read itself, and this runs for every process
    of the machine when the process tree is scanned."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)  # a stat line is well under this
    except OSError:
        return None
    finally:
        os.close(fd)


def read_until(path: str, mark: bytes | None = None, limit: int = 1 << 20) -> bytes | None:
    """A /proc file's bytes up to the first line starting with ``mark`` (None: to the end;
    at most about ``limit`` bytes), or None where it cannot be read: /proc/stat's CPU lines
    come first and its interrupt counts after them, hundreds of kilobytes on a large
    machine."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks: list[bytes] = []
        size = 0
        while size < limit:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if mark is not None and (
                b"\n" + mark in chunk or (size == len(chunk) and chunk.startswith(mark))
            ):
                break
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def after_command(line: bytes, fields: int = -1) -> list[bytes]:
    """A stat line's fields after the command, from the state on (the line's third field);
    ``fields``: split off only that many. "pid (comm) state ppid ...": the command may hold
    spaces and parentheses, so the fields are counted from the last ")"."""
    return line[line.rfind(b")") + 2 :].split(None, fields)


def read_stat(pid: int, proc: str = "/proc") -> ProcStat | None:
    """The process's stat line, or None where it has gone or /proc cannot say."""
    line = read_small(f"{proc}/{pid}/stat")
    if line is None:
        return None
    fields = after_command(line)
    try:
        return ProcStat(
            started=int(fields[19]),
            cpu_s=(int(fields[11]) + int(fields[12])) / TICKS_PER_S,
            threads=int(fields[17]),
            rss=int(fields[21]) * _PAGE_BYTES,
        )
    except (IndexError, ValueError):
        return None


class CpuMeter:
    """CPU % of processes (100 = one core) from their CPU time between two readings.

    A process's first reading only starts its count: there is no delta to give yet, and
    a made-up 0 % would read as an idle process."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._last: dict[int, tuple[int, float, float]] = {}  # pid -> started, cpu_s, when

    def percent(self, pid: int, stat: ProcStat) -> float | None:
        now = self._clock()
        last = self._last.get(pid)
        self._last[pid] = (stat.started, stat.cpu_s, now)
        if last is None or last[0] != stat.started or now <= last[2]:
            return None  # first reading, or the PID now names another process
        return max(0.0, 100.0 * (stat.cpu_s - last[1]) / (now - last[2]))

    def keep_only(self, pids: Iterable[int]) -> None:
        """Forget the processes not in ``pids`` (gone, or no longer on a GPU)."""
        keep = set(pids)
        for pid in [p for p in self._last if p not in keep]:
            del self._last[pid]
