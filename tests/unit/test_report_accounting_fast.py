"""The report's accounting works on whole tracks at once (bytes, runs of ticks, sums in C);
here it is held, to the last bit, against the plain tick-by-tick loops it replaced, on
random runs: NaN readings, a GPU missing for stretches, clock-event reasons unread, gaps in
the recording, findings that reach past either end, stragglers and their peers, idle and
busy ticks that flicker, boards that do not say their maximum clock."""

from __future__ import annotations

import bisect
import dataclasses
import random
from array import array
from collections.abc import Sequence
from typing import Final
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from gputui.core import clock_events as ce
from gputui.core.model import DeviceInfo, Finding, SourceInfo
from gputui.core.names import Metric, RuleId, Severity, SourceKind
from gputui.exporters.report import account, accounting, recording_thresholds
from gputui.exporters.report.accounting import (
    BITS,
    CAUSES,
    PRECEDENCE,
    RULES,
    Account,
    Cause,
    Stretch,
    _straggler_peers,
    _worse,
)
from gputui.exporters.report.run import METRICS, Run, Track, judged_less_often_s
from gputui.sampling.history import NO_REASONS
from gputui.sampling.runlog import Episode, Span
from tests.hostile import fuzz_settings

NAN: Final = float("nan")
INF: Final = float("inf")
START: Final = 1_800_000_000.0
_CODE: Final = {cause: code for code, cause in enumerate(CAUSES)}
_RULES: Final = (
    RuleId.IDLE_ALLOCATED,
    RuleId.THERMAL_THROTTLE,
    RuleId.HW_SLOWDOWN,
    RuleId.POWER_CAP,
    RuleId.POWER_LIMIT_LOWERED,
    RuleId.INPUT_STARVED,
    RuleId.IO_BOUND,
    RuleId.PCIE_SATURATED,
    RuleId.STRAGGLER,
    RuleId.VRAM_PRESSURE,
)
_MASKS: Final = (NO_REASONS, 0, ce.SW_POWER_CAP, ce.HW_SLOWDOWN, ce.THERMAL_BITS, 0x1, 0x84)


# -- the tick-by-tick accounting, as it was -------------------------------------------------


def _charged(episode: Episode, cause: Cause) -> bool:
    # a throttle's finding at any severity: its ticks' reasons say whether it held
    return cause in BITS or episode.finding.severity.rank >= Severity.WARNING.rank


def _covering(times: Sequence[float], episodes: Sequence[Episode], after_s: float) -> list[int]:
    out = [0] * len(times)
    for episode in episodes:
        lo = bisect.bisect_left(times, episode.since)
        hi = bisect.bisect_right(times, episode.until + after_s)
        out[lo:hi] = [1] * max(0, hi - lo)
    return out


def _shows(mask: int, bits: int) -> bool:
    return mask != NO_REASONS and bool(mask & bits)


def _gated(
    covered: list[int], reasons: Sequence[int], bits: int, times: Sequence[float], reach: float
) -> list[int]:
    out = [0] * len(covered)
    i, n = 0, len(covered)
    while i < n:
        if not covered[i]:
            i += 1
            continue
        j, since = i - 1, times[i] - reach
        while j >= 0 and not out[j] and times[j] >= since and _shows(reasons[j], bits):
            out[j] = 1
            j -= 1
        while i < n and covered[i]:
            if reasons[i] == NO_REASONS or reasons[i] & bits:
                out[i] = 1
            i += 1
    return out


