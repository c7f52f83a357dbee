"""The app as a process on a real pseudo-terminal: signals end it cleanly, resizes do not
break it. What users hit when an SSH session drops or a scheduler kills a job."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import select
import shlex
import signal
import struct
import sys
import termios
import time

import pytest

RESTORED = (b"\x1b[?1049l", b"\x1b[?25h")  # leave the alternate screen, show the cursor


def _start(rows: int = 40, cols: int = 120) -> tuple[int, int]:
    pid, fd = pty.fork()
    if pid == 0:  # the child: gputui's demo, as a user starts it
        os.environ["TERM"] = "xterm-256color"
        os.execv(sys.executable, [sys.executable, "-m", "gputui", "--demo"])
    _resize(fd, rows, cols)
    return pid, fd


def _resize(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _read_until(fd: int, marker: bytes, seconds: float) -> bytes:
    out = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and marker not in out:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    return out


def _drain_and_wait(pid: int, fd: int, seconds: float) -> tuple[bytes, int | None, float]:
    started = time.monotonic()
    out = b""
    status: int | None = None
    while time.monotonic() - started < seconds:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            with contextlib.suppress(OSError):
                out += os.read(fd, 65536)
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(raw)
            break
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    os.close(fd)
    return out, status, time.monotonic() - started


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_ends_the_app_within_2_s_and_restores_the_terminal(signum: int) -> None:
    pid, fd = _start()
    assert b"GPUs" in _read_until(fd, b"GPUs", 20), "the app did not draw"
    os.kill(pid, signum)
    out, status, took = _drain_and_wait(pid, fd, 5)
    assert status is not None and took < 2.0, f"still running after {took:.1f} s"
    if signum != signal.SIGHUP:  # after a hang-up there is no terminal left to restore
        assert all(seq in out for seq in RESTORED)
    assert status != 0 or signum == signal.SIGINT


def test_a_resize_storm_neither_crashes_nor_stalls_the_app() -> None:
    pid, fd = _start()
    assert b"GPUs" in _read_until(fd, b"GPUs", 20)
    for i in range(200):
        _resize(fd, 20 + i % 40, 60 + (i * 7) % 140)
        os.kill(pid, signal.SIGWINCH)
        if i % 20 == 0:
            _read_until(fd, b"\x00", 0.01)  # keep the pty drained
    _resize(fd, 40, 120)
    os.kill(pid, signal.SIGWINCH)
    # Frames keep coming: the host line (CPU, load, clock) is painted anew every tick. (The
    # storm's last full frame may be long gone by now: "GPUs" shows again only with a line
    # that changes, such as the advisor's verdict.)
    assert b"CPU " in _read_until(fd, b"CPU ", 10), "no frame after the storm"
    done, _raw = os.waitpid(pid, os.WNOHANG)
    assert not done, "the app died in the storm"
    os.write(fd, b"q")
    _out, status, took = _drain_and_wait(pid, fd, 5)
    assert status == 0 and took < 2.0


def test_suspend_and_resume_ctrl_z_then_fg_keeps_the_app_running() -> None:
    """SIGTSTP (Ctrl+Z) then SIGCONT (fg): the app gives the terminal back, takes it again,
    draws and answers keys; it quits with 0 only when asked (issue 27: it died with EBADF
    and exited 0)."""
    pid, fd = _start()
    assert b"GPUs" in _read_until(fd, b"GPUs", 20), "the app did not draw"
    for _ in range(2):  # twice: the second resume must find what the first rebuilt
        os.kill(pid, signal.SIGTSTP)
        suspended = _read_until(fd, RESTORED[0], 5)
        assert RESTORED[0] in suspended, "the terminal was not given back on Ctrl+Z"
        time.sleep(0.3)
        os.kill(pid, signal.SIGCONT)
        assert b"GPUs" in _read_until(fd, b"GPUs", 10), "nothing drawn after fg"
    done, _raw = os.waitpid(pid, os.WNOHANG)
    assert not done, "the app died on resume"
    os.write(fd, b"?")  # keys still arrive: the help opens
    assert b"gputui keys" in _read_until(fd, b"gputui keys", 5)
    os.write(fd, b"\x1b")
    time.sleep(0.3)
    os.write(fd, b"q")
    out, status, _took = _drain_and_wait(pid, fd, 5)
    assert status == 0 and b"Traceback" not in out and b"Bad file descriptor" not in out


def _start_in_a_shell() -> tuple[int, int]:
    """An interactive bash on its own terminal (job control on), gputui's demo started
    from it as a user would: Ctrl+Z stops it and the shell's fg brings it back."""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ.update(TERM="xterm-256color", PS1="shell$ ", HISTFILE="/dev/null")
        os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
    _resize(fd, 40, 120)
    assert b"shell$ " in _read_until(fd, b"shell$ ", 10), "bash did not start"
    os.write(fd, f"{shlex.quote(sys.executable)} -m gputui --demo\n".encode())
    return pid, fd


