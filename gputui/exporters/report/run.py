"""A run as the report reads it: every tick's readings per GPU, lined up in columns, and
what the advisor said about it (finding episodes) and who ran where (process spans).

Two ways in: ``Collector`` streams frames through a monitor wired to the full rule
catalogue (a recording, a Prometheus server's range), so the report's findings are the
ones the live screen would have shown; ``run_of_monitor`` takes the history and run log a
monitor already holds (the app's ``s`` key).
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from operator import attrgetter
from typing import Any, Final

from gputui.advisor import make_monitor
from gputui.core.config import Config, Thresholds
from gputui.core.model import DeviceInfo, Frame, SourceInfo
from gputui.core.names import Metric
from gputui.core.sanitize import clean
from gputui.exporters.report import columnar
from gputui.exporters.report.columnar import columns_of
from gputui.formats.blocks import Block
from gputui.formats.recording import Header, Tick
from gputui.sampling.history import NO_REASONS
from gputui.sampling.monitor import Monitor
from gputui.sampling.runlog import Episode, RunLog, Span

NAN: Final = float("nan")
#: the readings the report plots and accounts with, in column order
METRICS: Final[tuple[Metric, ...]] = (
    Metric.UTIL_GPU,
    Metric.SM_ACTIVITY,
    Metric.SM_CLOCK_MHZ,
    Metric.TEMP_C,
    Metric.POWER_W,
    Metric.POWER_LIMIT_W,
    Metric.MEM_USED,
    Metric.MEM_TOTAL,
    Metric.PCIE_RX_BPS,
    Metric.PCIE_TX_BPS,
    Metric.PCIE_GEN,
    Metric.PCIE_WIDTH,
)
_READINGS: Final = attrgetter(*(m.value for m in METRICS))
#: where each of METRICS lies among all the Metrics (the history's order)
_PLACES: Final = tuple(list(Metric).index(m) for m in METRICS)


@dataclass
class Track:
    """One GPU's columns, each as long as ``Run.times``: NaN (a reading) or ``NO_REASONS``
    (the clock-event mask) where the GPU gave nothing at that tick."""

    device: DeviceInfo
    values: dict[Metric, Sequence[float]]
    reasons: Sequence[int]


@dataclass
class Run:
    source: SourceInfo
    devices: tuple[DeviceInfo, ...]
    interval_s: float
    times: Sequence[float]
    tracks: dict[int, Track]
    episodes: list[Episode]
    spans: list[Span]
    thresholds: Thresholds
    #: where the run came from, in words ("recording run.jsonl.gz")
    origin: str
    #: what the reader or the source had to say (a cut line, a step widened)
    notices: list[str] = field(default_factory=list)
    #: the findings are those the recorder's advisor judged live (``recorded``), not
    #: judged again by the report
    judged_live: bool = False

    @property
    def start(self) -> float:
        return self.times[0] if self.times else 0.0

    @property
    def end(self) -> float:
        return self.times[-1] if self.times else 0.0


#: how often a report judges a recording, in frame time: the live screen judges every 4 s,
#: which for a week of 8 GPUs is most of a report's time; the rules' windows, holds and
#: ends stay the live ones, so a finding starts or ends at most a judgement or two later
REPORT_JUDGE_EVERY_S: Final = 5.0


def recording_thresholds(
    interval_s: float, judge_every_s: float = REPORT_JUDGE_EVERY_S
) -> Thresholds:
    """The advisor's thresholds for a recording's report: ``report_thresholds`` judged no
    more often than every ``judge_every_s`` of frame time."""
    t = report_thresholds(interval_s)
    if t.judge_every_s >= judge_every_s:
        return t
    return dataclasses.replace(t, judge_every_s=judge_every_s)


def judged_less_often_s(t: Thresholds) -> float:
    """How much further apart than on the live screen (``Thresholds().judge_every_s``)
    judgements come with ``t``:
    a finding may start up to two of these later (a judgement to see it, one to hold it),
    and was last seen up to one before the judgement that no longer saw it."""
    return max(0.0, t.judge_every_s - Thresholds().judge_every_s)


def report_thresholds(step_s: float, base: Thresholds | None = None) -> Thresholds:
    """The advisor's thresholds for ticks ``step_s`` apart: the same, unless a window would
    hold fewer than ``min_points`` readings (a Prometheus range at a coarse step), where
    the windows widen to hold them, and judgements come no faster than the ticks."""
    t = base or Thresholds()
    needed = step_s * t.min_points
    if needed <= t.window_s:
        return t
    return dataclasses.replace(
        t,
        window_s=needed,
        hot_mean_s=max(t.hot_mean_s, needed),
        vram_mean_s=max(t.vram_mean_s, needed),
        judge_every_s=max(t.judge_every_s, step_s),
        start_after_s=max(t.start_after_s, step_s),
        end_after_s=max(t.end_after_s, 2 * step_s),
    )


class RunBuilder(ABC):
    """A run's columns, finding episodes and process spans, built tick by tick from the
    start of a stretch (``record_from``: ticks before it only warm up what builds the
    episodes). Subclasses say where the findings come from."""

    def __init__(
        self,
        devices: Sequence[DeviceInfo],
        source: SourceInfo,
        interval_s: float,
        origin: str,
        runlog: RunLog,
        record_from: float | None = None,
    ) -> None:
        self.devices = tuple(devices)
        #: frames before this time only warm the advisor up (its history, its holds): one
        #: stretch of a long run judged on its own (``segments``) begins here
        self._record_from = record_from
        self._last: float | None = None
        #: the run log's episodes and spans when the stretch began, and those open then
        self._before: set[int] = set()
        self._open: set[int] = set()
        self._source = source
        self._interval = interval_s
        self._origin = clean(origin)  # a file name or a URL: outside text
        self.runlog = runlog
        runlog.horizon_s = None  # the whole run, not the app's hour
        runlog.gap_s = max(5.0, 3 * interval_s)
        self.times: array[float] = array("d")
        self._columns: dict[int, list[array[float]]] = {
            d.index: [array("f") for _ in METRICS] for d in self.devices
        }
        self._reasons: dict[int, array[int]] = {d.index: array("q") for d in self.devices}
        self._blank = [NAN] * len(METRICS)

    def __len__(self) -> int:
        return len(self.times)

    #: whether the findings are the recorder's live ones (``recorded``)
    judged_live = False

    @property
    @abstractmethod
    def thresholds(self) -> Thresholds:
        """The advisor's thresholds the findings were judged with."""

    @abstractmethod
    def add_tick(self, tick: Tick) -> None:
        """A recording's tick (a file before version 3, or a block taken tick by tick)."""

    @abstractmethod
    def add_block(self, block: Block) -> None:
        """A recording's block of ticks."""

    def _append(self, frame: Frame) -> None:
        """One tick's readings into the report's columns."""
        self._append_readings(
            frame.time,
            {s.index: (_READINGS(s), s.clock_reasons) for s in frame.gpus if not s.lost},
        )

    def _append_readings(
        self, when: float, present: Mapping[int, tuple[Sequence[Any], int | None]]
    ) -> None:
        """One tick into the report's columns: per GPU read at it, its readings (in the
        order of METRICS, None: no reading) and its clock-event mask."""
        self.times.append(when)
        for index, columns in self._columns.items():
            given = present.get(index)
            if given is None:
                for column in columns:
                    column.append(NAN)
                self._reasons[index].append(NO_REASONS)
                continue
            for column, reading in zip(columns, given[0], strict=True):
                column.append(NAN if reading is None else float(reading))
            self._reasons[index].append(NO_REASONS if given[1] is None else given[1])

    def _taken(self, when: float) -> bool | None:
        """What a tick at ``when`` is: None, a repeated one (once is enough); False, warm-up
        (it feeds only what builds the episodes); True, the run's (the first begins the
        stretch)."""
        if self._last is not None and when <= self._last:
            return None
        self._last = when
        if self._record_from is not None:
            if when < self._record_from:
                return False
            self._begin()
        return True

    def _at_once(self, times: Sequence[float]) -> bool:
        """Whether a block's ticks can go in at once: after the last one taken, in order,
        and not across the stretch's start (the first begins it where it is the start)."""
        start = self._record_from
        if self._last is not None and times[0] <= self._last:
            return False
        if any(b <= a for a, b in pairwise(times)):
            return False
        return start is None or not times[0] < start <= times[-1]

    def begins_at(self, time: float) -> None:
        """Where the stretch begins, learnt as it is read (a share's ``Border``): the ticks
        so far were warm-up."""
        self._record_from = time

    def _begin(self) -> None:
        """The stretch begins: what the run log holds now is the stretch before's, but for
        the episodes and spans going on here, which continue the ones it left."""
        log = self.runlog
        self._before = {id(e) for e in log.episodes} | {id(s) for s in log.spans}
        self._open = {id(e) for e in log.episodes if e.open}
        self._record_from = None

    def _extend(
        self, times: Sequence[float], gpus: columnar.GpuColumns, places: Sequence[int]
    ) -> None:
        """The report's own columns, a block's ticks at once: ``gpus`` each GPU's columns
        and masks, ``places`` where each of METRICS lies among them."""
        self.times.extend(times)
        for index, kept in self._columns.items():
            given = gpus.get(index)
            if given is None:
                for column in kept:
                    column.extend(array("f", self._blank[:1]) * len(times))
                self._reasons[index].extend(array("q", [NO_REASONS]) * len(times))
                continue
            for column, place in zip(kept, places, strict=True):
                column.extend(given[0][place])
            self._reasons[index].extend(given[1])

    def carried(self) -> tuple[list[Episode], list[Span]]:
        """Of a stretch (``record_from``): the episodes open when it began and the spans
        running then that it went on with: the stretch before's, continued here."""
        log = self.runlog
        start = self.times[0] if self.times else math.inf
        episodes = [e for e in log.episodes if id(e) in self._open]
        spans = [s for s in log.spans if id(s) in self._before and s.end >= start]
        return episodes, spans

    @abstractmethod
    def _judge_last(self) -> None:
        """The run ends: the last tick judged, however the cadence fell (where there is an
        advisor to judge it)."""

    def finish(self, notices: Sequence[str] = (), last: bool = True) -> Run:
        """The run; ``last=False`` for a stretch the next one continues: its last tick is
        judged as the cadence fell, not forced, and the episodes shown at its end stay
        open. A stretch's run holds the episodes and spans that began in it."""
        log = self.runlog
        if last:
            self._judge_last()
            log.finish()
        tracks = {
            d.index: Track(
                d,
                dict(zip(METRICS, self._columns[d.index], strict=True)),
                self._reasons[d.index],
            )
            for d in self.devices
        }
        extra = [f"{log.dropped:,} findings or process spans past the report's caps"] * bool(
            log.dropped
        )
        return Run(
            source=self._source,
            devices=self.devices,
            interval_s=self._interval,
            times=self.times,
            tracks=tracks,
            episodes=[e for e in log.episodes if id(e) not in self._before],
            spans=[s for s in log.spans if id(s) not in self._before],
            thresholds=self.thresholds,
            origin=self._origin,
            notices=[*notices, *extra, *_too_short(self.times, self.thresholds)],
            judged_live=self.judged_live,
        )


