"""Calls with a deadline (gputui/sources/deadline.py): answered on a worker that serves
the next call too; a call that does not answer in time leaves its worker to it, and the
same call fails at once until it has answered."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time

import pytest

from gputui.sources import deadline
from gputui.sources.deadline import NoAnswer, within


def test_a_call_answers_with_its_value_or_its_exception() -> None:
    assert within("a", lambda: 42, 1.0) == 42
    with pytest.raises(FileNotFoundError, match="gone"):
        within("a", lambda: (_ for _ in ()).throw(FileNotFoundError("gone")), 1.0)


def test_calls_in_turn_are_served_by_one_worker() -> None:
    threads = {within("k", threading.current_thread, 1.0) for _ in range(50)}
    assert len(threads) == 1  # not a thread started for each call
    assert threading.current_thread() not in threads  # and never on the caller's own


def test_a_stuck_call_fails_at_once_until_it_answers_and_others_go_on() -> None:
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(NoAnswer, match=r"no answer within 0\.2 s"):
        within("stuck", lambda: release.wait(30), 0.2)
    assert time.monotonic() - started < 5
    with pytest.raises(NoAnswer, match="still no answer since an earlier call"):
        within("stuck", lambda: 1, 1.0)  # not made again: no second thread stuck
    assert within("other", lambda: 2, 1.0) == 2  # another worker serves the rest
    stuck = deadline._stuck["stuck"]
    release.set()
    stuck.join(5)
    assert not stuck.is_alive()  # its worker ends once its call returns
    assert within("stuck", lambda: 3, 1.0) == 3


def test_a_call_that_answers_as_it_is_given_up_leaves_no_worker_waiting() -> None:
    """Given up, the worker ends after its call; taken, it serves on: decided under one
    lock, whichever comes first, so no worker is ever left waiting that none will call."""
    for i in range(40):
        pause = 0.001 * (i % 6)
        with contextlib.suppress(NoAnswer):
            within(f"race {i}", functools.partial(time.sleep, pause), 0.003)
    time.sleep(0.2)  # every call has returned by now
    waiting = {t for t in threading.enumerate() if t.name.startswith("gputui-wait")}
    idle = {worker.thread for worker in deadline._idle}
    assert waiting <= idle and len(idle) <= deadline.MAX_IDLE


def test_stuck_workers_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deadline, "MAX_STUCK", 2)
    monkeypatch.setattr(deadline, "_stuck", {})
    release = threading.Event()
    try:
        for key in ("x", "y"):
            with pytest.raises(NoAnswer):
                within(key, lambda: release.wait(30), 0.05)
        with pytest.raises(NoAnswer, match="2 earlier calls still without an answer"):
            within("z", lambda: 1, 1.0)
    finally:
        release.set()


def test_a_forked_child_starts_its_own_worker() -> None:
    """The parent's worker does not exist in a child (threads do not survive a fork): a
    child left with it would wait on a queue nobody reads (doctor reading a job as nobody
    forks to drop its rights)."""
    assert within("before", lambda: 1, 1.0) == 1  # the parent has a worker waiting
    child = os.fork()
    if child == 0:
        try:
            os._exit(0 if within("in the child", lambda: 7, 1.0) == 7 else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
