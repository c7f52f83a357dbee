"""A long recording's report judged in stretches side by side, one process each: reading
(and where it is judged again, judging) a week is most of a report's time, and a stretch
needs only the readings just before it to tell its part as the whole run would.

Each stretch is a ``Share`` of a version-3 recording: its lines by where they start in the
stream, cut where each process's work comes out even (``cuts``), so no pass over the file
comes before the work. Its process reads the blocks from ``WARMUP_S`` (recorded findings:
``RECORDED_WARMUP_S``) before its start, so what builds the episodes is in the state the
whole run's would be in, and records from its start: the columns, the finding episodes
and the process spans. The stretches are then joined in order: an episode (a span) the
one before left open at the border and this one continues is one episode (one span), by
the rule the run log itself follows.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import re
from array import array
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from gputui.core.config import DEFAULT_HISTORY_S
from gputui.core.records import frozen
from gputui.exporters.report.recorded import ONLY, recorded_collector
from gputui.exporters.report.run import Run, RunBuilder, Track, recording_collector
from gputui.formats.blocks import Block
from gputui.formats.cells import MAX_BLOCK_CELLS, REPORT_MAX_CELLS, frame_cells
from gputui.formats.recording import (
    Border,
    Header,
    RecordingError,
    Share,
    Tick,
    read_header,
    stream_recording,
    stream_size,
)
from gputui.sampling.runlog import MAX_EPISODES, MAX_SPANS, Episode, Span

#: what a stretch reads before its start: the history the advisor holds (a rule may say a
#: condition began anywhere in it), and the longest window of what it keeps beside the
#: history (the Xid window, 600 s), far past any hold or end
WARMUP_S: Final = DEFAULT_HISTORY_S + 600.0
#: a stretch whose findings were recorded needs only the episodes and process spans going
#: on at its start: those of the block before it
RECORDED_WARMUP_S: Final = 120.0
#: each stretch at least this long, or the stream is read in one go: about four hours of
#: 8 GPUs at 1 s, a day and a half of one (a week of 8 GPUs is ~980 MB); shorter, the
#: warm-up and a process's start would eat what a stretch saves
MIN_STRETCH_BYTES: Final = 24 << 20
#: what passing over a line costs a process that reads past it to its own stretch, as a
#: share of what reading it costs (measured: inflating and finding where lines start
#: against a report of recorded findings); where the cuts fall
SKIP_COST: Final = 0.15
MAX_WORKERS: Final = 8


@frozen
class Stretch:
    """One process's part of a recording: the lines of ``share``."""

    share: Share
    last: bool


