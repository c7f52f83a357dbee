"""Calls that can block in the kernel on a filesystem a job controls, run off the caller's
thread with a deadline.

``statvfs`` of a job's /dev/shm waits for whatever filesystem the job mounted there: a FUSE
mount that never answers held `doctor --config` and `record` past SIGKILL, and would
freeze the sampler's tick. Such a call runs on a daemon thread of its own; the caller
waits for it at most its deadline, and while it is still stuck the same call is not made
again (it fails at once), so stuck threads do not pile up: at most one a call, and at most
``MAX_STUCK`` in all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final, TypeVar

T = TypeVar("T")

#: how long a tick (or doctor) waits for a job's filesystem to answer
STATVFS_DEADLINE_S: Final = 0.5
#: calls left stuck at once; past it, every such call fails at once
MAX_STUCK: Final = 64

_lock = threading.Lock()
_stuck: dict[str, threading.Thread] = {}


class NoAnswer(TimeoutError):
    """The call did not return within its deadline (or an earlier one is still stuck)."""


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
    outcome: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # handed to the caller as it is
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name=f"gputui-wait {key}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        with _lock:
            _stuck[key] = thread
        raise NoAnswer(f"no answer within {seconds:g} s")
    done, value = outcome[0]
    if not done:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]
