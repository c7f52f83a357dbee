"""Where the GPU time went: every tick of every GPU given to exactly one cause, so the
shares of each GPU add up to its wall time.

A tick's cause, first that applies:

1. no reading of the GPU (absent, lost, a gap in the recording): **not running**;
2. a finding at warning or above covers it (its episode, from ``since`` to ``until``;
   an info finding says there is nothing to act on, "at its default power limit under a
   heavy load: normal for this board", and costs nothing): idle-allocated gives
   **idle, memory held**; thermal throttling gives **thermal** and power capping gives
   **power capped**, each only where the tick's own clock-event reasons show it (the
   finding's stretch is widened back over the throttled ticks just before it, which the
   rule's window needed to see, as far as window and start delay reach; with the reasons
   unread, the whole episode counts);
   input starvation, I/O waits and a saturated link give **starved for input**; a
   straggler's peers, ranks of its job, give **waiting on a straggler**;
3. the GPU did no work that tick: **idle, memory held** with at least
   ``idle_allocated_bytes`` in use, else **not running**;
4. anything else, a stretch no finding covered: **busy, unthrottled**.

What each cause cost, in GPU time lost: the SM clock given up to a throttle (against
the board's maximum), the share of time the GPU waited (starved, straggler), all of it
for an idle or unused GPU.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Final

from gputui.core import clock_events as ce
from gputui.core.config import Thresholds
from gputui.core.names import Metric, RuleId, Severity
from gputui.core.records import frozen
from gputui.exporters.report.run import Run, Track, judged_less_often_s
from gputui.sampling.history import NO_REASONS
from gputui.sampling.runlog import Episode, Span


class Cause(str, Enum):
    BUSY = "busy"
    THERMAL = "thermal"
    POWER = "power"
    STARVED = "starved"
    STRAGGLER = "straggler"
    IDLE_HELD = "idle-held"
    NOT_RUNNING = "not-running"

    def __str__(self) -> str:
        return str(self.value)

    @property
    def label(self) -> str:
        return LABELS[self]


LABELS: Final = {
    Cause.BUSY: "busy, unthrottled",
    Cause.THERMAL: "thermally throttled",
    Cause.POWER: "power capped",
    Cause.STARVED: "starved for input",
    Cause.STRAGGLER: "waiting on a straggler",
    Cause.IDLE_HELD: "idle, memory held",
    Cause.NOT_RUNNING: "not running",
}
CAUSES: Final = tuple(Cause)
_CODE: Final = {cause: code for code, cause in enumerate(CAUSES)}

#: the findings that give a tick its cause
RULES: Final[dict[Cause, tuple[RuleId, ...]]] = {
    Cause.IDLE_HELD: (RuleId.IDLE_ALLOCATED,),
    Cause.THERMAL: (RuleId.THERMAL_THROTTLE, RuleId.HW_SLOWDOWN),
    Cause.POWER: (RuleId.POWER_CAP, RuleId.POWER_LIMIT_LOWERED),
    Cause.STARVED: (RuleId.INPUT_STARVED, RuleId.IO_BOUND, RuleId.PCIE_SATURATED),
    Cause.STRAGGLER: (RuleId.STRAGGLER,),
}
#: the clock-event reasons a throttle's tick must show
BITS: Final = {
    Cause.THERMAL: ce.THERMAL_BITS | ce.HW_SLOWDOWN,
    Cause.POWER: ce.SW_POWER_CAP | ce.HW_POWER_BRAKE,
}
#: the order a tick's finding causes are tried in
PRECEDENCE: Final = (Cause.IDLE_HELD, Cause.THERMAL, Cause.POWER, Cause.STARVED, Cause.STRAGGLER)


@frozen
class Stretch:
    """A stretch of one cause on one GPU: short interruptions (under the advisor's window)
    do not split it."""

    gpu: int
    cause: Cause
    start: float
    end: float
    seconds: float  # time given to the cause inside it
    lost_s: float  # GPU time lost inside it
    figure: str  # what it cost, in the cause's own terms ("-31 % SM clock")


@dataclass
class Account:
    """One GPU's (or all GPUs') time by cause, in seconds; ``wall_s`` their sum."""

    wall_s: float = 0.0
    seconds: dict[Cause, float] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0.0))
    lost_s: dict[Cause, float] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0.0))
    worst: dict[Cause, Stretch] = field(default_factory=dict)

    def share(self, cause: Cause) -> float:
        return self.seconds[cause] / self.wall_s if self.wall_s > 0 else 0.0

    def merge(self, other: Account) -> None:
        self.wall_s += other.wall_s
        for cause in CAUSES:
            self.seconds[cause] += other.seconds[cause]
            self.lost_s[cause] += other.lost_s[cause]
            mine, theirs = self.worst.get(cause), other.worst.get(cause)
            if theirs is not None and (mine is None or _worse(theirs, mine)):
                self.worst[cause] = theirs


@dataclass
class Accounting:
    wall_s: float
    gpus: dict[int, Account]
    total: Account  # every GPU together: GPU-seconds
    #: per GPU, each tick's cause (an index into ``CAUSES``), for the charts
    causes: dict[int, bytearray]


def account(run: Run) -> Accounting:
    times = run.times
    wall = (times[-1] - times[0]) if len(times) > 1 else 0.0
    # a tick lasts until the next, at most three intervals or two of the live judgements
    # (a report's own, slower judging is no gap in the readings)
    live_judge_s = run.thresholds.judge_every_s - judged_less_often_s(run.thresholds)
    gap = max(3.0 * run.interval_s, 2.0 * live_judge_s)
    gpus: dict[int, Account] = {}
    causes: dict[int, bytearray] = {}
    total = Account()
    peers = _straggler_peers(run)
    for index, track in run.tracks.items():
        codes = classify(run, track, peers.get(index, []))
        causes[index] = codes
        gpus[index] = _tally(run, track, codes, gap)
        total.merge(gpus[index])
    return Accounting(wall, gpus, total, causes)


def _covering(times: Sequence[float], episodes: Sequence[Episode], after_s: float) -> bytearray:
    """1 for each tick inside one of the episodes, each reaching ``after_s`` past where it
    was last seen (judged less often than live: the ticks live would still have seen it)."""
    out = bytearray(len(times))
    for episode in episodes:
        lo = bisect.bisect_left(times, episode.since)
        hi = bisect.bisect_right(times, episode.until + after_s)
        if hi > lo:
            out[lo:hi] = b"\x01" * (hi - lo)
    return out


def _gated(
    covered: bytearray, reasons: Sequence[int], bits: int, times: Sequence[float], reach_s: float
) -> bytearray:
    """A throttle's ticks: inside its episodes where the tick's reasons show it (or were
    not read), and the throttled ticks just before each episode, as far back as the rule's
    window and start delay reach (what it needed to see before it could speak)."""
    out = bytearray(len(covered))
    n = len(covered)
    i = 0
    while i < n:
        if not covered[i]:
            i += 1
            continue
        j, since = i - 1, times[i] - reach_s
        while j >= 0 and not out[j] and times[j] >= since and _shows(reasons[j], bits):
            out[j] = 1
            j -= 1
        while i < n and covered[i]:
            mask = reasons[i]
            if mask == NO_REASONS or mask & bits:
                out[i] = 1
            i += 1
    return out


def _shows(mask: int, bits: int) -> bool:
    return mask != NO_REASONS and bool(mask & bits)


def _straggler_peers(run: Run) -> dict[int, list[Episode]]:
    """Per GPU, the straggler episodes it waited on: those of another GPU whose processes
    share a parent (one launcher's ranks) with its own during the episode; the straggler
    itself waits on nobody, and counts under its own cause."""
    by_gpu: dict[int, list[Span]] = {}
    for span in run.spans:
        by_gpu.setdefault(span.gpu, []).append(span)
    out: dict[int, list[Episode]] = {}
    for episode in run.episodes:
        slow = episode.finding.gpu
        if episode.finding.rule is not RuleId.STRAGGLER or slow is None or not _charged(episode):
            continue
        parents = _parents(by_gpu.get(slow, ()), episode)
        for gpu, spans in by_gpu.items():
            if gpu != slow and parents & _parents(spans, episode):
                out.setdefault(gpu, []).append(episode)
    return out


def _parents(spans: Sequence[Span], episode: Episode) -> set[int]:
    return {
        s.ppid
        for s in spans
        if s.ppid is not None and s.start <= episode.until and s.end >= episode.since
    }


def _charged(episode: Episode) -> bool:
    """Whether a finding's episode gives its ticks a cause: one at warning or above."""
    return episode.finding.severity.rank >= Severity.WARNING.rank


def classify(run: Run, track: Track, waited_on: Sequence[Episode]) -> bytearray:
    """Each tick's cause on one GPU, as an index into ``CAUSES``."""
    times = run.times
    gpu = track.device.index
    mine = [e for e in run.episodes if e.finding.gpu == gpu and _charged(e)]
    cover: dict[Cause, bytearray] = {}
    later = judged_less_often_s(run.thresholds)
    reach = run.thresholds.window_s + run.thresholds.start_after_s + 2.0 * later
    for cause in PRECEDENCE:
        episodes = [e for e in mine if e.finding.rule in RULES[cause]]
        if cause is Cause.STRAGGLER:
            episodes = list(waited_on)
        covered = _covering(times, episodes, later)
        bits = BITS.get(cause)
        cover[cause] = (
            covered if bits is None else _gated(covered, track.reasons, bits, times, reach)
        )
    t = run.thresholds
    util = track.values[Metric.UTIL_GPU]
    activity = track.values[Metric.SM_ACTIVITY]
    power = track.values[Metric.POWER_W]
    clock = track.values[Metric.SM_CLOCK_MHZ]
    used = track.values[Metric.MEM_USED]
    order = [(cover[c], _CODE[c]) for c in PRECEDENCE]
    busy, idle_held, off = _CODE[Cause.BUSY], _CODE[Cause.IDLE_HELD], _CODE[Cause.NOT_RUNNING]
    out = bytearray(len(times))
    for i in range(len(times)):
        u = util[i]
        if u != u:
            u = activity[i]
        if u != u and power[i] != power[i] and clock[i] != clock[i]:
            out[i] = off  # no reading at all
            continue
        for covered, code in order:
            if covered[i]:
                out[i] = code
                break
        else:
            if u == u and u <= t.idle_util_pct:
                m = used[i]
                out[i] = idle_held if m == m and m >= t.idle_allocated_bytes else off
            else:
                out[i] = busy
    return out


def _tally(run: Run, track: Track, codes: bytearray, gap: float) -> Account:
    """Seconds and GPU time lost by cause: each tick lasts until the next one, at most
    ``gap``; the rest of a longer gap had no reading (not running)."""
    times = run.times
    acc = Account()
    costs = _costs(track, codes)
    seconds = [0.0] * len(CAUSES)
    lost = [0.0] * len(CAUSES)
    off = _CODE[Cause.NOT_RUNNING]
    for i in range(len(times) - 1):
        dt = times[i + 1] - times[i]
        code = codes[i]
        if dt > gap:
            seconds[off] += dt - gap
            lost[off] += dt - gap
            dt = gap
        seconds[code] += dt
        lost[code] += dt * costs[i]
    for cause in CAUSES:
        acc.seconds[cause] = seconds[_CODE[cause]]
        acc.lost_s[cause] = lost[_CODE[cause]]
    acc.wall_s = sum(seconds)
    for stretch in stretches(run, track, codes, gap, costs):
        held = acc.worst.get(stretch.cause)
        if held is None or _worse(stretch, held):
            acc.worst[stretch.cause] = stretch
    return acc


def _costs(track: Track, codes: bytearray) -> list[float]:
    """Each tick's share of GPU time lost to its cause."""
    util = track.values[Metric.UTIL_GPU]
    clock = track.values[Metric.SM_CLOCK_MHZ]
    top = _clock_ceiling(track)
    busy = _CODE[Cause.BUSY]
    whole = {_CODE[Cause.NOT_RUNNING], _CODE[Cause.IDLE_HELD]}  # all of the tick lost
    return [
        0.0 if code == busy else 1.0 if code in whole else _cost(CAUSES[code], u, c, top)
        for code, u, c in zip(codes, util, clock, strict=True)
    ]


def _cost(cause: Cause, util: float, clock: float, top: float | None) -> float:
    """The share of a tick's GPU time a cause took."""
    if cause is Cause.BUSY:
        return 0.0
    if cause in (Cause.THERMAL, Cause.POWER):
        if top is None or clock != clock:
            return 0.0
        return max(0.0, 1.0 - clock / top)
    if cause in (Cause.STARVED, Cause.STRAGGLER):
        return max(0.0, 1.0 - util / 100.0) if util == util else 0.0
    return 1.0


def _clock_ceiling(track: Track) -> float | None:
    """The SM clock a tick's clock is held against: the board's maximum, or the highest
    the run saw where the board did not say."""
    if track.device.max_sm_clock_mhz:
        return float(track.device.max_sm_clock_mhz)
    seen = [c for c in track.values[Metric.SM_CLOCK_MHZ] if c == c and c > 0]
    return max(seen) if seen else None


def _worse(a: Stretch, b: Stretch) -> bool:
    return (a.lost_s, a.seconds) > (b.lost_s, b.seconds)


def stretches(
    run: Run, track: Track, codes: bytearray, gap: float, costs: Sequence[float]
) -> Iterator[Stretch]:
    """Each stretch of a cause other than busy on one GPU, in time order: a cause's ticks
    with no more than the advisor's window (or the tick gap) between two of them."""
    times = run.times
    merge = max(run.thresholds.window_s, gap)
    found: list[Stretch] = []
    for code in sorted(set(codes) - {_CODE[Cause.BUSY]}):
        ticks = [i for i, c in enumerate(codes) if c == code]
        group = [ticks[0]]
        for i in ticks[1:]:
            if times[i] - times[group[-1]] > merge:
                found.append(_stretch(run, track, CAUSES[code], group, gap, costs))
                group = []
            group.append(i)
        found.append(_stretch(run, track, CAUSES[code], group, gap, costs))
    yield from sorted(found, key=lambda s: (s.start, _CODE[s.cause]))


def _stretch(
    run: Run, track: Track, cause: Cause, ticks: list[int], gap: float, costs: Sequence[float]
) -> Stretch:
    times = run.times
    last = len(times) - 1
    seconds = lost = 0.0
    for i in ticks:
        dt = min(times[i + 1] - times[i], gap) if i < last else 0.0
        seconds += dt
        lost += dt * costs[i]
    end = times[ticks[-1] + 1] if ticks[-1] < last else times[ticks[-1]]
    return Stretch(
        gpu=track.device.index,
        cause=cause,
        start=times[ticks[0]],
        end=end,
        seconds=seconds,
        lost_s=lost,
        figure=_figure(cause, track, ticks, _clock_ceiling(track)),
    )


def _mean(values: Sequence[float], ticks: Sequence[int]) -> float | None:
    known = [values[i] for i in ticks if values[i] == values[i]]
    return sum(known) / len(known) if known else None


def _figure(cause: Cause, track: Track, ticks: Sequence[int], top: float | None) -> str:
    if cause in (Cause.THERMAL, Cause.POWER):
        clock = _mean(track.values[Metric.SM_CLOCK_MHZ], ticks)
        if clock is None or not top:
            return "SM clock not read"
        return f"-{max(0.0, 100.0 * (1.0 - clock / top)):.0f} % SM clock"
    if cause in (Cause.STARVED, Cause.STRAGGLER):
        util = _mean(track.values[Metric.UTIL_GPU], ticks)
        return "utilisation not read" if util is None else f"{util:.0f} % utilisation"
    if cause is Cause.IDLE_HELD:
        used = _mean(track.values[Metric.MEM_USED], ticks)
        return "memory not read" if used is None else f"{used / 2**30:.1f} GiB held, no work"
    return "no work, no reading" if cause is Cause.NOT_RUNNING else ""


def hours(seconds: float) -> str:
    """GPU time as hours, or minutes below one."""
    if seconds >= 3600.0 or seconds == 0.0:
        return f"{seconds / 3600.0:.2f} h"
    return f"{seconds / 60.0:.1f} min" if seconds >= 60.0 else f"{seconds:.0f} s"


def is_finite(value: float) -> bool:
    return math.isfinite(value)


__all__ = ["CAUSES", "Account", "Accounting", "Cause", "Stretch", "Thresholds", "account"]
