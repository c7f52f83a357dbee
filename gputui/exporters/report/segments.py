"""A long recording's report judged in stretches side by side, one process each: the
advisor over a week is most of a report's time, and a stretch needs only the readings
just before it to judge as the whole run would.

Each stretch is whole blocks of a version-3 recording (``block_marks``). Its process reads
from ``WARMUP_S`` before its start, so the advisor's history, windows, holds and ends are
in the state the whole run's would be in, and records from its start: the columns, the finding
episodes and the process spans. The stretches are then joined in order: an episode (a
span) the one before left open at the border and this one continues is one episode (one
span), by the rule the run log itself follows.
"""

from __future__ import annotations

import math
import multiprocessing
import os
from array import array
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from gputui.core.config import DEFAULT_HISTORY_S
from gputui.core.records import frozen
from gputui.exporters.report.recorded import ONLY, recorded_collector
from gputui.exporters.report.run import Run, RunBuilder, Track, recording_collector
from gputui.formats.blocks import Block
from gputui.formats.recording import Header, Tick, block_marks, read_header, stream_recording
from gputui.sampling.runlog import MAX_EPISODES, MAX_SPANS, Episode, Span

#: what a stretch reads before its start: the history the advisor holds (a rule may say a
#: condition began anywhere in it), and the longest window of what it keeps beside the
#: history (the Xid window, 600 s), far past any hold or end
WARMUP_S: Final = DEFAULT_HISTORY_S + 600.0
#: a stretch whose findings were recorded needs only the episodes and process spans going
#: on at its start: those of the block before it
RECORDED_WARMUP_S: Final = 120.0
#: a run shorter than this a stretch is judged in one go
MIN_STRETCH_S: Final = 4 * 3600.0
MAX_WORKERS: Final = 8


@frozen
class Stretch:
    start: float  # the first block's first tick
    end: float  # the next stretch's start (infinity for the last)
    last: bool


def workers() -> int:
    """The processes a report may use: the CPUs this process may run on."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cpus))


def plan(path: Path, processes: int, max_ticks: int) -> list[Stretch]:
    """The stretches of a recording, one a process, cut at block starts; one (judge it in
    one go) for an older version, a short run, more ticks than a report reads, or a single
    process."""
    marks = block_marks(path) if processes > 1 else None
    if not marks or sum(ticks for _, ticks in marks) > max_ticks:
        return [Stretch(-math.inf, math.inf, True)]
    first, final = marks[0][0], marks[-1][0]
    count = max(1, min(processes, int((final - first) // MIN_STRETCH_S)))
    starts = [first]
    for k in range(1, count):
        wanted = first + (final - first) * k / count
        start = next(t for t, _ in marks if t >= wanted)
        if start > starts[-1]:
            starts.append(start)
    ends = [*starts[1:], math.inf]
    return [Stretch(a, b, b == math.inf) for a, b in zip(starts, ends, strict=True)]


@dataclass(slots=True)
class Part:
    """One stretch judged: its run (None: no frames), the episodes and spans it carried
    on from the stretch before, and what the reader had to say."""

    run: Run | None
    episodes: list[Episode]
    spans: list[Span]
    notices: list[str]


def judged(path: Path, stretch: Stretch, max_ticks: int, rejudge: bool = False) -> Part:
    """One stretch's run: its recorded findings taken where this gputui's advisor gave
    them live (``recorded``), else the advisor run over it again."""
    notices: list[str] = []
    recorded = not rejudge and read_header(path).findings_judged_here()
    warm = stretch.start - (RECORDED_WARMUP_S if recorded else WARMUP_S)
    stream = stream_recording(
        path,
        notices,
        max_ticks=max_ticks,
        findings=recorded,
        blocks=(warm, stretch.end),
        columns=True,
        only=ONLY if recorded else None,
    )
    header = next(stream)
    assert isinstance(header, Header)
    first = None if stretch.start == -math.inf else stretch.start
    collector: RunBuilder = (
        recorded_collector(header, path.name, record_from=first)
        if recorded
        else recording_collector(header, path.name, record_from=first)
    )
    for tick in stream:
        if isinstance(tick, Block):
            collector.add_block(tick)
        elif isinstance(tick, Tick):
            collector.add_tick(tick)
    if not len(collector):
        return Part(None, [], [], notices)
    episodes, spans = collector.carried()
    run = collector.finish(notices if stretch.last else (), last=stretch.last)
    return Part(run, episodes, spans, notices)


def judge_recording(
    path: Path, max_ticks: int, processes: int | None = None, rejudge: bool = False
) -> Run | None:
    """A recording's run, judged in stretches side by side where it is long enough; None
    when it holds no frames. A damaged file raises the reader's error."""
    stretches = plan(path, workers() if processes is None else processes, max_ticks)
    if len(stretches) == 1:
        return judged(path, stretches[0], max_ticks, rejudge).run
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(len(stretches), mp_context=context) as pool:
        futures = [pool.submit(judged, path, s, max_ticks, rejudge) for s in stretches]
        parts = [f.result() for f in futures]
    return joined([p for p in parts if p.run is not None])


