"""Where the GPU time went: every tick of every GPU given to exactly one cause, so the
shares of each GPU add up to its wall time.

A tick's cause, first that applies:

1. no reading of the GPU (absent, lost, a gap in the recording): **not running**;
2. a finding at warning or above covers it (its episode, from ``since`` to ``until``;
   an info finding says there is nothing to act on and gives no cause, but a throttle's:
   a board "at its default power limit under a heavy load: normal for this board" is
   still held down, and its clock-event reasons say so tick by tick): idle-allocated gives
   **idle, memory held**; thermal throttling gives **thermal** and power capping gives
   **power capped**, each only where the tick's own clock-event reasons show it (the
   finding's stretch is widened back over the throttled ticks just before it, which the
   rule's window needed to see, as far as window and start delay reach; with the reasons
   unread, the whole episode counts);
   input starvation, I/O waits and a saturated link give **starved for input**; a
   straggler's peers, ranks of its job, give **waiting on a straggler**; a hung
   collective (every rank of the job) and a GPU busy without work give **hung**, from
   when the rule saw it begin (before the others: nothing else runs while it hangs);
3. the GPU did no work that tick: **idle, memory held** with at least
   ``idle_allocated_bytes`` in use, else **not running**;
4. anything else, a stretch no finding covered: **busy, unthrottled**.

What each cause cost, in GPU time lost: the SM clock given up to a throttle (against
the board's maximum), the share of time the GPU waited (starved, straggler), all of it
for a hung, idle or unused GPU (a hung GPU's utilisation reads 100 %: none of it is work).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from itertools import compress, islice, pairwise
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
    HUNG = "hung"
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
    Cause.HUNG: "hung (busy without work)",
    Cause.IDLE_HELD: "idle, memory held",
    Cause.NOT_RUNNING: "not running",
}
CAUSES: Final = tuple(Cause)
_CODE: Final = {cause: code for code, cause in enumerate(CAUSES)}

#: the findings that give a tick its cause
RULES: Final[dict[Cause, tuple[RuleId, ...]]] = {
    Cause.HUNG: (RuleId.COLLECTIVE_HANG, RuleId.BUSY_NO_WORK),
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
PRECEDENCE: Final = (
    Cause.HUNG,
    Cause.IDLE_HELD,
    Cause.THERMAL,
    Cause.POWER,
    Cause.STARVED,
    Cause.STRAGGLER,
)


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
    ticks = _ticks(run, gap)
    gpus: dict[int, Account] = {}
    causes: dict[int, bytearray] = {}
    total = Account()
    peers = _straggler_peers(run)
    for index, track in run.tracks.items():
        codes = classify(run, track, peers.get(index, []))
        causes[index] = codes
        gpus[index] = _tally(track, codes, ticks)
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
    for lo, hi in _runs(covered):
        j, since = lo - 1, times[lo] - reach_s
        while j >= 0 and not out[j] and times[j] >= since and _shows(reasons[j], bits):
            out[j] = 1
            j -= 1
        out[lo:hi] = _showing(reasons[lo:hi], bits)
    return out


def _runs(flags: bytes | bytearray) -> Iterator[tuple[int, int]]:
    """Each stretch of ones in flags of ones and zeros, as index bounds."""
    lo = flags.find(1)
    while lo >= 0:
        hi = flags.find(0, lo)
        hi = len(flags) if hi < 0 else hi
        yield lo, hi
        lo = flags.find(1, hi)


def _showing(masks: Sequence[int], bits: int) -> bytes:
    """1 for each mask that shows one of ``bits`` or was not read, else 0 (a stretch holds
    few masks: each is judged once)."""
    said = {mask: mask == NO_REASONS or bool(mask & bits) for mask in set(masks)}
    return bytes(map(said.__getitem__, masks))


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


def _charged(episode: Episode, cause: Cause | None = None) -> bool:
    """Whether a finding's episode gives its ticks a cause: one at warning or above, or a
    throttle's at any severity (``cause`` in ``BITS``: only its ticks whose own reasons
    show the throttle count, and those clocks were held down, by design or not)."""
    return cause in BITS or episode.finding.severity.rank >= Severity.WARNING.rank


#: a tick's key: bit k set where the findings of ``PRECEDENCE[k]`` cover it, and above
#: those what its readings say: work, no work with memory held, no work, no reading at all
_WORK, _HELD, _UNUSED, _UNREAD = (said << len(PRECEDENCE) for said in range(4))


def _decide(key: int) -> int:
    """A tick's cause (its code) from its key."""
    said = key & _UNREAD
    if said == _UNREAD:
        return _CODE[Cause.NOT_RUNNING]
    for bit, cause in enumerate(PRECEDENCE):
        if key >> bit & 1:
            return _CODE[cause]
    plain = {_WORK: Cause.BUSY, _HELD: Cause.IDLE_HELD, _UNUSED: Cause.NOT_RUNNING}
    return _CODE[plain[said]]


