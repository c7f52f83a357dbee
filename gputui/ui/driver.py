"""Textual's terminal driver, minus its ten idle wake-ups a second.

Textual's Linux driver reads keys on a thread that polls ``select`` every 0.1 s so its
parser can time out a lone Escape. That poll is 0.2 % of a core on its own, a third of
what gputui may spend with eight GPUs. This driver blocks until a key arrives, polls only
while the parser waits for the rest of an escape sequence, and is woken through a pipe
when Textual stops the input thread (quit, Ctrl+Z).

It leans on internals of Textual (the xterm parser, its pending timeout, the input loop),
all reached through ``compat``. Where one is missing, or with ``GPUTUI_TEXTUAL_PUBLIC=1``,
``quiet_driver`` keeps Textual's own driver: slower, never broken.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import selectors
import threading
from codecs import getincrementaldecoder
from typing import Any

from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

from gputui.ui import compat

ESCAPE_POLL_S = 0.1  # Textual's own poll, while the parser waits for the rest of a sequence


class _WakingEvent(threading.Event):
    """An Event whose ``set`` also wakes a thread blocked in ``select``."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self._wake_fd: int | None = wake_fd

    def disarm(self) -> None:
        """The pipe is closing: its number may soon belong to another file."""
        self._wake_fd = None

    def set(self) -> None:
        super().set()
        if self._wake_fd is not None:
            with contextlib.suppress(OSError):  # a full pipe is already a wake-up
                os.write(self._wake_fd, b"\0")


class QuietLinuxDriver(compat.SignalsToHooks, LinuxDriver):
    """The wake-up pipe lives as long as application mode: made when it starts, closed
    with the driver. Ctrl+Z closes the driver (Textual's suspend) and fg starts it again,
    so each start makes its own pipe rather than reading one closed at the suspend.

    Ctrl+Z and fg are handled on the event loop, not in the signal handler. Textual
    suspends inside the handler, and Python runs a handler between two bytecodes of
    whatever the main thread was doing: in the middle of writing a frame, that is
    ``Queue.put`` holding the writer queue's lock, and the suspend's own writes then wait
    for that lock forever (the app hangs and the terminal is never given back; seen on a
    loaded machine, where a frame's write takes longer)."""

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._pipe: tuple[int, int] | None = None
        self._waking: _WakingEvent | None = None
        self._signal_loop: asyncio.AbstractEventLoop | None = None
        self._suspended = False  # Ctrl+Z stopped it; fg (SIGCONT) resumes only then

    def stop_signalled(self) -> None:
        self._on_loop(self._suspend)

    def continue_signalled(self) -> None:
        self._on_loop(self._resume)

    def _suspend(self) -> None:
        self._suspended = True
        self.textual_stop()

    def _resume(self) -> None:
        # Only after a suspend: a hangup (SSH dropped, tmux kill-session) sends SIGCONT with
        # SIGHUP, and resuming then started a second writer thread on the closed terminal;
        # it died at its first write, its queue filled, and the shutdown's writes waited
        # on it forever (1 start in 15 killed at its first frame was left running).
        if self._suspended:
            self._suspended = False
            self.textual_continue()

    def _on_loop(self, handle: Any) -> None:
        """``handle`` as soon as the signal handler has returned and the main thread holds
        no lock; inline (Textual's way) before application mode has started a loop."""
        loop = self._signal_loop
        if loop is None or loop.is_closed():
            handle()
            return
        loop.call_soon_threadsafe(handle)

    def _open_pipe(self) -> None:
        if self._pipe is not None:
            return
        read, write = os.pipe()
        os.set_blocking(read, False)
        os.set_blocking(write, False)
        self._pipe = (read, write)
        self._waking = self.exit_event = _WakingEvent(write)

    def start_application_mode(self) -> None:
        with contextlib.suppress(RuntimeError):  # Textual starts it on its loop
            self._signal_loop = asyncio.get_running_loop()
        self._open_pipe()
        super().start_application_mode()  # type: ignore[no-untyped-call]

    def close(self) -> None:
        super().close()
        if self._waking is not None:
            self._waking.disarm()
        if self._pipe is not None:
            for fd in self._pipe:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._pipe = None

    def run_input_thread(self) -> None:
        """Textual's loop, with a blocking select while no escape sequence is pending."""
        self._open_pipe()  # started on its own (tests): the pipe it wakes on
        assert self._pipe is not None
        wake_r = self._pipe[0]
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        selector.register(wake_r, selectors.EVENT_READ)
        parser_class = compat.XTermParser
        if parser_class is None:  # quiet_driver never picks this driver then
            raise RuntimeError("the quiet driver needs Textual's XTermParser")
        parser = parser_class(compat.driver_debug(self))
        decode = getincrementaldecoder("utf-8")().decode

        def process(events: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> bool:
            """Feed what arrived to the parser; False when the input has ended."""
            for key, _mask in events:
                if key.fd == wake_r:
                    with contextlib.suppress(OSError):
                        os.read(wake_r, 64)
                    continue
                data = decode(os.read(self.fileno, 4096), final=final)
                if not data:
                    return False  # stdin was a pipe and it closed
                for event in parser.feed(data):
                    self.process_message(event)
            for event in parser.tick():
                self.process_message(event)
            return True

        try:
            while not self.exit_event.is_set():
                pending = compat.escape_pending(parser)
                if not process(selector.select(ESCAPE_POLL_S if pending else None)):
                    break
            selector.unregister(self.fileno)
            process(selector.select(ESCAPE_POLL_S), final=True)
        finally:
            selector.close()
            with contextlib.suppress(Exception):
                for _event in parser.feed(""):
                    pass


def _parent(pid: int) -> int | None:
    """The parent of ``pid`` (from /proc for another process's), None where unknown."""
    if pid == os.getpid():
        return os.getppid()
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def job_control() -> bool:
    """Whether a shell can resume this process after it stops (``fg``): some process in
    its group, found up the line of its ancestors, has a parent in another group of the
    same session (POSIX: the group is not orphaned). Where none has (a session leader,
    ``bash -c`` with no job control, Windows), a Ctrl+Z would stop it for good."""
    if not hasattr(os, "getpgrp"):
        return False
    try:
        group, session = os.getpgrp(), os.getsid(0)
        pid: int | None = os.getpid()
        for _ in range(64):  # a line of ancestors in one group is never this long
            parent = _parent(pid) if pid is not None else None
            if parent is None or parent <= 0:
                return False
            if os.getpgid(parent) != group:
                return os.getsid(parent) == session
            pid = parent
    except OSError:  # a parent gone or out of reach: no one known to resume it
        return False
    return False


def quiet_driver(stock: type[Driver]) -> type[Driver]:
    """The quiet driver where Textual would use its plain Linux one, else ``stock``."""
    if stock is not LinuxDriver or not compat.quiet_input_supported():
        return stock
    return QuietLinuxDriver