def joined(parts: Sequence[Part]) -> Run | None:
    """Stretches of one run, in order, as one run."""
    if not parts:
        return None
    runs = [p.run for p in parts if p.run is not None]
    notices = list(dict.fromkeys(n for p in parts for n in p.notices))
    first = runs[0]
    times = array("d")
    for run in runs:
        times.extend(run.times)
    tracks = {
        index: Track(
            track.device,
            {m: _joined([r.tracks[index].values[m] for r in runs]) for m in track.values},
            _joined([r.tracks[index].reasons for r in runs]),
        )
        for index, track in first.tracks.items()
    }
    episodes, spans = list(first.episodes), list(first.spans)
    for part, run in zip(parts[1:], runs[1:], strict=True):
        _join_episodes(episodes, part.episodes, run.episodes)
        _join_spans(spans, part.spans, run.spans)
    for episode in episodes:
        episode.open = False
    dropped = max(0, len(episodes) - MAX_EPISODES) + max(0, len(spans) - MAX_SPANS)
    extra = [f"{dropped:,} findings or process spans past the report's caps"] * bool(dropped)
    kept = [n for run in runs for n in run.notices if n not in notices]
    return Run(
        source=first.source,
        devices=first.devices,
        interval_s=first.interval_s,
        times=times,
        tracks=tracks,
        episodes=episodes[:MAX_EPISODES],
        spans=spans[:MAX_SPANS],
        thresholds=first.thresholds,
        origin=first.origin,
        notices=list(dict.fromkeys([*notices, *kept, *extra])),
        judged_live=first.judged_live,
    )


def _joined(columns: Sequence[Sequence[Any]]) -> array[Any]:
    out = array(columns[0].typecode if isinstance(columns[0], array) else "f")
    for column in columns:
        out.extend(column)
    return out


def _join_episodes(
    episodes: list[Episode], carried: Sequence[Episode], later: Sequence[Episode]
) -> None:
    """A stretch's episodes after those before it: one it carried on (shown when it
    began) is the episode of that finding open at the end of the stretch before, going on;
    an episode open there that it did not carry on ended at the border."""
    going = {e.key: e for e in episodes if e.open}
    for episode in carried:
        before = going.pop(episode.key, None)
        if before is None:
            episodes.append(episode)  # the stretches disagree: keep what this one saw
            continue
        before.until = max(before.until, episode.until)
        before.finding = episode.finding
        before.open = episode.open
    for ended in going.values():
        ended.open = False
    episodes.extend(later)


def _join_spans(spans: list[Span], carried: Sequence[Span], later: Sequence[Span]) -> None:
    """As ``_join_episodes``: a span it carried on goes on the last span of that process
    on that GPU."""
    last = {(s.gpu, s.pid, s.name): s for s in spans}
    for span in carried:
        before = last.get((span.gpu, span.pid, span.name))
        if before is None:
            spans.append(span)
            continue
        before.end = max(before.end, span.end)
    spans.extend(later)
