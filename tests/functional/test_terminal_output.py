"""What gputui writes to a real terminal: the demo on a pseudo-terminal, its output read
as a terminal reads it (tests/terminal.py), after the line discipline has had it (a line
feed may become a carriage return and a line feed). Ticks written as the cells that
changed must leave the screen a full repaint draws; each tick costs a fraction of the
whole rows it changed."""

from __future__ import annotations

import os
import pty
import select
import sys
import time

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


def test_ticks_written_cell_by_cell_leave_the_screen_a_full_repaint_draws() -> None:
    pid, fd = _start()
    try:
        ticks = _read(fd, 8.0)  # started, and a few ticks drawn
        os.write(fd, b"p")  # paused: the readings stop changing
        ticks += _read(fd, 3.0, quiet=1.5)
        # Every cell drawn anew by Textual's compositor: a page over the panels (help)
        # opened and closed (read, not yet parsed: the app waits for none)
        os.write(fd, b"?")
        _read(fd, 3.0, quiet=1.0)
        os.write(fd, b"\x1b")
        repaint = b""
        deadline = time.monotonic() + 15
        while len(repaint) < 20_000 and time.monotonic() < deadline:
            repaint += _read(fd, 1.0, quiet=0.5)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)
    terminal = Terminal(COLS, ROWS)
    terminal.feed(ticks.decode())
    assert "GPUs" in terminal.plain and "Advisor" in terminal.plain
    fresh = Terminal(COLS, ROWS)
    fresh.feed(repaint.decode())
    # the page's place drawn anew (most of the screen: it covered the panels)
    assert len({y for y, _ in fresh.cells}) >= ROWS * 3 // 4, fresh.plain
    # there, below the header (whose age of the data goes on), the same screen as the
    # ticks left, cell for cell
    seen = terminal.visible()
    repainted = {key: cell for key, cell in fresh.visible().items() if key[0] > 0}
    assert {key: seen.get(key) for key in repainted} == repainted