#: every key's code, for ``bytes.translate``: a whole track decided at once
_DECIDE: Final = bytes(_decide(key) for key in range(_UNREAD + (1 << len(PRECEDENCE)))).ljust(
    256, b"\x00"
)
assert len(_DECIDE) == 256, "a tick's key is one byte: at most six causes come from findings"


def classify(run: Run, track: Track, waited_on: Sequence[Episode]) -> bytearray:
    """Each tick's cause on one GPU, as an index into ``CAUSES``."""
    times = run.times
    gpu = track.device.index
    mine = [e for e in run.episodes if e.finding.gpu == gpu]
    later = judged_less_often_s(run.thresholds)
    reach = run.thresholds.window_s + run.thresholds.start_after_s + 2.0 * later
    # the keys of all ticks as one integer, a byte a tick: ``|`` and ``<<`` set a bit of
    # every tick at once (flags are 0 or 1, so no bit spills into the next tick's byte)
    keys = int.from_bytes(_readings(track, run.thresholds), "little")
    for bit, cause in enumerate(PRECEDENCE):
        episodes = [e for e in mine if e.finding.rule in RULES[cause] and _charged(e, cause)]
        if cause is Cause.STRAGGLER:
            episodes = list(waited_on)
        covered = _covering(times, episodes, later)
        bits = BITS.get(cause)
        if bits is not None:
            covered = _gated(covered, track.reasons, bits, times, reach)
        keys |= int.from_bytes(covered, "little") << bit
    return bytearray(keys.to_bytes(len(times), "little").translate(_DECIDE))


#: ticks a block in ``_readings``: a block whose utilisation was read and never idle is
#: all work, told at C speed
_BLOCK: Final = 4096


def _readings(track: Track, t: Thresholds) -> bytearray:
    """What each tick's readings say, as key bits: the GPU worked; it did no work (its
    utilisation, or SM activity where that was not read, at most ``idle_util_pct``) with
    at least ``idle_allocated_bytes`` in use, or without; it gave no reading at all."""
    v = track.values
    util, activity, used = v[Metric.UTIL_GPU], v[Metric.SM_ACTIVITY], v[Metric.MEM_USED]
    idle = t.idle_util_pct
    held: float = t.idle_allocated_bytes
    if float(held) == held:  # the same comparisons, without an int to convert each time
        held = float(held)
    said = bytearray()
    for lo in range(0, len(util), _BLOCK):
        hi = lo + _BLOCK
        block = util[lo:hi]
        total = sum(block)
        if total == total and min(block) > idle:  # no NaN, no idle tick
            said += bytes(len(block))
            continue
        said += bytes(
            [
                (_HELD if m >= held else _UNUSED)  # NaN compares false: none held
                if (u <= idle if u == u else a <= idle)
                else (_UNREAD if u != u and a != a else _WORK)
                for u, a, m in zip(block, activity[lo:hi], used[lo:hi], strict=True)
            ]
        )
    power, clock = v[Metric.POWER_W], v[Metric.SM_CLOCK_MHZ]
    for i in _found(said, _UNREAD):
        if power[i] == power[i] or clock[i] == clock[i]:
            said[i] = _WORK  # no utilisation, but a reading: not idle as far as anyone knows
    return said


