"""One place where frames become history and findings: used by the app and every command.

The monitor sits below the advisor: it is given a way to make one (``make_judge``) by the
composition root, so sampling never imports the rules it feeds.
"""

from __future__ import annotations

import dataclasses
import math
from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from gputui.core.config import Config, Thresholds
from gputui.core.judgement import EngineVerdict, Judgement
from gputui.core.model import DeviceInfo, Finding, Frame, SourceInfo
from gputui.core.names import HostMetric
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

    def update(self, history: History, force: bool = False) -> tuple[Finding, ...]: ...

    def point_in_time(self) -> tuple[Finding, ...]: ...


JudgeFactory = Callable[[], Judge]
#: a GPU's history as columns: a column of floats a Metric, its clock-event masks
GpuColumns = tuple[list["array[float]"], "array[int]"]
NAN = math.nan


class Monitor:
    def __init__(
        self,
        devices: Sequence[DeviceInfo],
        config: Config,
        source: SourceInfo,
        make_judge: JudgeFactory,
        *,
        later: Thresholds | None = None,
    ) -> None:
        """``later``: make the judge only when a frame is first to be judged (the app's
        first paint then does not wait for the rules to load), judging with these
        thresholds; until then there are no findings and nothing judged."""
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
            add = getattr(judge, "add_devices", None)
            if add is not None:
                add(self.devices)  # those that joined while it was not yet made
            if self.engine is not None:
                self.set_engine(self.engine)
        return judge

    def set_engine(self, verdict: EngineVerdict) -> None:
        """The engine's verdict (`gputui rules` loaded in the cluster's server): its rules
        are judged there, the judge takes its alerts for them."""
        self.engine = verdict
        take = getattr(self._judge, "set_engine", None)
        if take is not None:
            take(verdict)

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
        self.history.add(frame)
        if self.follow_processes:
            self.processes.add(frame)
        if not advise:
            self.runlog.add(frame, None)
            return self.findings
        findings = self.advisor.update(self.history)
        self.runlog.add(frame, findings)
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
            add = getattr(self._judge, "add_devices", None)  # a judge made later has them
            if add is not None:
                add(new)

    def reset(self) -> None:
        """Forget history and findings: a replay jumped in time."""
        self.history = History(self.config.history_points)
        self.processes = ProcessHistory()
        self._judge = self._make_judge()
        self.runlog = RunLog(self.config.history_s)
