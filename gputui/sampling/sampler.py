"""The sampler: one source read per tick, off the caller's thread, never two at once.

A slow or hung read (a wedged driver) only delays the next tick; the UI reads
``stats`` to show how old its data is instead of freezing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from gputui.core.model import Frame
from gputui.core.records import frozen
from gputui.core.source import CatchesUp, Source


@frozen
class SamplerStats:
    reads: int
    errors: int
    last_read_s: float | None  # how long the last completed read took
    last_good: float | None  # monotonic time the last good frame arrived
    reading_since: float | None  # monotonic start of a read still in progress
    last_error: str | None


class Sampler:
    """Reads ``source`` every ``interval`` seconds. The interval is its owner's: a number,
    or a callable asked before each wait (the monitor's interval live, the replay's pace);
    ``wake`` makes a change take effect at once."""

    def __init__(
        self,
        source: Source,
        interval: float | Callable[[], float],
        on_frame: Callable[[Frame], object] | None = None,
        on_error: Callable[[BaseException], object] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        since: float | None = None,
    ) -> None:
        """``since``: the time of the last frame of a history handed in before the start
        (a backfill); a source that ``CatchesUp`` first gives the frames after it, so the
        first read follows no gap."""
        self._since = since
        self._source = source
        self._interval = interval if callable(interval) else (lambda: interval)
        self._on_frame = on_frame
        self._on_error = on_error
        self._monotonic = monotonic
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._paused = False
        self._reads = 0
        self._errors = 0
        self._last_read_s: float | None = None
        self._last_good: float | None = None
        self._reading_since: float | None = None
        self._last_error: str | None = None

    @property
    def interval_s(self) -> float:
        return self._interval()

    def connect(
        self,
        on_frame: Callable[[Frame], object],
        on_error: Callable[[BaseException], object] | None = None,
    ) -> None:
        """Where the frames go (the app connects itself before it starts the sampler)."""
        self._on_frame = on_frame
        self._on_error = on_error

    def wake(self) -> None:
        """Its interval changed: wait for the new one from now."""
        self._wake.set()

    @property
    def paused(self) -> bool:
        return self._paused

    def set_paused(self, paused: bool) -> None:
        self._paused = paused
        self._wake.set()

    @property
    def stats(self) -> SamplerStats:
        with self._lock:
            return SamplerStats(
                reads=self._reads,
                errors=self._errors,
                last_read_s=self._last_read_s,
                last_good=self._last_good,
                reading_since=self._reading_since,
                last_error=self._last_error,
            )

    def age(self) -> float | None:
        """Seconds since the last good frame, by the sampler's monotonic clock."""
        last = self.stats.last_good
        return None if last is None else self._monotonic() - last

    def read_once(self) -> Frame:
        """One timed read on the caller's thread (headless commands use this)."""
        started = self._monotonic()
        with self._lock:
            self._reading_since = started
        try:
            frame = self._source.read()
        except BaseException as exc:
            with self._lock:
                self._errors += 1
                self._last_error = f"{type(exc).__name__}: {exc}"
                self._reading_since = None
            raise
        finished = self._monotonic()
        with self._lock:
            self._reads += 1
            self._last_read_s = finished - started
            self._last_good = finished
            self._reading_since = None
            self._last_error = None
        return frame

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="gputui-sampler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> bool:
        """Stop sampling; True when no read is still running (the source may be closed)."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _catch_up(self) -> None:
        """The frames between the history handed in and the first read (the time the app
        took to start), delivered before it."""
        source, since = self._source, self._since
        if since is None or not isinstance(source, CatchesUp) or self._on_frame is None:
            return
        try:
            frames = source.catch_up(since)
        except Exception as exc:  # the live reads say it again, and go on
            if self._on_error is not None:
                self._on_error(exc)
            return
        for frame in frames:
            if self._stop.is_set():
                return
            self._on_frame(frame)

    def _run(self) -> None:
        self._catch_up()
        while not self._stop.is_set():
            started = self._monotonic()
            if not self._paused:
                try:
                    frame = self.read_once()
                except Exception as exc:
                    if self._on_error is not None:
                        self._on_error(exc)
                else:
                    if self._stop.is_set():
                        break
                    if self._on_frame is not None:
                        self._on_frame(frame)
            # Ticks keep their cadence; a read longer than the interval starts the next
            # one at once rather than piling up.
            delay = self._interval() - (self._monotonic() - started)
            self._wake.clear()
            if delay > 0:
                self._wake.wait(delay)
