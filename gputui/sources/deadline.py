"""Calls that can block in the kernel on a filesystem a job controls, run off the caller's
thread with a deadline.

``statvfs`` of a job's /dev/shm waits for whatever filesystem the job mounted there: a FUSE
mount that never answers held `doctor --config` and `record` past SIGKILL, and would
freeze the sampler's tick. Such a call runs on a worker thread; the caller waits for it at
most its deadline, and while it is still stuck the same call is not made again (it fails
at once), so stuck threads do not pile up: at most one a call, and at most ``MAX_STUCK``
in all. A worker whose call answered in time serves the next call: a thread started for
every call (each job's /dev/shm every 10 s) cost more than the call itself.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

T = TypeVar("T")

#: how long a tick (or doctor) waits for a job's filesystem to answer
STATVFS_DEADLINE_S: Final = 0.5
#: calls left stuck at once; past it, every such call fails at once
MAX_STUCK: Final = 64
#: workers kept waiting for the next call (callers on several threads at once each use one)
MAX_IDLE: Final = 2

_lock = threading.Lock()
_stuck: dict[str, threading.Thread] = {}
_idle: list[_Worker] = []


class NoAnswer(TimeoutError):
    """The call did not return within its deadline (or an earlier one is still stuck)."""


class _Call:
    """One call handed to a worker, and what came of it. ``answered`` and ``given_up``
    are set under the call's lock, so that a call that answers as its caller gives up is
    either taken (the worker serves on) or left (the worker ends), never both."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.call = call
        self.lock = threading.Lock()
        self.answered = threading.Event()
        self.given_up = False
        self.value: object = None
        self.raised: BaseException | None = None


class _Worker:
    """A daemon thread that runs the calls put to it, one at a time, until one of them is
    given up on (it ends after that call returns, if it ever does)."""

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name="gputui-wait", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while (job := self.calls.get()) is not None:
            try:
                value, raised = job.call(), None
            except BaseException as exc:  # handed to the caller as it is
                value, raised = None, exc
            with job.lock:
                if job.given_up:
                    return  # its caller went on without it: this thread is done
                job.value, job.raised = value, raised
                job.answered.set()
            del job, value, raised  # nothing of a call kept while waiting for the next


def _forget_workers() -> None:
    """A forked child has none of its parent's threads: their workers and stuck calls are
    not its own, and a lock held by one of them at the fork would never be let go."""
    global _lock
    _lock = threading.Lock()
    _idle.clear()
    _stuck.clear()


os.register_at_fork(after_in_child=_forget_workers)


def within(key: str, call: Callable[[], T], seconds: float) -> T:
    """``call()``'s result (or its exception) if it returns within ``seconds``; else
    ``NoAnswer``, at once where the call of this ``key`` is still stuck from before."""
    with _lock:
        for name in [k for k, thread in _stuck.items() if not thread.is_alive()]:
            del _stuck[name]  # answered at last
        if key in _stuck:
            raise NoAnswer(f"still no answer since an earlier call ({_stuck[key].name})")
        if len(_stuck) >= MAX_STUCK:
            raise NoAnswer(f"{len(_stuck)} earlier calls still without an answer")
        worker = _idle.pop() if _idle else None
    if worker is None:
        worker = _Worker()
    worker.thread.name = f"gputui-wait {key}"  # what a stuck one is said to wait for
    job = _Call(call)
    worker.calls.put(job)
    job.answered.wait(seconds)
    with job.lock:
        if not job.answered.is_set():
            job.given_up = True
    if job.given_up:
        with _lock:
            _stuck[key] = worker.thread
        raise NoAnswer(f"no answer within {seconds:g} s")
    with _lock:
        if len(_idle) < MAX_IDLE:
            _idle.append(worker)
            worker = None
    if worker is not None:
        worker.calls.put(None)  # enough are waiting already
    if job.raised is not None:
        raise job.raised
    return job.value  # type: ignore[return-value]
