"""This machine's processes, looked into and signalled: the one action gputui takes.

A PID alone is not a process (PIDs are reused), so every call names the process by its PID
and the start time the readings gave, and checks both before it reads or sends anything.
Whom a user may signal follows the kernel's rule (the sender's real or effective user is
the target's real or saved one), checked here first so that a refusal is a plain line
rather than an error; root may signal anyone. gputui itself is never a target.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from gputui.core.process_access import Outcome, ProcessDetails, Relative, SignalResult
from gputui.sources import proc_files
from gputui.sources.proc_files import MAX_DESCRIPTORS
from gputui.sources.proc_stat import CpuMeter, read_stat

if TYPE_CHECKING:
    import psutil

# A process page shows this many children (a data loader has a few dozen at most).
MAX_CHILDREN = 64
# Environment and descriptor tables can be large; the page needs what a person reads.
MAX_ENVIRONMENT = 512
# create_time is the boot time plus the start in clock ticks: exact for one process
START_TOLERANCE_S = 0.05


@contextlib.contextmanager
def _pinned(pid: int | None) -> Iterator[int | None]:
    """A pidfd of ``pid`` (None where there is no such call, or no process), closed after."""
    try:
        fd = os.pidfd_open(pid) if pid is not None and hasattr(os, "pidfd_open") else None
    except OSError:
        fd = None
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class LocalProcesses:
    """``ProcessAccess`` on this machine. ``kill`` and the user ids are injectable so the
    refusals can be tested without being another user; without ``kill`` a signal goes
    through a pidfd opened before the checks (``_pinned``): the process checked is the one
    signalled, even where its PID is taken in the moment between."""

    def __init__(
        self,
        *,
        kill: Callable[[int, int], None] | None = None,
        ids: Callable[[], tuple[int, int]] = lambda: (os.getuid(), os.geteuid()),
        own_pid: int | None = None,
        clock: Callable[[], float] | None = None,
        proc: Path = Path("/proc"),
    ) -> None:
        self._kill = kill
        self._ids = ids
        self._own_pid = os.getpid() if own_pid is None else own_pid
        self._proc = proc
        self._children_cpu = CpuMeter(clock or time.monotonic)

    @property
    def is_root(self) -> bool:
        return self._ids()[1] == 0

    def _process(self, pid: int, started: float | None) -> psutil.Process | None:
        """The process if it is still the one the readings showed, else None."""
        import psutil

        if started is None:
            return None
        try:
            process = psutil.Process(pid)
            if abs(process.create_time() - started) > START_TOLERANCE_S:
                return None
        except psutil.Error:
            return None
        return process

    def refusal(self, pid: int, started: float | None) -> str | None:
        import psutil

        if pid == self._own_pid:
            return f"PID {pid} is gputui itself"
        if pid <= 1:
            return f"PID {pid} is not a process gputui signals"
        if started is None:
            return f"PID {pid}: its start is unknown, so it may not be the process shown"
        process = self._process(pid, started)
        if process is None:
            return f"PID {pid} has ended (or is another process now)"
        if self.is_root:
            return None
        try:
            target = process.uids()
        except psutil.Error as exc:
            return f"PID {pid}: its owner cannot be read ({type(exc).__name__})"
        real, effective = self._ids()
        if {real, effective} & {target.real, target.saved}:
            return None
        owner = _user(process)
        return f"PID {pid} belongs to {owner}: only its owner or root may signal it"

    def send(self, pid: int, started: float | None, signum: int) -> SignalResult:
        with _pinned(pid if self._kill is None else None) as pinned:
            return self._send(pid, started, signum, pinned)

    def _send(
        self, pid: int, started: float | None, signum: int, pinned: int | None
    ) -> SignalResult:
        """The checks, then the signal: through ``pinned`` (a pidfd opened before the
        checks, so the process checked is the one signalled even if its PID is taken
        between) where there is one."""
        name = signal_name(signum)
        why = self.refusal(pid, started)
        if why is not None:
            gone = "has ended" in why
            return SignalResult(Outcome.GONE if gone else Outcome.REFUSED, f"Not sent: {why}")
        try:
            if self._kill is not None:
                self._kill(pid, signum)
            elif pinned is not None:
                signal.pidfd_send_signal(pinned, signum)
            else:
                os.kill(pid, signum)
        except ProcessLookupError:
            return SignalResult(Outcome.GONE, f"Not sent: PID {pid} has ended")
        except PermissionError as exc:
            reason = exc.strerror or "operation not permitted"
            return SignalResult(Outcome.DENIED, f"The kernel refused {name} to PID {pid}: {reason}")
        except OSError as exc:
            reason = exc.strerror or str(exc)
            return SignalResult(Outcome.DENIED, f"{name} to PID {pid} failed: {reason}")
        return SignalResult(Outcome.SENT, f"{name} sent to PID {pid}")

    def details(self, pid: int, started: float | None) -> ProcessDetails:
        process = self._process(pid, started)
        if process is None:
            return ProcessDetails(pid, gone=True)
        unreadable: list[tuple[str, str]] = []
        environment = self._environment(process, unreadable)
        parent, children, threads = self._tree(process, unreadable)
        devices = self._gpu_devices(pid, unreadable)
        return ProcessDetails(
            pid,
            environment=environment,
            parent=parent,
            children=children,
            threads=threads,
            gpu_devices=devices,
            unreadable=tuple(unreadable),
        )

    def _environment(
        self, process: psutil.Process, unreadable: list[tuple[str, str]]
    ) -> tuple[str, ...]:
        try:
            environ = dict(proc_files.environment(process.pid, str(self._proc)))
        except PermissionError:
            unreadable.append(("environment", _denied(process, "its environment")))
            return ()
        except OSError as exc:
            unreadable.append(("environment", exc.strerror or type(exc).__name__))
            return ()
        pairs = [f"{k}={v}" for k, v in sorted(environ.items())[:MAX_ENVIRONMENT]]
        return tuple(_printable(p) for p in pairs)

    def _tree(
        self, process: psutil.Process, unreadable: list[tuple[str, str]]
    ) -> tuple[Relative | None, tuple[Relative, ...], int | None]:
        import psutil

        parent: Relative | None = None
        try:
            up = process.parent()
            if up is not None:
                parent = Relative(up.pid, _command(up))
        except psutil.Error:
            parent = None
        try:
            below = process.children()[:MAX_CHILDREN]
        except psutil.Error as exc:
            unreadable.append(("children", type(exc).__name__))
            below = []
        children = []
        for child in below:
            stat = read_stat(child.pid, str(self._proc))
            cpu = self._children_cpu.percent(child.pid, stat) if stat is not None else None
            children.append(Relative(child.pid, _command(child), cpu))
        self._children_cpu.keep_only(c.pid for c in children)
        stat = read_stat(process.pid, str(self._proc))
        return parent, tuple(children), stat.threads if stat is not None else None

    def _gpu_devices(self, pid: int, unreadable: list[tuple[str, str]]) -> tuple[str, ...]:
        folder = self._proc / str(pid) / "fd"
        try:
            names = proc_files.entries(folder, MAX_DESCRIPTORS)
        except PermissionError:
            unreadable.append(("GPU devices", "permission denied (another user's process)"))
            return ()
        except OSError as exc:
            unreadable.append(("GPU devices", exc.strerror or type(exc).__name__))
            return ()
        found: set[str] = set()
        for name in names:
            try:
                target = os.readlink(folder / name)
            except OSError:
                continue
            if target.startswith("/dev/nvidia"):
                found.add(target)
        return tuple(sorted(found, key=_device_order))


def _device_order(path: str) -> tuple[int, int, str]:
    """/dev/nvidia0 … /dev/nvidia10 by number, then nvidiactl, nvidia-uvm and the rest."""
    tail = path.removeprefix("/dev/nvidia")
    return (0, int(tail), "") if tail.isdigit() else (1, 0, tail)


def _command(process: psutil.Process) -> str | None:
    import psutil

    try:
        parts = proc_files.arguments(process.pid)
        return _printable(proc_files.command_line(parts or ())) or process.name()
    except psutil.Error:
        return None


def _user(process: psutil.Process) -> str:
    import psutil

    try:
        return process.username()
    except (psutil.Error, KeyError):
        return "another user"


def _denied(process: psutil.Process, what: str) -> str:
    return f"only {_user(process)} or root may read {what}"


def _printable(text: str) -> str:
    """Bytes the kernel holds as they are: psutil keeps undecodable ones as surrogates."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