def _classify(run: Run, track: Track, waited_on: Sequence[Episode]) -> bytes:
    times, t = run.times, run.thresholds
    mine = [e for e in run.episodes if e.finding.gpu == track.device.index]
    later = judged_less_often_s(t)
    reach = t.window_s + t.start_after_s + 2.0 * later
    order = []
    for cause in PRECEDENCE:
        episodes = [e for e in mine if e.finding.rule in RULES[cause] and _charged(e, cause)]
        if cause is Cause.STRAGGLER:
            episodes = list(waited_on)
        covered = _covering(times, episodes, later)
        bits = BITS.get(cause)
        if bits is not None:
            covered = _gated(covered, track.reasons, bits, times, reach)
        order.append((covered, _CODE[cause]))
    v = track.values
    out = []
    for i in range(len(times)):
        u = v[Metric.UTIL_GPU][i]
        if u != u:
            u = v[Metric.SM_ACTIVITY][i]
        power, clock = v[Metric.POWER_W][i], v[Metric.SM_CLOCK_MHZ][i]
        if u != u and power != power and clock != clock:
            out.append(_CODE[Cause.NOT_RUNNING])
            continue
        code = next((code for covered, code in order if covered[i]), None)
        if code is None and u == u and u <= t.idle_util_pct:
            m = v[Metric.MEM_USED][i]
            held = m == m and m >= t.idle_allocated_bytes
            code = _CODE[Cause.IDLE_HELD if held else Cause.NOT_RUNNING]
        out.append(_CODE[Cause.BUSY] if code is None else code)
    return bytes(out)


def _clock_ceiling(track: Track) -> float | None:
    if track.device.max_sm_clock_mhz:
        return float(track.device.max_sm_clock_mhz)
    seen = [c for c in track.values[Metric.SM_CLOCK_MHZ] if c == c and c > 0]
    return max(seen) if seen else None


def _mean(values: Sequence[float], ticks: Sequence[int]) -> float | None:
    known = [values[i] for i in ticks if values[i] == values[i]]
    return sum(known) / len(known) if known else None


def _figure(cause: Cause, track: Track, ticks: Sequence[int], top: float | None) -> str:
    v = track.values
    if cause in (Cause.THERMAL, Cause.POWER):
        clock = _mean(v[Metric.SM_CLOCK_MHZ], ticks)
        if clock is None or not top:
            return "SM clock not read"
        return f"-{max(0.0, 100.0 * (1.0 - clock / top)):.0f} % SM clock"
    if cause in (Cause.STARVED, Cause.STRAGGLER):
        util = _mean(v[Metric.UTIL_GPU], ticks)
        return "utilisation not read" if util is None else f"{util:.0f} % utilisation"
    if cause is Cause.IDLE_HELD:
        used = _mean(v[Metric.MEM_USED], ticks)
        return "memory not read" if used is None else f"{used / 2**30:.1f} GiB held, no work"
    return "no work, no reading" if cause is Cause.NOT_RUNNING else ""


def _cost(cause: Cause, util: float, clock: float, top: float | None) -> float:
    if cause is Cause.BUSY:
        return 0.0
    if cause in (Cause.THERMAL, Cause.POWER):
        return 0.0 if top is None or clock != clock else max(0.0, 1.0 - clock / top)
    if cause in (Cause.STARVED, Cause.STRAGGLER):
        return max(0.0, 1.0 - util / 100.0) if util == util else 0.0
    return 1.0


def _tally(run: Run, track: Track, codes: bytes, gap: float) -> Account:
    times, acc = run.times, Account()
    top = _clock_ceiling(track)
    v = track.values
    costs = [
        _cost(CAUSES[c], u, k, top)
        for c, u, k in zip(codes, v[Metric.UTIL_GPU], v[Metric.SM_CLOCK_MHZ], strict=True)
    ]
    seconds, lost = [0.0] * len(CAUSES), [0.0] * len(CAUSES)
    off = _CODE[Cause.NOT_RUNNING]
    for i in range(len(times) - 1):
        dt = times[i + 1] - times[i]
        if dt > gap:
            seconds[off] += dt - gap
            lost[off] += dt - gap
            dt = gap
        seconds[codes[i]] += dt
        lost[codes[i]] += dt * costs[i]
    for cause in CAUSES:
        acc.seconds[cause], acc.lost_s[cause] = seconds[_CODE[cause]], lost[_CODE[cause]]
    acc.wall_s = sum(seconds)
    for stretch in _stretches(run, track, codes, gap, costs):
        held = acc.worst.get(stretch.cause)
        if held is None or _worse(stretch, held):
            acc.worst[stretch.cause] = stretch
    return acc