def _found(data: bytearray, value: int) -> Iterator[int]:
    i = data.find(value)
    while i >= 0:
        yield i
        i = data.find(value, i + 1)


@dataclass(frozen=True)
class _Ticks:
    """A run's ticks as the tally reads them, the same for each of its GPUs."""

    times: list[float]
    after: list[float]  # when each tick ends: the next one's time (the last: its own)
    dts: list[float]  # how long each lasts: until the next, at most the gap (the last: 0)
    over: list[tuple[int, float]]  # each tick followed by a longer gap, and the rest of it
    merge: float  # a cause's ticks further apart than this are two stretches
    apart: list[int]  # each tick followed by the next more than ``merge`` later
    #: no fewer other ticks between two of a cause's can put them ``merge`` apart, but
    #: across a longer gap (half what the longest tick outside gaps allows: no rounding
    #: of a time can matter)
    least: int


def _ticks(run: Run, gap: float) -> _Ticks:
    times = list(run.times)
    after = times[1:] + times[-1:]
    raw = list(map(operator.sub, after, times))
    merge = max(run.thresholds.window_s, gap)
    longest = max(raw, default=0.0)
    if longest <= gap:
        return _Ticks(times, after, raw, [], merge, [], _least(merge, longest))
    over = [(i, dt - gap) for i, dt in enumerate(raw) if dt > gap]
    apart = [i for i, _ in over if raw[i] > merge]
    inside = max((dt for dt in raw if dt <= gap), default=0.0)
    dts = [min(dt, gap) for dt in raw]
    return _Ticks(times, after, dts, over, merge, apart, _least(merge, inside))


def _least(merge: float, longest: float) -> int:
    if longest <= 0.0:
        return 1
    return max(1, int(min(merge / (2.0 * longest), 2.0**31)))


def _added(values: Iterable[float]) -> float:
    """0.0 plus each value in turn: a tick-by-tick loop's sum to the last bit, in C
    (``sum`` may round otherwise: from Python 3.12 it compensates)."""
    return functools.reduce(operator.add, values, 0.0)


#: per code, a ``bytes.translate`` table that gives 1 for the code and 0 for the others
_ONLY: Final = tuple(bytes(int(key == code) for key in range(256)) for code in range(len(CAUSES)))


@dataclass
class _Lane:
    """One cause's ticks on one GPU, in order: which they are (1 in ``mask``), how long
    each lasted and what each lost (None: busy, nothing)."""

    cause: Cause
    mask: bytearray
    dts: list[float]
    lost: list[float] | None
    #: the sums of both over all its ticks in order (a stretch that holds them all):
    #: (lost, seconds); None where unknown
    whole: tuple[float, float] | None = None


def _tally(track: Track, codes: bytearray, ticks: _Ticks) -> Account:
    """Seconds and GPU time lost by cause: each tick lasts until the next one, at most
    the gap; the rest of a longer gap had no reading (not running)."""
    acc = Account()
    top = _clock_ceiling(track)
    worst: list[tuple[float, int, Stretch]] = []
    for code, cause in enumerate(CAUSES):
        if code not in codes and not (cause is Cause.NOT_RUNNING and ticks.over):
            continue
        mask = codes.translate(_ONLY[code])
        dts = list(compress(ticks.dts, mask))
        lane = _Lane(cause, mask, dts, _lost(cause, track, mask, dts, top))
        acc.seconds[cause], acc.lost_s[cause], lane.whole = _tallied(lane, ticks, codes[-1] == code)
        if lane.lost is not None and dts:
            stretch = _worst(track, lane, ticks, top)
            worst.append((ticks.times[codes.index(code)], code, stretch))
    acc.wall_s = sum(acc.seconds.values())
    for _, _, stretch in sorted(worst, key=lambda found: found[:2]):
        acc.worst[stretch.cause] = stretch  # in the order each cause first came
    return acc


