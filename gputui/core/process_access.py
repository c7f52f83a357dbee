"""What the screen may ask of a local process beyond its readings: a look inside it (its
environment, its tree, the GPU devices it holds) and the one action gputui takes, a signal,
after the user confirmed it. The screen types against ``ProcessAccess``; the composition
root hands in the local implementation (``sources/process_access.py``) only where the
processes are this machine's: never for a demo, a recording or a remote node, whose PIDs
are not processes here."""

from __future__ import annotations

import enum
from typing import Protocol

from gputui.core.model_checks import clean_text_fields
from gputui.core.records import frozen


@frozen
class Relative:
    """A process's parent or child: its PID, command line and (for a child) CPU."""

    pid: int
    command: str | None = None
    cpu_percent: float | None = None

    def __post_init__(self) -> None:
        clean_text_fields(self)


@frozen
class ProcessDetails:
    """A live look inside one process, read when asked (the process page), not every tick.
    A part that could not be read is empty, with the reason in ``unreadable``."""

    pid: int
    #: every environment variable, "NAME=value", as the process started with them
    environment: tuple[str, ...] = ()
    parent: Relative | None = None
    children: tuple[Relative, ...] = ()
    threads: int | None = None
    #: the NVIDIA device files it holds open (/dev/nvidia0, /dev/nvidiactl, ...)
    gpu_devices: tuple[str, ...] = ()
    #: part -> why it could not be read ("environment": "permission denied: ...")
    unreadable: tuple[tuple[str, str], ...] = ()
    #: the process ended, or its PID now belongs to another process
    gone: bool = False

    def __post_init__(self) -> None:
        clean_text_fields(self)


class Outcome(enum.Enum):
    SENT = "sent"
    REFUSED = "refused"  # gputui would not: not the user's, gputui itself, not provable
    DENIED = "denied"  # the kernel would not (EPERM)
    GONE = "gone"  # ended, or the PID is another process now


@frozen
class SignalResult:
    outcome: Outcome
    #: one line for the user, naming the PID and the signal
    text: str


class ProcessAccess(Protocol):
    """A local process, identified by its PID and start time (a PID alone can be reused)."""

    @property
    def is_root(self) -> bool: ...

    def refusal(self, pid: int, started: float | None) -> str | None:
        """Why gputui will not signal this process (one line), or None where it may."""
        ...

    def send(self, pid: int, started: float | None, signum: int) -> SignalResult: ...

    def details(self, pid: int, started: float | None) -> ProcessDetails: ...


#: why nothing is sent under ``--readonly``, the line the user reads
READ_ONLY = "gputui runs --readonly here: it sends no signals (restart it without to send one)"


class ReadOnly:
    """``ProcessAccess`` with every signal refused (``--readonly``, for a screen others
    watch): processes are still looked into, never signalled."""

    def __init__(self, access: ProcessAccess) -> None:
        self._access = access

    @property
    def is_root(self) -> bool:
        return self._access.is_root

    def refusal(self, pid: int, started: float | None) -> str | None:
        return READ_ONLY

    def send(self, pid: int, started: float | None, signum: int) -> SignalResult:
        return SignalResult(Outcome.REFUSED, f"Not sent to PID {pid}: {READ_ONLY}")

    def details(self, pid: int, started: float | None) -> ProcessDetails:
        return self._access.details(pid, started)
