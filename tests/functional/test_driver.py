"""The quiet terminal driver: keys still arrive, Escape still times out, idle means asleep."""

from __future__ import annotations

import asyncio
import contextlib
import os
import selectors
import signal
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from textual import events
from textual.drivers.headless_driver import HeadlessDriver
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message

from gputui.ui import compat
from gputui.ui.driver import QuietLinuxDriver, quiet_driver

# With GPUTUI_TEXTUAL_PUBLIC=1 the quiet driver is never used: it has no parser to run.
needs_quiet_driver = pytest.mark.skipif(
    compat.PUBLIC_ONLY, reason="GPUTUI_TEXTUAL_PUBLIC=1: Textual's own driver is used"
)


class _FakeApp:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def _post_message(self, message: Message) -> bool:
        self.messages.append(message)
        return True

    def keys(self) -> list[str]:
        return [m.key for m in self.messages if isinstance(m, events.Key)]


@dataclass
class _Running:
    app: _FakeApp
    driver: QuietLinuxDriver
    keys_w: int  # what the terminal would type
    thread: threading.Thread


@pytest.fixture
async def running() -> AsyncIterator[_Running]:
    """The driver's input thread reading a pipe instead of the terminal."""
    # The Linux driver installs Ctrl+Z handlers: give the test process its own back.
    saved = {s: signal.getsignal(s) for s in (signal.SIGTSTP, signal.SIGCONT)}
    app = _FakeApp()
    driver = QuietLinuxDriver(app)
    keys_r, keys_w = os.pipe()
    driver.fileno = keys_r
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    try:
        yield _Running(app, driver, keys_w, thread)
    finally:
        driver.exit_event.set()
        if thread.is_alive():
            thread.join(1.0)
        driver.close()
        for fd in (keys_r, keys_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        for s, handler in saved.items():
            signal.signal(s, handler)


async def _wait_for(condition: Any, timeout: float = 2.0) -> bool:
    for _ in range(int(timeout / 0.01)):
        if condition():
            return True
        await asyncio.sleep(0.01)
    return bool(condition())


def test_used_only_where_textual_would_use_its_linux_driver() -> None:
    expected = LinuxDriver if compat.PUBLIC_ONLY else QuietLinuxDriver
    assert quiet_driver(LinuxDriver) is expected
    assert quiet_driver(HeadlessDriver) is HeadlessDriver


def test_textual_keeps_its_driver_where_a_private_name_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(compat, "XTermParser", None)
    assert quiet_driver(LinuxDriver) is LinuxDriver


@needs_quiet_driver
async def test_keys_arrive_escape_times_out_and_idle_does_not_poll(
    running: _Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    timeouts: list[float | None] = []
    select = selectors.SelectSelector.select

    def counting_select(self: selectors.SelectSelector, timeout: float | None = None) -> Any:
        timeouts.append(timeout)
        return select(self, timeout)

    monkeypatch.setattr(selectors.SelectSelector, "select", counting_select)
    running.thread.start()
    os.write(running.keys_w, b"q")
    assert await _wait_for(lambda: running.app.keys() == ["q"])

    # A lone Escape may be the start of a sequence: the parser waits, then gives it up.
    os.write(running.keys_w, b"\x1b")
    assert await _wait_for(lambda: running.app.keys() == ["q", "escape"])

    timeouts.clear()
    await asyncio.sleep(0.5)  # Textual's driver would wake five times here
    assert len(timeouts) <= 1
    assert all(t is None for t in timeouts)

    running.driver.exit_event.set()  # what Textual does to stop the thread (quit, Ctrl+Z)
    running.thread.join(1.0)
    assert not running.thread.is_alive()


@needs_quiet_driver
async def test_the_thread_ends_when_its_input_closes(running: _Running) -> None:
    running.thread.start()
    os.close(running.keys_w)  # stdin was a pipe and its writer went away: no busy loop
    running.thread.join(1.0)
    assert not running.thread.is_alive()