def _tallied(
    lane: _Lane, ticks: _Ticks, ends_run: bool
) -> tuple[float, float, tuple[float, float] | None]:
    """A cause's seconds and GPU time lost, added tick by tick in order, the last tick
    lasting no time; for not running, with the rest of each longer gap. Then the lane's
    ``whole``, where the same sums give it."""
    if lane.cause is Cause.NOT_RUNNING:
        seconds = _added(_off_time(lane.mask, ticks))
        return seconds, seconds, None  # all of it lost
    dts, lost = lane.dts, lane.lost
    counted = len(dts) - ends_run
    seconds = _added(islice(dts, counted))
    if lost is None:
        return seconds, 0.0, None
    lost_s = seconds if lost is dts else _added(islice(lost, counted))
    # over all its ticks: with the last one's (no time) where it is the cause's
    whole = (lost_s + lost[-1], seconds + dts[-1]) if ends_run else (lost_s, seconds)
    return seconds, lost_s, whole


def _off_time(mask: bytearray, ticks: _Ticks) -> Iterator[float]:
    """The time not running, as the tally adds it: each such tick's, and where a longer
    gap follows a tick, the rest of the gap before that tick's own (the last tick lasts no
    time)."""
    pieces: list[Iterable[float]] = []
    lo, end = 0, len(ticks.dts) - 1
    for i, rest in ticks.over:
        pieces += (compress(ticks.dts[lo:i], mask[lo:i]), (rest,))
        lo = i
    pieces.append(compress(ticks.dts[lo:end], mask[lo:end]))
    return itertools.chain.from_iterable(pieces)


def _lost(
    cause: Cause, track: Track, mask: bytearray, dts: list[float], top: float | None
) -> list[float] | None:
    """The GPU time each of a cause's ticks lost (none for busy): a throttle, the SM clock
    given up against the board's maximum; waiting, the share of time the GPU did no work;
    idle or unused, all of it."""
    if cause is Cause.BUSY:
        return None
    if cause in (Cause.THERMAL, Cause.POWER):
        return _given_up(dts, compress(track.values[Metric.SM_CLOCK_MHZ], mask), top)
    if cause in (Cause.STARVED, Cause.STRAGGLER):
        return _given_up(dts, compress(track.values[Metric.UTIL_GPU], mask), 100.0)
    return dts  # each tick's time times 1.0: its time


def _given_up(dts: list[float], readings: Iterable[float], full: float | None) -> list[float]:
    """Each tick's time times ``max(0.0, 1.0 - reading / full)``, 0.0 where the reading or
    ``full`` is unknown (a NaN reading gives 0.0 either way)."""
    if full is None:
        return [dt * 0.0 for dt in dts]
    # ``max(0.0, share)`` written out: the same value, and a third of the time
    return [
        dt * (share if (share := 1.0 - reading / full) > 0.0 else 0.0)
        for dt, reading in zip(dts, readings, strict=True)
    ]


def _clock_ceiling(track: Track) -> float | None:
    """The SM clock a tick's clock is held against: the board's maximum, or the highest
    the run saw where the board did not say."""
    if track.device.max_sm_clock_mhz:
        return float(track.device.max_sm_clock_mhz)
    seen = [c for c in track.values[Metric.SM_CLOCK_MHZ] if c == c and c > 0]
    return max(seen) if seen else None


def _worse(a: Stretch, b: Stretch) -> bool:
    return (a.lost_s, a.seconds) > (b.lost_s, b.seconds)