class Collector(RunBuilder):
    """Frames in, one at a time (a week of them holds no frame in memory), judged by a
    monitor wired to the full rule catalogue; a ``Run`` out."""

    def __init__(
        self,
        devices: Sequence[DeviceInfo],
        source: SourceInfo,
        interval_s: float,
        origin: str,
        thresholds: Thresholds | None = None,
        record_from: float | None = None,
    ) -> None:
        self.monitor: Monitor = make_monitor(
            devices, Config(interval_s=interval_s), source, thresholds
        )
        self.monitor.follow_processes = False  # no process page: its rings are not read
        super().__init__(devices, source, interval_s, origin, self.monitor.runlog, record_from)

    @property
    def thresholds(self) -> Thresholds:
        return self.monitor.thresholds

    def add(self, frame: Frame) -> None:
        taken = self._taken(frame.time)  # None: a range's edges overlapping
        if taken is None:
            return
        self.monitor.ingest(frame)
        if taken:
            self._append(frame)

    def add_tick(self, tick: Tick) -> None:
        """A recording's tick: its frame judged here (its recorded findings left aside)."""
        self.add(tick.frame)

    def add_block(self, block: Block) -> None:
        """A recording's block of ticks, as ``add`` of each of its frames would take them:
        in columns where it can (``columnar``), frame by frame where it cannot."""
        times = block.times
        start = self._record_from
        columns = columns_of(block) if self._at_once(times) else None
        if columns is not None:
            if start is not None and times[0] >= start:
                self._begin()
            self.monitor.take(columnar.BlockTicks(block, columns))
            self._last = times[-1]
            if self._record_from is None:  # past the warm-up: the report's columns too
                self._extend(times, columns.gpus, _PLACES)
            return
        for k in range(len(block)):
            self.add(block.frame(k))

    def add_all(self, frames: Iterable[Frame]) -> None:
        for frame in frames:
            self.add(frame)

    def _judge_last(self) -> None:
        latest = self.monitor.latest
        if latest is not None:
            # the last tick judged too, however the cadence fell: the run ends here
            self.runlog.add(latest, self.monitor.advisor.update(self.monitor.history, force=True))