def workers() -> int:
    """The processes a report may use: the CPUs this process may run on."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cpus))


def plan(path: Path, processes: int) -> list[Stretch]:
    """The stretches of a recording, one a process; one (read it in one go) for an older
    version, a short stream or a single process."""
    whole = [Stretch(Share(0, None), True)]
    if processes < 2 or read_header(path).version < 3:
        return whole
    size = stream_size(path)
    count = min(processes, size // MIN_STRETCH_BYTES)
    if count < 2:
        return whole
    at = cuts(size, count)
    return [Stretch(Share(a, b), b is None) for a, b in zip([0, *at], [*at, None], strict=True)]


def cuts(size: int, count: int) -> list[int]:
    """Where ``count`` stretches of a stream of ``size`` bytes meet, so that each process
    has as much to do: the k-th passes over the k-1 before it (``SKIP_COST``) and reads its
    own. Each cut is as far past the one before as the work left allows: ``c[k+1] = c[k] +
    load - SKIP_COST * c[k]``, the load that ends the last one at ``size``."""
    keep = 1.0 - SKIP_COST
    load = size * SKIP_COST / (1.0 - keep**count)
    return [round(load * (1.0 - keep**k) / SKIP_COST) for k in range(1, count)]


@dataclass(slots=True)
class Part:
    """One stretch judged: its run (None: no frames), the episodes and spans it carried
    on from the stretch before, what the reader had to say, and how many ticks it read of
    its own (as the reader counts them against ``max_ticks``)."""

    run: Run | None
    episodes: list[Episode]
    spans: list[Span]
    notices: list[str]
    ticks: int = 0
    #: the values those ticks expand to (``formats/cells``), as the reader counts them
    cells: int = 0


def judged(
    path: Path,
    stretch: Stretch,
    max_ticks: int,
    rejudge: bool = False,
    max_cells: int = REPORT_MAX_CELLS,
) -> Part:
    """One stretch's run: its recorded findings taken where this gputui's advisor gave
    them live (``recorded``), else the advisor run over it again."""
    notices: list[str] = []
    recorded = not rejudge and read_header(path).findings_judged_here()
    share = stretch.share
    if share.begin or share.end is not None:
        share = Share(share.begin, share.end, RECORDED_WARMUP_S if recorded else WARMUP_S)
    stream = stream_recording(
        path,
        notices,
        max_ticks=max_ticks,
        findings=recorded,
        share=share,
        columns=True,
        only=ONLY if recorded else None,
        max_cells=max_cells,
    )
    header = next(stream)
    assert isinstance(header, Header)
    # a stretch past the start: all is warm-up until its border
    first = math.inf if share.begin else None
    collector: RunBuilder = (
        recorded_collector(header, path.name, record_from=first)
        if recorded
        else recording_collector(header, path.name, record_from=first)
    )
    read = size = 0
    for tick in stream:
        if isinstance(tick, Block):
            collector.add_block(tick)
            read, size = read + len(tick), size + tick.cells
        elif isinstance(tick, Tick):
            collector.add_tick(tick)
            read, size = read + 1, size + frame_cells(tick.frame)
        elif isinstance(tick, Border):
            collector.begins_at(tick.time)
            read = size = 0
    if not len(collector):
        return Part(None, [], [], notices, read, size)
    episodes, spans = collector.carried()
    run = collector.finish(notices if stretch.last else (), last=stretch.last)
    return Part(run, episodes, spans, notices, read, size)


def judge_recording(
    path: Path,
    max_ticks: int,
    processes: int | None = None,
    rejudge: bool = False,
    max_cells: int = REPORT_MAX_CELLS,
) -> Run | None:
    """A recording's run, judged in stretches side by side where it is long enough; None
    when it holds no frames. A damaged file raises the reader's error. Where a stretch
    met what it could not read, the stretches read ``max_ticks`` or more in all (or
    ``max_cells`` values), or the last of them found nothing (the stream is shorter than
    its size said: a file still being written), the file is read again in one go: only
    that reading cuts it where a report stops, says what is wrong with it, and ends the
    run where it ends."""
    stretches = plan(path, workers() if processes is None else processes)
    if len(stretches) > 1:
        # side by side, the budget of values shared out: a stretch that reaches its share,
        # less a block, may have stopped short of its end, and the file is read in one go
        share = max_cells // len(stretches)
        context = multiprocessing.get_context("fork")
        try:
            with ProcessPoolExecutor(len(stretches), mp_context=context) as pool:
                futures = [
                    pool.submit(judged, path, s, max_ticks, rejudge, share) for s in stretches
                ]
                parts = [f.result() for f in futures]
        except RecordingError:
            parts = []
        within = sum(p.ticks for p in parts) < max_ticks and all(
            p.cells <= share - MAX_BLOCK_CELLS for p in parts
        )
        if parts and parts[-1].run is not None and within:
            return joined([p for p in parts if p.run is not None])
    return judged(path, Stretch(Share(0, None), True), max_ticks, rejudge, max_cells).run


def joined(parts: Sequence[Part]) -> Run | None:
    """Stretches of one run, in order, as one run."""
    if not parts:
        return None
    runs = [p.run for p in parts if p.run is not None]
    read = [n for p in parts for n in p.notices]  # the readers' (the last run holds its own)
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
    kept = [n for run in runs for n in run.notices if n not in read]
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
        notices=_summed([*read, *kept, *extra]),
        judged_live=first.judged_live,
    )


#: a stretch's count of recorded findings it could not read (reader's or collector's)
_NOT_UNDERSTOOD: Final = re.compile(
    r"^(.*?)([0-9]+)( recorded finding\(s\) not understood, skipped)$"
)


def _summed(notices: Iterable[str]) -> list[str]:
    """The stretches' notices, in order, once each; those that count recorded findings
    not understood (each stretch counts its own) as one notice of their sum, where the
    first of them stood."""
    out: list[str] = []
    counted: dict[tuple[str, str], tuple[int, int]] = {}  # where it stands, its sum
    for notice in notices:
        found = _NOT_UNDERSTOOD.match(notice)
        if found is None:
            if notice not in out:
                out.append(notice)
            continue
        key = (found.group(1), found.group(3))
        place, total = counted.get(key, (len(out), 0))
        if key not in counted:
            out.append(notice)
        counted[key] = (place, total + int(found.group(2)))
    for (head, tail), (place, total) in counted.items():
        out[place] = f"{head}{total}{tail}"
    return out


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