def _worst(track: Track, lane: _Lane, ticks: _Ticks, top: float | None) -> Stretch:
    """The stretch of a cause on one GPU that lost the most (then lasted the longest; the
    first of equals): a stretch is the cause's ticks with no more than the advisor's
    window (or the tick gap) between two of them."""
    mask, dts, lost = lane.mask, lane.dts, lane.lost
    assert lost is not None
    firsts = [mask.find(1), *_splits(mask, ticks)]  # each stretch's first tick
    if len(firsts) == 1 and lane.whole is not None:
        sums = [lane.whole]
    else:
        ranks = itertools.accumulate(mask.count(1, a, b) for a, b in pairwise(firsts))
        sums = []
        for a, b in pairwise([0, *ranks, len(dts)]):
            seconds = _added(dts[a:b])
            sums.append((seconds if lost is dts else _added(lost[a:b]), seconds))
    k = max(range(len(sums)), key=sums.__getitem__)  # (lost, seconds): the first of equals
    first = firsts[k]
    last = mask.rfind(1, 0, firsts[k + 1]) if k + 1 < len(firsts) else mask.rfind(1)
    picked = mask[first : last + 1]
    return Stretch(
        gpu=track.device.index,
        cause=lane.cause,
        start=ticks.times[first],
        end=ticks.after[last],
        seconds=sums[k][1],
        lost_s=sums[k][0],
        figure=_figure(lane.cause, track, lambda v: compress(v[first : last + 1], picked), top),
    )


def _splits(mask: bytearray, ticks: _Ticks) -> list[int]:
    """Where each stretch of a cause but its first begins: at a tick of the cause more than
    ``merge`` after its last one, across other ticks or a gap in the recording."""
    times, merge, n = ticks.times, ticks.merge, len(mask)
    found = {i + 1 for i in ticks.apart if mask[i] and mask[i + 1]}
    # other ticks between two of the cause's: (first, end) of each stretch of them long
    # enough to span ``merge``, and of each with a longer gap inside
    others = [m.span() for m in re.finditer(rb"\x00{%d,}" % ticks.least, mask)]
    others += [
        (mask.rfind(1, 0, i + 1) + 1, mask.find(1, i + 1))
        for i, _ in ticks.over
        if not (mask[i] and mask[i + 1])
    ]
    for lo, hi in others:
        if lo > 0 and 0 <= hi < n and times[hi] - times[lo - 1] > merge:
            found.add(hi)
    return sorted(found)


def _mean(values: Iterable[float]) -> float | None:
    """The mean of the known values (``sum`` of them in order, as ever)."""
    picked = list(values)
    total = sum(picked)
    if total == total:  # no NaN among them: all known
        return total / len(picked) if picked else None
    known = [v for v in picked if v == v]
    return sum(known) / len(known) if known else None


def _figure(
    cause: Cause,
    track: Track,
    picked: Callable[[Sequence[float]], Iterable[float]],
    top: float | None,
) -> str:
    """What a stretch cost, in the cause's own terms; ``picked``: a column's readings at
    the stretch's ticks."""
    if cause in (Cause.THERMAL, Cause.POWER):
        clock = _mean(picked(track.values[Metric.SM_CLOCK_MHZ]))
        if clock is None or not top:
            return "SM clock not read"
        return f"-{max(0.0, 100.0 * (1.0 - clock / top)):.0f} % SM clock"
    if cause in (Cause.STARVED, Cause.STRAGGLER):
        util = _mean(picked(track.values[Metric.UTIL_GPU]))
        return "utilisation not read" if util is None else f"{util:.0f} % utilisation"
    if cause is Cause.IDLE_HELD:
        used = _mean(picked(track.values[Metric.MEM_USED]))
        return "memory not read" if used is None else f"{used / 2**30:.1f} GiB held, no work"
    if cause is Cause.HUNG:
        util, power = (_mean(picked(track.values[m])) for m in (Metric.UTIL_GPU, Metric.POWER_W))
        said = [f"{util:.0f} % utilisation" if util is not None else "utilisation not read"]
        said += [f"{power:.0f} W"] if power is not None else []
        return ", ".join(said) + ", no work"
    return "no work, no reading" if cause is Cause.NOT_RUNNING else ""


def hours(seconds: float) -> str:
    """GPU time as hours, or minutes below one."""
    if seconds >= 3600.0 or seconds == 0.0:
        return f"{seconds / 3600.0:.2f} h"
    return f"{seconds / 60.0:.1f} min" if seconds >= 60.0 else f"{seconds:.0f} s"


def is_finite(value: float) -> bool:
    return math.isfinite(value)


__all__ = ["CAUSES", "Account", "Accounting", "Cause", "Stretch", "Thresholds", "account"]
