"""One place where ticks become history and findings: used by the app, every command and
the report, live, replayed or read back.

A frame is one tick (``ingest``); a recording's block read in columns is many (``take``,
with the block's own ``Ticks``): both go through ``take``, the one path. The monitor sits
below the advisor: it is given a way to make one (``make_judge``) by the composition root,
so sampling never imports the rules it feeds.
"""

from __future__ import annotations

import dataclasses
import math
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from gputui.core.config import Config, Thresholds
from gputui.core.judgement import EngineVerdict, Judgement
from gputui.core.model import DeviceInfo, Finding, Frame, ProcessSample, SourceInfo
from gputui.core.names import HostMetric
from gputui.core.source import GpuColumns
from gputui.sampling.history import History
from gputui.sampling.process_history import ProcessHistory
from gputui.sampling.runlog import RunLog


class Judge(Protocol):
    """What the monitor needs of the advisor."""

    @property
    def findings(self) -> tuple[Finding, ...]: ...

    @property
    def thresholds(self) -> Thresholds: ...

    @property
    def judgement(self) -> Judgement: ...

    @property
    def judged_at(self) -> float | None: ...

    def update(self, history: History, force: bool = False) -> tuple[Finding, ...]:
        """Judge the history if a judgement is due (``force``: now); the findings."""

    def due(self, now: float) -> bool:
        """Whether a tick at ``now`` is judged (one with nothing urgent in it)."""

    def keep(
        self,
        now: float,
        utilisation: Iterable[tuple[int, tuple[float, ...]]],
        processes: Sequence[ProcessSample],
    ) -> None:
        """What the judge keeps of every tick, judged or not: each GPU's (index) driver
        utilisation samples and each process's readings."""

    def add_devices(self, devices: Iterable[DeviceInfo]) -> None:
        """GPUs that joined after the start, or a known GPU's newer facts."""

    def set_engine(self, verdict: EngineVerdict | None) -> None:
        """The verdict of the cluster's engine (``gputui rules`` loaded in its server): the
        rules it evaluates are its word, and judged here no more."""

    def point_in_time(self) -> tuple[Finding, ...]: ...


JudgeFactory = Callable[[], Judge]
NAN = math.nan


class Ticks(Protocol):
    """Ticks a monitor takes at once (``Monitor.take``): a frame, or a recording's block of
    ticks read in columns. Each tick is asked for what the judge keeps of it; the history
    is given them all at once (``add_to``), a frame built only where one is needed."""

    @property
    def times(self) -> Sequence[float]:
        """Each tick's time, in order."""

    def processes(self, k: int) -> Sequence[ProcessSample]:
        """Tick ``k``'s GPU processes."""

    def utilisation(self, k: int) -> Iterable[tuple[int, tuple[float, ...]]]:
        """Tick ``k``'s driver utilisation samples, by GPU index."""

    def urgent(self, k: int) -> bool:
        """Whether tick ``k`` is judged whenever it comes (a GPU lost, a new Xid)."""

    def frame(self, k: int) -> Frame:
        """Tick ``k`` as a frame."""

    def add_to(self, history: History, first: int, end: int) -> None:
        """Ticks ``first`` to ``end`` (not included) into ``history``, in order."""


class FrameTicks:
    """One frame as ``Ticks``."""

    __slots__ = ("_frame", "times")

    def __init__(self, frame: Frame) -> None:
        self._frame = frame
        self.times = (frame.time,)

    def processes(self, k: int) -> Sequence[ProcessSample]:
        return self._frame.processes

    def utilisation(self, k: int) -> Iterable[tuple[int, tuple[float, ...]]]:
        return [(s.index, s.util_samples) for s in self._frame.gpus]

    def urgent(self, k: int) -> bool:
        return any(s.lost or s.xid_events for s in self._frame.gpus)

    def frame(self, k: int) -> Frame:
        return self._frame

    def add_to(self, history: History, first: int, end: int) -> None:
        history.add(self._frame)