def _stretches(
    run: Run, track: Track, codes: bytes, gap: float, costs: list[float]
) -> list[Stretch]:
    times = run.times
    merge = max(run.thresholds.window_s, gap)
    found = []
    for code in sorted(set(codes) - {_CODE[Cause.BUSY]}):
        ticks = [i for i, c in enumerate(codes) if c == code]
        group = [ticks[0]]
        for i in ticks[1:]:
            if times[i] - times[group[-1]] > merge:
                found.append(_stretch(run, track, CAUSES[code], group, gap, costs))
                group = []
            group.append(i)
        found.append(_stretch(run, track, CAUSES[code], group, gap, costs))
    return sorted(found, key=lambda s: (s.start, _CODE[s.cause]))


def _stretch(
    run: Run, track: Track, cause: Cause, ticks: list[int], gap: float, costs: list[float]
) -> Stretch:
    times, last = run.times, len(run.times) - 1
    seconds = lost = 0.0
    for i in ticks:
        dt = min(times[i + 1] - times[i], gap) if i < last else 0.0
        seconds += dt
        lost += dt * costs[i]
    end = times[ticks[-1] + 1] if ticks[-1] < last else times[ticks[-1]]
    figure = _figure(cause, track, ticks, _clock_ceiling(track))
    return Stretch(track.device.index, cause, times[ticks[0]], end, seconds, lost, figure)


def _reference(run: Run) -> tuple[dict[int, bytes], dict[int, Account]]:
    t = run.thresholds
    gap = max(3.0 * run.interval_s, 2.0 * (t.judge_every_s - judged_less_often_s(t)))
    peers = _straggler_peers(run)
    codes = {i: _classify(run, track, peers.get(i, [])) for i, track in run.tracks.items()}
    return codes, {i: _tally(run, track, codes[i], gap) for i, track in run.tracks.items()}


# -- random runs ----------------------------------------------------------------------------


def _times(rng: random.Random, n: int) -> array[float]:
    """Mostly whole seconds (ticks exactly a window apart), some jitter, some gaps; from
    a clock's time, or from near zero (every bit of a tick's length counts in a sum)."""
    times, now = array("d"), rng.choice((START, 0.1))
    jitter = rng.random() < 0.5
    for _ in range(n):
        times.append(now)
        if rng.random() < 0.93:
            now += 1.0 + (rng.uniform(-1e-3, 1e-3) if jitter else 0.0)
        else:
            now += rng.choice((2.0, 4.0, 5.0, 6.0, rng.uniform(2.0, 900.0)))
    return times


def _column(rng: random.Random, n: int, choices: Sequence[float], nan: float) -> array[float]:
    out, value, moves = array("f"), rng.choice(choices), rng.choice((0.02, 0.3))
    for _ in range(n):
        if rng.random() < moves:  # readings hold for a while, then move
            value = rng.choice(choices)
        out.append(NAN if rng.random() < nan else value)
    return out


