"""``gputui.watch()``: the advisor beside a training loop's own steps.

A background thread reads the GPUs (NVML: no CUDA context, no GPU memory, no collective)
and the advisor judges them; the loop calls ``step()`` at the end of each step, which only
notes the time. Every ``log_every`` steps (or when asked, ``log()``) the watch sums up the
readings since the last log, the findings, and the step line: which steps were slow and
which cause was active on which GPU while they were. At the end, the run's report.

    with gputui.watch(report="runs/gputui.html", on_log=print_log) as w:
        for batch in loader:
            train(batch)
            w.step()
"""

from __future__ import annotations

import logging
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType

from gputui.api import metrics
from gputui.api.gpus import Gpus, NoSuchGpu
from gputui.api.metrics import Log
from gputui.api.records import Finding, Tick
from gputui.api.session import Session
from gputui.api.steps import Baseline, Key, StepLine, Timeline, attribute, clock_causes
from gputui.core.config import DEFAULT_HISTORY_S, DEFAULT_INTERVAL_S
from gputui.core.model import Frame
from gputui.core.sanitize import clean
from gputui.core.source import SourceUnavailable
from gputui.sampling.sampler import Sampler

LOG = logging.getLogger("gputui")
#: ticks a watch keeps for its logs and step lines (the report reads the session's history)
KEEP_TICKS = 4096


class Watch:
    """GPUs read on a background thread, judged, and summed up beside the job's steps.
    ``step``, ``log`` and ``stop`` belong to the loop's thread."""

    def __init__(
        self,
        opener: Callable[[], Session | None],
        *,
        clock: Callable[[], float] = time.time,
        sample_every_s: float = DEFAULT_INTERVAL_S,
        log_every: int | None = None,
        on_log: Callable[[Log], object] | None = None,
        report: str | Path | None = None,
    ) -> None:
        """``opener``: the session to watch (None: this process watches no GPU, as a rank
        that leaves the node to its first rank); ``clock``: the one the session's source
        reads (the steps are timed on it too); ``sample_every_s``: the real seconds between
        two reads; ``on_log`` gets a ``Log`` every ``log_every`` steps; ``report``: where
        the run's report is written when the watch stops."""
        self._opener = opener
        self._clock = clock
        self._every = sample_every_s
        self.log_every = log_every
        self.on_log = on_log
        self.report_path = None if report is None else Path(report)
        self.session: Session | None = None
        #: why no GPU is watched (no driver, no GPU of this rank's), or None
        self.unavailable: str | None = None
        self._sampler: Sampler | None = None
        self._lock = threading.Lock()
        self._ticks: deque[Tick] = deque(maxlen=KEEP_TICKS)
        self._timeline = Timeline(KEEP_TICKS)
        self._baseline = Baseline()
        self._ends: array[float] = array("d")
        self._last_end: float | None = None
        self._count = 0
        self._logged_at = -float("inf")
        self._shown: tuple[Finding, ...] = ()
        self._told: set[tuple[str, int | None]] = set()
        self._said_unavailable = False
        self._errors = 0

    # -- lifetime ------------------------------------------------------------------------
    def start(self) -> Watch:
        """Open the source and start reading it; a source that cannot open is said once
        (``unavailable``) and the steps are still timed."""
        if self._last_end is not None:
            return self
        try:
            self.session = self._opener()
        except (SourceUnavailable, NoSuchGpu, OSError) as exc:
            self.unavailable = clean(str(exc))
            LOG.warning("gputui watches no GPU: %s", self.unavailable)
        if self.session is not None:
            source = self.session.raw_source
            self._sampler = Sampler(source, self._every, self._on_frame, self._on_error)
            self._sampler.start()
        self._last_end = self._clock()
        return self

    def stop(self) -> Path | None:
        """Stop reading, write the report (where asked and something was read), close the
        source: the report's path, or None."""
        sampler, self._sampler = self._sampler, None
        stopped = sampler.stop() if sampler is not None else True
        session, self.session = self.session, None
        if session is None:
            return None
        written: Path | None = None
        try:
            if self.report_path is not None and session.latest is not None:
                self.report_path.parent.mkdir(parents=True, exist_ok=True)
                session.report(self.report_path)
                written = self.report_path
        finally:
            if stopped:  # never close NVML under a read still running
                session.close()
        return written

    def __enter__(self) -> Watch:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    # -- the sampling thread -------------------------------------------------------------
    def _on_frame(self, frame: Frame) -> None:
        session = self.session
        if session is None:
            return
        tick = session.take(frame)
        causes: set[Key] = set()
        for reading in tick.readings:
            causes |= clock_causes(reading.gpu, reading.reasons)
        since = {(f.rule, f.gpu): f.since for f in tick.findings}
        with self._lock:
            self._ticks.append(tick)
            self._timeline.add(tick.time, causes, since)

    def _on_error(self, error: BaseException) -> None:
        self._errors += 1
        if self._errors == 1:
            LOG.warning("gputui could not read the GPUs: %s", clean(str(error)))

    # -- the loop's thread ---------------------------------------------------------------
    @property
    def steps(self) -> int:
        """Steps counted so far."""
        return self._count

    def step(self) -> None:
        """The end of one step: its time noted (and a log made every ``log_every``)."""
        self._ends.append(self._clock())
        self._count += 1
        every = self.log_every
        if every and self.on_log is not None and self._count % every == 0:
            self.on_log(self.log())

    @property
    def latest(self) -> Tick | None:
        session = self.session
        return session.latest if session is not None else None

    def log(self) -> Log:
        """The readings, findings and step line since the last log."""
        start = self._last_end if self._last_end is not None else self._clock()
        ends = self._ends.tolist()
        self._ends = array("d")
        pairs = []
        for end in ends:
            pairs.append((start, end))
            start = end
        self._last_end = start
        with self._lock:
            recent = [t for t in self._ticks if t.time > self._logged_at]
            latest = self._ticks[-1] if self._ticks else None
            times, causes = self._timeline.copy()
        line = attribute(pairs, times, causes, self._baseline)
        shown = latest.findings if latest is not None else ()
        interval = self.session.interval_s if self.session is not None else self._every
        scalars = {
            **metrics.readings(recent or ([latest] if latest else []), interval),
            **(metrics.findings(shown) if latest is not None else {}),
            **metrics.ended(self._shown, shown),
            **metrics.steps(line),
        }
        if latest is not None:
            self._logged_at = latest.time
        self._shown = shown
        new = tuple(f for f in shown if (f.rule, f.gpu) not in self._told)
        self._told |= {(f.rule, f.gpu) for f in new}
        return Log(self._count, self._clock(), scalars, self._text(line, new), new, line)

    def _text(self, line: StepLine, new: tuple[Finding, ...]) -> str:
        lines = [line.text()]
        if self.unavailable is not None and not self._said_unavailable:
            self._said_unavailable = True
            lines.append(f"gputui watches no GPU: {self.unavailable}")
        lines += [f.text() for f in new]
        return "\n".join(lines)


