"""``Session``: an opened source with the advisor over it. Read a tick, get the readings
and the findings as plain records, write the run's report; the integrations are built on
it, and so is ``gputui.watch``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType

from gputui.advisor import make_monitor
from gputui.api.records import Device, Finding, Reading, Tick
from gputui.core.config import Config
from gputui.core.model import DeviceInfo, Frame, SourceInfo
from gputui.core.source import Source
from gputui.sampling.monitor import Monitor


class SourceEnded(Exception):
    """A recording was read to its end: there is no further tick."""


REPORT_FORMATS = ("html", "md")


class Session:
    """A source, opened, and the advisor over it (the whole rule catalogue, with the live
    screen's thresholds and hysteresis). Made by ``open_nvml``, ``open_demo``,
    ``open_recording`` or ``open_prometheus``; close it (or use it as a context manager).

    ``read`` and ``take`` may be called from one thread at a time; the properties may be
    read from any thread."""

    def __init__(
        self,
        source: Source,
        devices: Sequence[DeviceInfo],
        *,
        interval_s: float,
        history_s: float,
        detail: str | None = None,
        wait: Callable[[float], object] = time.sleep,
        after_read: Callable[[], object] | None = None,
        ended: type[BaseException] | None = None,
    ) -> None:
        """``wait``: how ``ticks`` waits between two reads (none for a recording or the
        demo's own clock); ``after_read``: what follows each read (the demo's clock
        stepped); ``ended``: the exception the source raises at its end."""
        self._source = source
        self._infos = tuple(devices)
        self.interval_s = interval_s
        config = Config(interval_s=interval_s, history_s=history_s)
        self._monitor: Monitor = make_monitor(
            self._infos, config, SourceInfo(source.label, source.kind, detail)
        )
        self._monitor.follow_processes = False  # no process page reads them
        self._wait = wait
        self._after_read = after_read
        self._ended = ended
        self._lock = threading.Lock()
        self._latest: Tick | None = None
        self._closed = False

    # -- what it watches ---------------------------------------------------------------
    @property
    def devices(self) -> tuple[Device, ...]:
        """The watched GPUs' facts, by NVML index."""
        return tuple(Device.of(d) for d in self._infos)

    @property
    def source(self) -> str:
        """Where the readings come from: "NVML", "SIMULATED", "REPLAY", "REMOTE"..."""
        return self._source.label

    @property
    def latest(self) -> Tick | None:
        """The last tick taken, or None before the first."""
        return self._latest

    @property
    def findings(self) -> tuple[Finding, ...]:
        """The advisor's findings as they stand, most severe first."""
        latest = self._latest
        return latest.findings if latest is not None else ()

    # -- reading -------------------------------------------------------------------------
    def read(self) -> Tick:
        """Read the source once and judge it: the tick. Raises ``SourceEnded`` past a
        recording's last tick."""
        try:
            frame = self._source.read()
        except Exception as exc:
            if self._ended is not None and isinstance(exc, self._ended):
                raise SourceEnded(str(exc)) from exc
            raise
        if self._after_read is not None:
            self._after_read()
        return self.take(frame)

    def take(self, frame: Frame) -> Tick:
        """A frame read elsewhere (the watch's sampling thread) into the history, judged."""
        with self._lock:
            findings = self._monitor.ingest(frame)
        by_index = {d.index: d for d in self._infos}
        readings = tuple(Reading.of(s, by_index.get(s.index), frame.time) for s in frame.gpus)
        tick = Tick(frame.time, readings, tuple(Finding.of(f) for f in findings))
        self._latest = tick
        return tick

    def ticks(self, count: int | None = None) -> Iterator[Tick]:
        """Tick after tick, ``interval_s`` apart on a live source (at once from a recording
        or the demo), until ``count`` ticks or the source's end."""
        taken = 0
        while count is None or taken < count:
            if taken:
                self._wait(self.interval_s)
            try:
                yield self.read()
            except SourceEnded:
                return
            taken += 1

    # -- the report ----------------------------------------------------------------------
    def report(self, path: str | Path | None = None, fmt: str = "html") -> str:
        """The run's report (``gputui report``'s page, or its Markdown with ``fmt="md"``)
        over the history the session holds (its last ``history_s``): the text, also
        written to ``path`` where one is given (atomically, mode 0600)."""
        if fmt not in REPORT_FORMATS:
            raise ValueError(f"fmt must be one of {REPORT_FORMATS}, not {fmt!r}")
        from gputui.exporters.files import write_atomic
        from gputui.exporters.report import report_text, run_of_monitor

        with self._lock:
            run = run_of_monitor(self._monitor, f"{self._source.label.lower()} watch")
            text = report_text(run, fmt)
        if path is not None:
            write_atomic(path, text)
        return text

    # -- lifetime ------------------------------------------------------------------------
    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._source.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def raw_source(self) -> Source:
        """The source as gputui reads it (the watch's sampling thread reads it)."""
        return self._source