def recording_collector(header: Header, name: str, record_from: float | None = None) -> Collector:
    """The collector of a recording's report (``name``: the file's): judged at the
    report's cadence."""
    return Collector(
        header.devices,
        header.source,
        header.interval_s,
        origin=f"recording {name}",
        thresholds=recording_thresholds(header.interval_s),
        record_from=record_from,
    )


def run_of_monitor(monitor: Monitor, origin: str) -> Run:
    """The run a monitor holds: its history window, its finding episodes and process spans
    (what the app shows is what its report says)."""
    history = monitor.history
    times = history.times()
    tracks = {}
    for device in monitor.devices:
        values = {m: _floats(history.series(device.index, m), len(times)) for m in METRICS}
        reasons = history.reasons(device.index)
        tracks[device.index] = Track(device, values, reasons)
    log = monitor.runlog
    start = times[0] if times else 0.0
    episodes = [dataclasses.replace(e, open=False) for e in log.episodes if e.until >= start]
    spans = [s for s in log.spans if s.end >= start]
    return Run(
        source=monitor.source,
        devices=monitor.devices,
        interval_s=monitor.interval_s,
        times=times,
        tracks=tracks,
        episodes=episodes,
        spans=spans,
        thresholds=monitor.thresholds,
        origin=origin,
        notices=_too_short(times, monitor.thresholds),
        judged_live=True,
    )


def _too_short(times: Sequence[float], thresholds: Thresholds) -> list[str]:
    """A run shorter than the advisor's window: its rules could not judge yet, so time no
    finding covered is not proof of health."""
    span = times[-1] - times[0] if len(times) > 1 else 0.0
    if span >= thresholds.window_s:
        return []
    return [
        f"the run is {math.floor(span)} s long, shorter than the {thresholds.window_s:g} s of "
        "readings most of the advisor's rules need: those could not judge it yet (rules "
        "over shorter windows did), so time no finding covers is not proof of health"
    ]


def _floats(values: Sequence[float], length: int) -> Sequence[float]:
    """A history series, as long as its times (a GPU that appeared late: NaN before)."""
    if len(values) == length:
        return values
    return [NAN] * (length - len(values)) + list(values) if len(values) < length else values


def finite(value: float) -> bool:
    return not math.isnan(value) and not math.isinf(value)