def watch(
    gpus: Gpus = "auto",
    *,
    interval_s: float = DEFAULT_INTERVAL_S,
    history_s: float = DEFAULT_HISTORY_S,
    log_every: int | None = None,
    on_log: Callable[[Log], object] | None = None,
    report: str | Path | None = None,
    processes: bool = True,
    clock: Callable[[], float] = time.time,
    sample_every_s: float | None = None,
    env: Mapping[str, str] | None = None,
    rank: int | None = None,
) -> Watch:
    """A watch over this machine's GPUs through NVML, for a plain training loop (no
    framework needed): use it as a context manager and call ``step()`` after each step.

    ``gpus``: which GPUs (``"auto"``: this rank's own in a distributed launch, else every
    GPU CUDA lets this process see; ``"node"``: every GPU, by the node's first rank alone;
    see ``gputui.api.gpus``). ``interval_s``: seconds between two readings. ``history_s``:
    how much of the run the report covers (its last ``history_s``). ``log_every`` steps,
    ``on_log`` is given a ``Log`` (its ``scalars`` for any logger, its ``text``).
    ``report``: where the run's HTML report is written at the end. ``processes``: read the
    GPU processes' host side (the input-starvation rules need it). ``clock`` and
    ``sample_every_s`` (real seconds between reads, default ``interval_s``) are for a clock
    that runs faster than the wall's (tests); ``env`` and ``rank`` stand in for the
    environment and the local rank."""

    def opener() -> Session | None:
        from gputui.api.opening import open_nvml

        session = open_nvml(
            gpus,
            interval_s=interval_s,
            history_s=history_s,
            processes=processes,
            clock=clock,
            env=env,
            rank=rank,
        )
        if not session.devices:  # a rank that leaves the node to its first rank
            session.close()
            return None
        return session

    return Watch(
        opener,
        clock=clock,
        sample_every_s=interval_s if sample_every_s is None else sample_every_s,
        log_every=log_every,
        on_log=on_log,
        report=report,
    )