def test_the_ctrl_z_key_suspends_to_the_shell_and_fg_repaints_it() -> None:
    """In raw mode Ctrl+Z arrives as a key (0x1a), not SIGTSTP: the app must suspend
    itself, give the shell the terminal, and on fg take it back and paint every line."""
    pid, fd = _start_in_a_shell()
    try:
        assert b"GPUs" in _read_until(fd, b"GPUs", 20), "the app did not draw"
        # twice: the second suspend goes through what fg rebuilt, from over the help page
        for over_help in (False, True):
            time.sleep(0.3)
            if over_help:
                os.write(fd, b"?")
                assert b"gputui keys" in _read_until(fd, b"gputui keys", 5)
            os.write(fd, b"\x1a")
            stopped = _read_until(fd, b"Stopped", 5)
            assert RESTORED[0] in stopped, "the terminal was not given back on Ctrl+Z"
            assert b"Stopped" in stopped, "the shell did not see it stop"
            if b"shell$ " not in stopped.rsplit(b"Stopped", 1)[1]:
                assert b"shell$ " in _read_until(fd, b"shell$ ", 2), "no prompt after Ctrl+Z"
            os.write(fd, b"fg\n")
            back = _read_until(fd, b"gputui keys" if over_help else b"Advisor", 10)
            back += _read_until(fd, b"\xff", 0.5)  # the rest of the frame
            text = re.sub(rb"\x1b\[[0-9;?>$]*[A-Za-z]", b"", back)  # styles and moves out
            assert b"\x1b[?1049h" in back and b"4 GPUs" in text  # the header, painted again
            # ... and the panels, or the page over them
            assert b"gputui keys" in text if over_help else b"Advisor" in text
        os.write(fd, b"\x1b")
        time.sleep(0.3)
        os.write(fd, b"q")
        assert b"shell$ " in _read_until(fd, b"shell$ ", 5), "q did not quit after fg"
        os.write(fd, b"exit\n")
        out, status, _took = _drain_and_wait(pid, fd, 5)
        assert status == 0 and b"Traceback" not in out
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def test_ctrl_z_where_no_shell_could_resume_it_leaves_the_app_running() -> None:
    """gputui as the terminal's session leader (ssh -t host gputui, exec gputui): nothing
    could fg it, so Ctrl+Z must not stop it; it says why and keeps running."""
    pid, fd = _start()
    assert b"GPUs" in _read_until(fd, b"GPUs", 20), "the app did not draw"
    time.sleep(0.3)
    os.write(fd, b"\x1a")
    said = _read_until(fd, b"Not suspended", 5)
    assert b"Not suspended" in said and RESTORED[0] not in said
    done, raw = os.waitpid(pid, os.WNOHANG | os.WUNTRACED)
    assert not done, f"stopped or ended: {raw:#x}"
    os.write(fd, b"q")
    _out, status, _took = _drain_and_wait(pid, fd, 5)
    assert status == 0
