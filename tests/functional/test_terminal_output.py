"""What gputui writes to a real terminal: the demo on a pseudo-terminal, its output read
as a terminal reads it (tests/terminal.py), after the line discipline has had it (a line
feed may become a carriage return and a line feed). Ticks written as the cells that
changed must leave the screen a full repaint draws; each tick costs a fraction of the
whole rows it changed."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import sys
import time
from collections.abc import Iterator

from gputui.ui import compat
from tests.functional.test_lifecycle import _resize
from tests.terminal import Terminal

ROWS, COLS = 40, 120


def _start() -> tuple[int, int]:
    pid, fd = pty.fork()
    if pid == 0:  # the child: gputui's demo, as a user starts it, on a terminal of this size
        _resize(0, ROWS, COLS)
        # the environment given whole: the test runner may have put COLUMNS and LINES in
        # the process's own, which would win over the pty's size
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        env["TERM"] = "xterm-256color"
        os.execve(sys.executable, [sys.executable, "-m", "gputui", "--demo"], env)
    return pid, fd


def _read(fd: int, seconds: float, quiet: float = 0.0) -> bytes:
    """What the app writes in ``seconds`` (or until it is quiet for ``quiet`` seconds)."""
    out = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], quiet or 0.05)
        if not ready:
            if quiet and out:
                break
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    return out


@contextlib.contextmanager
def _demo() -> Iterator[tuple[int, int]]:
    """The demo on its pseudo-terminal (its PID and the terminal's end), killed after."""
    pid, fd = _start()
    try:
        yield pid, fd
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)


def _paused(fd: int) -> bytes:
    """What the app writes as it starts, draws a few ticks and is paused (the readings
    stop changing)."""
    shown = _read(fd, 8.0)
    os.write(fd, b"p")
    return shown + _read(fd, 3.0, quiet=1.5)


def _full_repaint(pid: int, fd: int) -> bytes:
    """Ctrl+Z, then fg: the app forgets what the terminal showed and draws every cell
    from a reset pen."""
    os.kill(pid, signal.SIGTSTP)
    _read(fd, 3.0, quiet=1.0)  # the terminal given back
    os.kill(pid, signal.SIGCONT)
    repaint = b""
    deadline = time.monotonic() + 15
    while len(repaint) < 20_000 and time.monotonic() < deadline:
        repaint += _read(fd, 1.0, quiet=0.5)
    return repaint


def _drawn_as_a_full_repaint(terminal: Terminal, repaint: bytes) -> None:
    fresh = Terminal(COLS, ROWS)
    fresh.feed(repaint.decode())
    assert len({y for y, _ in fresh.cells}) == ROWS, fresh.plain  # every line drawn
    # below the header (whose age of the data goes on), the same screen, cell for cell
    seen = terminal.visible()
    repainted = {key: cell for key, cell in fresh.visible().items() if key[0] > 0}
    assert {key: seen.get(key) for key in repainted} == repainted


def test_ticks_written_cell_by_cell_leave_the_screen_a_full_repaint_draws() -> None:
    """The ticks, then a page over the panels (help) opened and closed, all written as the
    cells that changed (closing it sends only the cells the page changed, from what the
    terminal shows): the screen they leave is the one a full repaint draws, cell for cell."""
    with _demo() as (pid, fd):
        shown = _paused(fd)
        os.write(fd, b"?")
        shown += _read(fd, 3.0, quiet=1.0)
        os.write(fd, b"\x1b")
        closed = _read(fd, 3.0, quiet=1.0)
        repaint = _full_repaint(pid, fd)
    terminal = Terminal(COLS, ROWS)
    terminal.feed(shown.decode())
    assert "gputui keys" in terminal.plain  # the help was drawn
    terminal.feed(closed.decode())
    assert "GPUs" in terminal.plain and "Advisor" in terminal.plain
    _drawn_as_a_full_repaint(terminal, repaint)
    # closing the page sent what it changed: fewer bytes than drawing every cell (at
    # 120x40, 7.6 KB against 8.4 KB; it sent 15.9 KB, all of it twice, when the rows under
    # it were written whole). Textual's own path (GPUTUI_TEXTUAL_PUBLIC=1) draws it whole.
    if not compat.PUBLIC_ONLY:
        assert len(closed) < len(repaint)


def test_after_a_resize_every_cell_is_drawn_again() -> None:
    """A terminal made smaller cuts what it showed (tmux drops the lines and columns that
    no longer fit, and does not bring them back): the rows after a resize are written
    whole, so the screen made large again is whole, cell for cell as a full repaint."""
    small_rows, small_cols = 20, 70
    with _demo() as (pid, fd):
        shown = _paused(fd)
        _resize(fd, small_rows, small_cols)
        os.kill(pid, signal.SIGWINCH)
        small = _read(fd, 3.0, quiet=1.0)
        _resize(fd, ROWS, COLS)
        os.kill(pid, signal.SIGWINCH)
        large = _read(fd, 3.0, quiet=1.0)
        repaint = _full_repaint(pid, fd)
    terminal = Terminal(COLS, ROWS)
    terminal.feed(shown.decode())
    terminal.cells = {
        k: c for k, c in terminal.cells.items() if k[0] < small_rows and k[1] < small_cols
    }
    terminal.width, terminal.height = small_cols, small_rows
    terminal.feed(small.decode())
    terminal.width, terminal.height = COLS, ROWS  # the lines and columns come back blank
    terminal.feed(large.decode())
    _drawn_as_a_full_repaint(terminal, repaint)
