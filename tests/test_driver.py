"""The quiet terminal driver: keys still arrive, Escape still times out, idle means asleep."""

from __future__ import annotations

import asyncio
import os
import selectors
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from textual import events
from textual.drivers.headless_driver import HeadlessDriver
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message

from gputui.ui.driver import QuietLinuxDriver, quiet_driver


class _FakeApp:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def _post_message(self, message: Message) -> bool:
        self.messages.append(message)
        return True

    def keys(self) -> list[str]:
        return [m.key for m in self.messages if isinstance(m, events.Key)]


@pytest.fixture
def signals() -> Iterator[None]:
    """The Linux driver installs Ctrl+Z handlers; give the test process its own back."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTSTP, signal.SIGCONT)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


async def _wait_for(condition: Any, timeout: float = 2.0) -> bool:
    for _ in range(int(timeout / 0.01)):
        if condition():
            return True
        await asyncio.sleep(0.01)
    return bool(condition())


def test_used_only_where_textual_would_use_its_linux_driver() -> None:
    assert quiet_driver(LinuxDriver) is QuietLinuxDriver
    assert quiet_driver(HeadlessDriver) is HeadlessDriver


async def test_keys_arrive_escape_times_out_and_idle_does_not_poll(
    signals: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = _FakeApp()
    driver = QuietLinuxDriver(app)
    keys_r, keys_w = os.pipe()
    driver.fileno = keys_r
    timeouts: list[float | None] = []
    select = selectors.SelectSelector.select

    def counting_select(self: selectors.SelectSelector, timeout: float | None = None) -> Any:
        timeouts.append(timeout)
        return select(self, timeout)

    monkeypatch.setattr(selectors.SelectSelector, "select", counting_select)
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    thread.start()
    try:
        os.write(keys_w, b"q")
        assert await _wait_for(lambda: app.keys() == ["q"])

        # A lone Escape may be the start of a sequence: the parser waits, then gives it up.
        os.write(keys_w, b"\x1b")
        assert await _wait_for(lambda: app.keys() == ["q", "escape"])

        timeouts.clear()
        await asyncio.sleep(0.5)  # Textual's driver would wake five times here
        assert len(timeouts) <= 1
        assert all(t is None for t in timeouts)

        driver.exit_event.set()  # what Textual does to stop the thread (quit, Ctrl+Z)
        thread.join(1.0)
        assert not thread.is_alive()
    finally:
        driver.exit_event.set()
        thread.join(1.0)
        driver.close()
        os.close(keys_r)
        os.close(keys_w)


async def test_the_thread_ends_when_its_input_closes(signals: None) -> None:
    app = _FakeApp()
    driver = QuietLinuxDriver(app)
    keys_r, keys_w = os.pipe()
    driver.fileno = keys_r
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    thread.start()
    try:
        os.close(keys_w)  # stdin was a pipe and its writer went away: no busy loop
        thread.join(1.0)
        assert not thread.is_alive()
    finally:
        driver.exit_event.set()
        thread.join(1.0)
        driver.close()
        os.close(keys_r)