class Monitor:
    """The one state a tick flows into: the history, the judge's findings, each process's
    own readings and the run log. Everything that reads GPUs (the screen, a snapshot,
    doctor, the recorder's report, the training-loop API) feeds it through ``take`` and
    reads it back; nothing else writes it.

    Args:
        devices: the static facts of every GPU, as ``Source.open`` gave them.
        config: the sampling interval and the history's length (``history_points``).
        source: what the frames come from (its kind and name, for the screen and files).
        make_judge: makes the judge (``gputui.advisor.Advisor`` over the catalogue); a
            factory so that the rules load only when they are first needed.
        later: make the judge only when a frame is first to be judged, judging with these
            thresholds meanwhile (the app's first paint then does not wait for the rules).
    """

    def __init__(
        self,
        devices: Sequence[DeviceInfo],
        config: Config,
        source: SourceInfo,
        make_judge: JudgeFactory,
        *,
        later: Thresholds | None = None,
    ) -> None:
        """Until ``later``'s judge is made there are no findings and nothing judged."""
        self.devices = tuple(devices)
        self.config = config
        self.source = source
        self.history = History(config.history_points)
        #: each GPU process's own readings, while it lives (the process page)
        self.processes = ProcessHistory()
        #: whether ``processes`` is fed: a headless reader with no process page (the
        #: report of a week-long recording) turns it off
        self.follow_processes = True
        self._make_judge = make_judge
        self._judge: Judge | None = None if later is not None else make_judge()
        self._thresholds = later
        #: finding episodes and process spans over the history window (the report's story)
        self.runlog = RunLog(config.history_s)
        #: the nodes the screen shows now, most wanted first (the selected one's, those in
        #: view): a source that reads a cluster reads these in full (``Source.follow``)
        self.shown_nodes: tuple[str, ...] = ()
        #: the engine's verdict, where the cluster's server evaluates `gputui rules`
        self.engine: EngineVerdict | None = None

    @property
    def advisor(self) -> Judge:
        judge = self._judge
        if judge is None:
            judge = self._judge = self._make_judge()
            judge.add_devices(self.devices)  # those that joined while it was not yet made
            if self.engine is not None:
                self.set_engine(self.engine)
        return judge

    def set_engine(self, verdict: EngineVerdict) -> None:
        """The engine's verdict (`gputui rules` loaded in the cluster's server): its rules
        are judged there, the judge takes its alerts for them."""
        self.engine = verdict
        if self._judge is not None:
            self._judge.set_engine(verdict)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self._judge.findings if self._judge is not None else ()

    @property
    def thresholds(self) -> Thresholds:
        judge = self._judge
        if judge is None and self._thresholds is not None:
            return self._thresholds
        return self.advisor.thresholds

    @property
    def judgement(self) -> Judgement:
        """How far the verdict reaches: history sampled, rules that could not judge."""
        if self._judge is None:
            return Judgement(seen_s=0.0, needed_s=0.0)  # nothing judged yet
        return self._judge.judgement

    @property
    def interval_s(self) -> float:
        """How often the source is read: the one owner of the figure (``+``/``-`` change
        it here; the sampler asks it before each wait)."""
        return self.config.interval_s

    def set_interval(self, seconds: float) -> None:
        """A new sampling interval. The history keeps its length in seconds: its rings are
        sized anew for the interval, the newest readings kept."""
        self.config = dataclasses.replace(self.config, interval_s=seconds)
        self.history = self.history.resized(self.config.history_points)

    def point_in_time_findings(self) -> tuple[Finding, ...]:
        """The findings of a point-in-time test (``doctor``): conditions that held through
        the whole sampled window count even when it was shorter than the live hold; the
        last reading judged first."""
        self.judge_latest()
        return self.advisor.point_in_time()

    def judge_latest(self) -> tuple[Finding, ...]:
        """Judge the last reading, unless it was judged already: what a headless command
        writes is the verdict on its last reading (a frame judged again says the same)."""
        latest = self.latest
        if latest is not None and self.advisor.judged_at != latest.time:
            self.advisor.update(self.history, force=True)
        return self.advisor.findings

    @property
    def latest(self) -> Frame | None:
        return self.history.latest

    def ingest(self, frame: Frame, advise: bool = True) -> tuple[Finding, ...]:
        """Add a frame; ``advise=False`` only fills history (catching up after a seek). GPUs
        that joined (or whose facts are new) come with it, and the history a newly read node
        missed before it."""
        if frame.joined:
            self._join(frame.joined)
        for earlier in frame.late:
            self.history.fill(earlier)
        if advise:
            return self.take(FrameTicks(frame))
        self.history.add(frame)
        if self.follow_processes:
            self.processes.add(frame)
        self.runlog.add(frame, None)
        return self.findings

    def take(self, ticks: Ticks) -> tuple[Finding, ...]:
        """Ticks into the history, judged where the judge is due or a tick is urgent, each
        with the findings as they stood in the run log: the one way ticks become findings,
        a frame at a time or a recording's block at once.

        Args:
            ticks: ``FrameTicks(frame)`` for one frame from ``Source.read``, or a block of
                a recording (``exporters.report.columnar.BlockTicks``), oldest first.

        Returns:
            The findings as they stand after the last tick.
        """
        judge = self.advisor
        times = ticks.times
        count = len(times)
        findings = judge.findings
        first = 0
        while first < count:
            judged = first  # the next tick judged, or the end
            while judged < count and not (judge.due(times[judged]) or ticks.urgent(judged)):
                judged += 1
            end = min(judged + 1, count)
            for k in range(first, end):
                judge.keep(times[k], ticks.utilisation(k), ticks.processes(k))
            ticks.add_to(self.history, first, end)
            if self.follow_processes:
                for k in range(first, end):
                    self.processes.add(ticks.frame(k))
            for k in range(first, end):
                if k == judged:
                    findings = judge.update(self.history, force=True)
                self.runlog.add_at(times[k], ticks.processes(k), findings)
            first = end
        return findings

    def ingest_columns(
        self,
        times: Sequence[float],
        gpus: dict[int, GpuColumns],
        last_seen: Mapping[int, float],
        at: int = 0,
    ) -> None:
        """A source's history as columns (``History.add_columns``: the values from ``at``
        on are those of ``times``), not judged: a point-in-time verdict is on the readings
        after it, whose windows hold it."""
        if not times:
            return
        host = [array("f", [NAN]) * (at + len(times)) for _ in HostMetric]
        latest = Frame(time=times[-1], gpus=())
        self.history.add_columns(times, gpus, host, latest, at, last_seen)

    def _join(self, devices: Sequence[DeviceInfo]) -> None:
        """GPUs that joined, added; a known GPU's newer facts (a cluster node's limits,
        read with its first full reading) in place of its old ones."""
        known = {d.index: d for d in self.devices}
        new = tuple(d for d in devices if known.get(d.index) != d)
        if new:
            known.update((d.index, d) for d in new)
            self.devices = tuple(known.values())
            if self._judge is not None:  # a judge made later has them
                self._judge.add_devices(new)

    def reset(self) -> None:
        """Forget history and findings: a replay jumped in time."""
        self.history = History(self.config.history_points)
        self.processes = ProcessHistory()
        self._judge = self._make_judge()
        self.runlog = RunLog(self.config.history_s)
