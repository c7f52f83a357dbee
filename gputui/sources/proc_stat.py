"""A process's CPU time, threads and resident memory from one read of /proc/PID/stat.

psutil gets the same figures from three files (stat, statm, status) and asks the system
for its CPU count on every ``cpu_percent()`` call; for every GPU process and each of its
data-loader workers, every tick, that was most of what the host side of a tick cost.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Callable, Iterable

from gputui.core.records import frozen

#: the clock ticks /proc counts CPU time and process starts in, a second
TICKS_PER_S = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
#: stat files gputui's own process keeps open at most (``StatFiles``): 8 ranks of 31
#: workers, a quarter of the usual 1,024 descriptors a process may hold (and never more)
MAX_KEPT = 256


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
    return parse_stat(read_small(f"{proc}/{pid}/stat"))


def parse_stat(line: bytes | None) -> ProcStat | None:
    """A stat line's figures; None for no line, or a garbled one."""
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


def parse_cpu(line: bytes | None) -> tuple[int, float] | None:
    """A stat line's start and CPU seconds: what a CPU share needs and no more, for the
    processes read every tick in numbers (the GPU processes' data-loader workers). The
    line is split only as far as the start."""
    if line is None:
        return None
    fields = after_command(line, 20)
    try:
        return int(fields[19]), (int(fields[11]) + int(fields[12])) / TICKS_PER_S
    except (IndexError, ValueError):
        return None


class StatFiles:
    """The stat files of the processes read every tick (the GPU processes and their
    workers), each kept open and read again from its start: one ``pread`` where an open,
    a read and a close cost twice as much, for every worker of every rank each second.

    A read answers as ``read_small`` would, whatever process the PID names now. A kept
    descriptor names the process it was opened on, not its PID: once that process has
    gone, reading it fails, and the PID is opened afresh. Only a file the kernel makes as
    it is read is kept (its size says 0, its read says more); a copy of /proc on a disk
    (tests) is opened on every read, so a file removed there reads as gone.

    ``most`` 0 keeps none: gputui inside another program's process (``gputui.watch`` in a
    training script) holds no descriptors between ticks, as the workers that process
    forks would inherit them and count them against their own open-files limit. Kept
    ones are closed by ``close``, or when the reader is collected."""

    def __init__(self, proc: str = "/proc", most: int = 0) -> None:
        self._proc = proc
        self._most = min(most, _soft_open_files() // 4)  # a quarter of what it may open
        self._kept: dict[int, int] = {}  # pid -> descriptor
        self._regular = False  # the files are on a disk: keep none
        weakref.finalize(self, _close_all, self._kept)

    def read(self, pid: int) -> bytes | None:
        fd = self._kept.get(pid)
        if fd is not None:
            try:
                return os.pread(fd, 4096, 0)
            except OSError:  # its process has gone: the PID may name another by now
                del self._kept[pid]
                _close(fd)
        path = f"{self._proc}/{pid}/stat"
        if len(self._kept) >= self._most or self._regular:
            return read_small(path)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
        kept = False
        try:
            line = os.read(fd, 4096)
            kept = os.fstat(fd).st_size == 0 and bool(line)
            self._regular = not kept
        except OSError:
            return None
        finally:  # whatever is raised: the descriptor is kept, or closed
            if kept:
                self._kept[pid] = fd
            else:
                _close(fd)
        return line

    def keep_only(self, pids: Iterable[int]) -> None:
        """Close the files of processes not in ``pids`` (gone, or no longer read)."""
        keep = set(pids)
        for pid in [p for p in self._kept if p not in keep]:
            _close(self._kept.pop(pid))

    def close(self) -> None:
        self.keep_only(())


def _soft_open_files() -> int:
    """The descriptors this process may hold (its soft RLIMIT_NOFILE, as the C library
    gives it: without loading the ``resource`` module for one number)."""
    try:
        return int(os.sysconf("SC_OPEN_MAX"))
    except (OSError, ValueError):
        return 0


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _close_all(kept: dict[int, int]) -> None:
    for fd in kept.values():
        _close(fd)
    kept.clear()


class CpuMeter:
    """CPU % of processes (100 = one core) from their CPU time between two readings.

    A process's first reading only starts its count: there is no delta to give yet, and
    a made-up 0 % would read as an idle process."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._last: dict[int, tuple[int, float, float]] = {}  # pid -> started, cpu_s, when

    def percent(self, pid: int, stat: ProcStat) -> float | None:
        return self.share(pid, stat.started, stat.cpu_s)

    def share(self, pid: int, started: int, cpu_s: float) -> float | None:
        """CPU % since the process's last reading (``percent``'s, from ``parse_cpu``)."""
        now = self._clock()
        last = self._last.get(pid)
        self._last[pid] = (started, cpu_s, now)
        if last is None or last[0] != started or now <= last[2]:
            return None  # first reading, or the PID now names another process
        return max(0.0, 100.0 * (cpu_s - last[1]) / (now - last[2]))

    def keep_only(self, pids: Iterable[int]) -> None:
        """Forget the processes not in ``pids`` (gone, or no longer on a GPU)."""
        keep = set(pids)
        for pid in [p for p in self._last if p not in keep]:
            del self._last[pid]