def _track(rng: random.Random, index: int, n: int) -> Track:
    nan = rng.choice((0.0, 0.02, 0.3, 1.0))
    odd = (-INF, INF) if rng.random() < 0.1 else ()  # nonsense a corrupt file could hold
    choices: dict[Metric, Sequence[float]] = {
        Metric.UTIL_GPU: (0.0, 1.0, 2.0, 2.5, 40.0, 99.0, 100.0, 130.0, *odd),
        Metric.SM_ACTIVITY: (0.0, 2.0, 50.0),
        Metric.SM_CLOCK_MHZ: (0.0, 600.0, 1410.0, 1980.0, 2100.0, 1234.5678, *odd),
        Metric.POWER_W: (60.0, 300.0),
        Metric.MEM_USED: (0.0, float(1 << 29), float(1 << 30), float(3 << 30)),
    }
    values = {
        m: _column(rng, n, choices.get(m, (1.0, 4.0, 16.0)), nan if m in choices else 0.0)
        for m in METRICS
    }
    missing = sorted(rng.sample(range(n + 1), 2)) if n and rng.random() < 0.5 else [0, 0]
    for column in values.values():
        column[missing[0] : missing[1]] = array("f", [NAN]) * (missing[1] - missing[0])
    reasons = array("q", (rng.choice(_MASKS) for _ in range(n)))
    reasons[missing[0] : missing[1]] = array("q", [NO_REASONS]) * (missing[1] - missing[0])
    top = rng.choice((None, 0, 1980))
    return Track(DeviceInfo(index, "H100", max_sm_clock_mhz=top), dict(values), reasons)


def _episodes(rng: random.Random, times: Sequence[float], gpus: int) -> list[Episode]:
    start, end = (times[0], times[-1]) if times else (START, START)
    out = []
    for _ in range(rng.randrange(12)):
        since = rng.uniform(start - 20.0, end + 5.0)
        until = min(rng.uniform(since, since + (end - start) / 2 + 10.0), end + 30.0)
        rule, severity = rng.choice(_RULES), rng.choice(tuple(Severity))
        gpu = rng.randrange(gpus + 1) if rng.random() < 0.95 else None
        finding = Finding(rule, severity, gpu, "t", (), (), since, until)
        out.append(Episode(finding, since, until, open=False))
    return out


def _run(seed: int) -> Run:
    rng = random.Random(seed)
    n = rng.choice((0, 1, 2, 3, rng.randrange(4, 60), rng.randrange(60, 400)))
    times = _times(rng, n)
    gpus = rng.randrange(1, 4)
    end = times[-1] if n else START
    spans = [
        Span(g, 100 + g, "rank", None, None, START - 5.0, end + 5.0, ppid=rng.choice((7, 8)))
        for g in range(gpus)
        if rng.random() < 0.8
    ]
    thresholds = dataclasses.replace(
        recording_thresholds(1.0, rng.choice((2.0, 5.0))), window_s=rng.choice((3.0, 6.0, 30.0))
    )
    return Run(
        source=SourceInfo("SIMULATED", SourceKind.SIMULATED),
        devices=tuple(DeviceInfo(g, "H100") for g in range(gpus)),
        interval_s=rng.choice((1.0, 1.0, 2.0)),
        times=times,
        tracks={g: _track(rng, g, n) for g in range(gpus)},
        episodes=_episodes(rng, times, gpus),
        spans=spans,
        thresholds=thresholds,
        origin="test",
    )


@given(st.integers(min_value=0, max_value=2**32), st.sampled_from((3, 64, accounting._BLOCK)))
@fuzz_settings(500)
def test_the_accounting_is_the_tick_by_tick_loops_to_the_last_bit(seed: int, block: int) -> None:
    run = _run(seed)
    codes, accounts = _reference(run)
    with mock.patch.object(accounting, "_BLOCK", block):  # blocks told at once, and not
        result = account(run)
    assert {i: bytes(c) for i, c in result.causes.items()} == codes
    # repr: every float to its last bit, -0.0 told from 0.0, and the order of the worst
    assert repr(result.gpus) == repr(accounts)
    total = Account()
    for acc in accounts.values():
        total.merge(acc)
    assert repr(result.total) == repr(total)


def test_runs_of_no_tick_and_one_tick() -> None:
    for seed in range(200):
        run = _run(seed)
        if len(run.times) < 3:
            codes, accounts = _reference(run)
            result = account(run)
            assert {i: bytes(c) for i, c in result.causes.items()} == codes
            assert repr(result.gpus) == repr(accounts)
