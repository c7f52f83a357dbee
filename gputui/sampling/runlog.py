"""What happened over a run, beside the history's numbers: each finding's episodes (from
when to when it was shown) and which process ran on which GPU when.

The monitor feeds it every frame and the findings it judged, so the app's report of the
history it holds (the ``s`` key) and a report built from a recording tell the same story.
Bounded: the app keeps what lies within its history window; a report keeps the whole run,
with at most ``MAX_EPISODES`` episodes and ``MAX_SPANS`` process spans.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol

from gputui.core.model import Finding, Frame
from gputui.core.names import RuleId
from gputui.core.records import record

MAX_EPISODES: Final = 20_000
MAX_SPANS: Final = 20_000


class Running(Protocol):
    """What the run log reads of a process at a tick: a ``ProcessSample``, or a report's
    row of one read from a recording (``formats.blocks.ProcessRow``)."""

    @property
    def pid(self) -> int: ...
    @property
    def gpu_index(self) -> int: ...
    @property
    def name(self) -> str | None: ...
    @property
    def command(self) -> str | None: ...
    @property
    def user(self) -> str | None: ...
    @property
    def ppid(self) -> int | None: ...


@record
class Episode:
    """One stretch of a finding: shown from ``since`` to ``until`` (frame times), with the
    last words the advisor had for it."""

    finding: Finding
    since: float
    until: float
    open: bool = True

    @property
    def key(self) -> tuple[RuleId, int | None]:
        return self.finding.key


@record
class Span:
    """A process on a GPU, from its first frame to its last one."""

    gpu: int
    pid: int
    name: str
    command: str | None
    user: str | None
    start: float
    end: float
    #: its parent (the ranks of one job started by one launcher share it)
    ppid: int | None = None


class RunLog:
    """Finding episodes and process spans, fed one frame at a time."""

    def __init__(self, horizon_s: float | None, gap_s: float = 5.0) -> None:
        #: how far back to keep (None: everything); the app keeps its history's length
        self.horizon_s = horizon_s
        #: a process absent longer than this between two frames starts a new span
        self.gap_s = gap_s
        self.episodes: list[Episode] = []
        self.spans: list[Span] = []
        self._open: dict[tuple[RuleId, int | None], Episode] = {}
        self._running: dict[tuple[int, int, str], Span] = {}
        self.dropped = 0  # episodes and spans past the caps, left out
        self._trimmed_at = 0.0
        #: the findings of the last judgement seen, as the advisor handed them over
        self._last: tuple[Finding, ...] | None = None
        #: the spans of the last tick's processes, and how many it left out (past the cap)
        self._going: list[Span] = []
        self._missed = 0

    def add(self, frame: Frame, findings: tuple[Finding, ...] | None) -> None:
        """One frame, and the findings judged with it (None: not judged, e.g. catching up
        after a seek: the episodes stay as they were)."""
        self.add_at(frame.time, frame.processes, findings)

    def add_at(
        self, now: float, processes: Sequence[Running], findings: tuple[Finding, ...] | None
    ) -> None:
        """``add`` of a frame at ``now`` with these processes (all it reads of a frame)."""
        if findings is not None and findings is not self._last:
            dropped = self.dropped
            self._findings(now, findings)
            # the same tuple again (the advisor did not judge that tick) would change
            # nothing: each of its findings has its open episode, which holds it and
            # reaches its update; unless one had none (past the cap): then it is counted
            self._last = findings if self.dropped == dropped else None
        self._processes(now, processes)
        self._trim_now_and_then(now)

    def _findings(self, now: float, findings: tuple[Finding, ...]) -> None:
        seen = set()
        for finding in findings:
            key = finding.key
            seen.add(key)
            episode = self._open.get(key)
            if episode is not None and finding.since <= episode.until:
                episode.finding = finding
                episode.until = max(episode.until, finding.updated)
                continue
            if episode is not None:
                episode.open = False
            if len(self.episodes) >= MAX_EPISODES:
                self.dropped += 1
                continue
            episode = Episode(finding, finding.since, max(finding.updated, finding.since))
            self.episodes.append(episode)
            self._open[key] = episode
        for key in [k for k in self._open if k not in seen]:
            self._open.pop(key).open = False

    def go_on(self, now: float, ticks: int) -> None:
        """``ticks`` more ticks up to ``now``, each with the processes of the last one added
        and no gap longer than ``gap_s``, the findings standing as they were: what
        ``add_at`` of each would leave (a report's steady stretch of a block, in one call)."""
        for span in self._going:
            span.end = now
        self.dropped += self._missed * ticks
        self._trim_now_and_then(now)

    def _processes(self, now: float, processes: Sequence[Running]) -> None:
        going: list[Span] = []
        missed = 0
        for proc in processes:
            key = (proc.gpu_index, proc.pid, proc.name or "")
            span = self._running.get(key)
            if span is not None and now - span.end <= self.gap_s:
                span.end = now
                going.append(span)
                continue
            if len(self.spans) >= MAX_SPANS:
                self.dropped += 1
                missed += 1
                continue
            span = Span(
                proc.gpu_index,
                proc.pid,
                proc.name or "",
                proc.command,
                proc.user,
                now,
                now,
                proc.ppid,
            )
            self.spans.append(span)
            self._running[key] = span
            going.append(span)
        self._going, self._missed = going, missed
        if len(self._running) > 4 * max(1, len(processes)) + 64:
            self._running = {k: s for k, s in self._running.items() if now - s.end <= self.gap_s}

    def _trim_now_and_then(self, now: float) -> None:
        """Past the horizon, left out: once a minute (a trim walks everything held)."""
        if self.horizon_s is not None and now - self._trimmed_at > 60.0:
            self._trim(now - self.horizon_s)
            self._trimmed_at = now

    def _trim(self, before: float) -> None:
        self.episodes = [e for e in self.episodes if e.open or e.until >= before]
        self.spans = [s for s in self.spans if s.end >= before]
        self._running = {k: s for k, s in self._running.items() if s.end >= before}

    def finish(self) -> None:
        """The run ended: every episode is closed where it was last seen."""
        for episode in self._open.values():
            episode.open = False
        self._open.clear()
