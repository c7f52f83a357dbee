"""History: bounded ring buffers and window statistics."""

from __future__ import annotations

import math
import tracemalloc

import pytest

from gputui.core import clock_events as ce
from gputui.core.manual_clock import ManualClock
from gputui.core.model import Frame, GpuSample, XidEvent
from gputui.core.names import Metric
from gputui.sampling.history import MAX_XIDS, NO_REASONS, History
from gputui.sampling.rings import Ring
from gputui.sources.simulated import SimulatedSource, resolve_scenarios


def frame(t: float, **fields: float | int | None) -> Frame:
    return Frame(time=t, gpus=(GpuSample(index=0, **fields),))  # type: ignore[arg-type]


def test_ring_keeps_the_newest_values_in_order() -> None:
    ring = Ring(4)
    for v in range(10):
        ring.append(v)
    assert len(ring) == 4 and ring.tail() == [6, 7, 8, 9]
    assert ring.tail(2) == [8, 9] and ring[0] == 6 and ring[-1] == 9
    assert ring.tail(0) == []


def test_a_gpu_that_appears_late_has_no_readings_before_it() -> None:
    """Every ring of a history moves with one cursor: a GPU first seen at the third frame
    lines up with the times, NaN before it; and a wrap keeps them lined up."""
    history = History(4)
    for i in range(6):
        gpus = [GpuSample(index=0, temp_c=40.0 + i)]
        if i >= 2:
            gpus.append(GpuSample(index=1, temp_c=60.0 + i))
        history.add(Frame(time=float(i), gpus=tuple(gpus)))
    assert history.times() == [2.0, 3.0, 4.0, 5.0]
    assert history.series(0, Metric.TEMP_C) == [42.0, 43.0, 44.0, 45.0]
    assert history.series(1, Metric.TEMP_C) == [62.0, 63.0, 64.0, 65.0]
    late = History(4)
    late.add(frame(0.0, temp_c=40.0))
    late.add(Frame(time=1.0, gpus=(GpuSample(index=0), GpuSample(index=1, temp_c=61.0))))
    assert late.window(1, Metric.TEMP_C, 60) == [61.0]
    assert math.isnan(late.series(1, Metric.TEMP_C)[0]) and len(late.series(1, Metric.TEMP_C)) == 2


def test_window_stats_mean_min_max_slope() -> None:
    history = History(100)
    for i in range(60):
        history.add(frame(1000.0 + i, temp_c=50.0 + 0.5 * i))
    stats = history.stats(0, Metric.TEMP_C, 10)
    assert stats is not None
    assert stats.count == 11  # t-10 .. t inclusive
    assert stats.min == 74.5 and stats.max == 79.5
    assert stats.slope_per_s == pytest.approx(0.5)
    assert stats.span_s == 10


def test_slope_of_large_readings_at_epoch_times() -> None:
    """VRAM in bytes (tens of GB) at epoch-second times: the slope of a 1 MB/s growth
    under noise is the least-squares one, not lost to rounding."""
    history = History(400)
    noise = [((i * 7919) % 13 - 6) * 1e5 for i in range(300)]
    for i in range(300):
        history.add(frame(1_800_000_000.25 + i, mem_used=80e9 + 1e6 * i + noise[i]))
    stats = history.stats(0, Metric.MEM_USED, 299)
    assert stats is not None and stats.slope_per_s is not None
    ts = [float(i) for i in range(300)]
    vs = list(stats.values)
    t_mean, v_mean = sum(ts) / 300, sum(vs) / 300
    expected = sum((t - t_mean) * (v - v_mean) for t, v in zip(ts, vs, strict=True)) / sum(
        (t - t_mean) ** 2 for t in ts
    )
    assert stats.slope_per_s == pytest.approx(expected, rel=1e-9)
    assert stats.slope_per_s == pytest.approx(1e6, rel=0.01)


def test_missing_readings_are_left_out_not_zero() -> None:
    history = History(10)
    history.add(frame(1.0, power_w=None))
    history.add(frame(2.0, power_w=300.0))
    assert history.window(0, Metric.POWER_W, 60) == [300.0]
    assert math.isnan(history.series(0, Metric.POWER_W)[0])
    history2 = History(10)
    history2.add(frame(1.0))
    assert history2.stats(0, Metric.POWER_W, 60) is None


def test_known_reasons_leave_unknown_ticks_out() -> None:
    history = History(100)
    for i in range(10):
        reasons = ce.SW_THERMAL if i % 2 else 0
        history.add(frame(float(i), clock_reasons=reasons))
    history.add(frame(10.0, clock_reasons=None))  # unknown: not counted either way
    known = history.known_reasons(0, 100)
    assert len(known) == 10
    assert sum(1 for r in known if r & ce.THERMAL_BITS) == 5


def test_lost_gpu_records_no_readings() -> None:
    history = History(10)
    history.add(Frame(time=1.0, gpus=(GpuSample(index=0, lost=True, temp_c=50.0),)))
    assert history.window(0, Metric.TEMP_C, 60) == []


def test_a_full_history_does_not_grow_with_more_ticks() -> None:
    # Once the rings are full, every further tick overwrites: three whole turns of the
    # ring add nothing. (A day of ticks through the whole monitor: benchmarks/memory_day.py.)
    clock = ManualClock(0.0)
    source = SimulatedSource(resolve_scenarios("mix", 8), clock=clock)
    source.open()
    frame0 = source.read()
    capacity = 600
    history = History(capacity)
    for i in range(capacity):
        history.add(Frame(time=float(i), gpus=frame0.gpus, host=frame0.host))
    size = history.memory_bytes()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for i in range(capacity, 4 * capacity):
        history.add(Frame(time=float(i), gpus=frame0.gpus, host=frame0.host))
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    growth = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert history.memory_bytes() == size
    assert len(history) == capacity
    assert growth < 64 * 1024, growth
    # 8 GPUs: a float32 per metric and an int64 reason mask per tick, plus host and times
    assert size < 8 * capacity * (len(Metric) * 4 + 8) + capacity * (5 * 4 + 8) + 4096


def test_resized_keeps_the_newest_readings_of_every_ring() -> None:
    from gputui.core.model import Frame, GpuSample, HostSample, XidEvent
    from gputui.core.names import HostMetric, Metric
    from gputui.sampling.history import History

    history = History(10)
    for t in range(8):
        xids = (XidEvent(79, float(t)),) if t == 3 else ()
        gpu = GpuSample(index=0, util_gpu=float(t), clock_reasons=t, xid_events=xids)
        history.add(Frame(time=float(t), gpus=(gpu,), host=HostSample(cpu_percent=t * 2.0)))
    smaller = history.resized(5)
    assert smaller.capacity == 5 and len(smaller) == 5
    assert smaller.times() == [3.0, 4.0, 5.0, 6.0, 7.0]
    assert smaller.series(0, Metric.UTIL_GPU) == [3.0, 4.0, 5.0, 6.0, 7.0]
    assert smaller.known_reasons(0, 100.0) == [3, 4, 5, 6, 7]
    assert smaller.host_series(HostMetric.CPU_PERCENT) == [6.0, 8.0, 10.0, 12.0, 14.0]
    assert [x.code for x in smaller.xids(0, 100.0)] == [79]
    assert smaller.latest is history.latest
    larger = smaller.resized(20)  # room for more: what there is stays, and new readings fit
    larger.add(Frame(time=8.0, gpus=(GpuSample(index=0, util_gpu=8.0),)))
    assert larger.series(0, Metric.UTIL_GPU) == [3.0, 4.0, 5.0, 6.0, 7.0, 8.0]


def test_an_xid_storm_keeps_only_the_latest_events() -> None:
    history = History(10)
    for t in range(50):
        storm = tuple(XidEvent(code=79 if t < 49 else 48, time=float(t)) for _ in range(20))
        history.add(Frame(time=float(t), gpus=(GpuSample(index=0, xid_events=storm),)))
    kept = history.xids(0)
    assert len(kept) == MAX_XIDS and {x.code for x in kept} == {48}


def test_the_rings_grow_with_what_they_hold_and_stop_at_the_capacity() -> None:
    source = SimulatedSource(resolve_scenarios("mix", 4), clock=ManualClock(0.0))
    source.open()
    frame = source.read()
    history = History(3600)
    history.add(Frame(time=0.0, gpus=frame.gpus, host=frame.host))
    a_minute = history.memory_bytes()
    for t in range(1, 3600):
        history.add(Frame(time=float(t), gpus=frame.gpus, host=frame.host))
    an_hour = history.memory_bytes()
    assert an_hour > 20 * a_minute  # a minute's history costs a minute's readings
    for t in range(3600, 5000):
        history.add(Frame(time=float(t), gpus=frame.gpus, host=frame.host))
    assert history.memory_bytes() == an_hour
    assert len(history) == 3600 and history.times()[0] == 1400.0
    assert history.window(0, Metric.TEMP_C, 10) == [frame.gpus[0].temp_c] * 11


def test_a_gpu_that_appears_late_gets_rings_as_long_as_the_others() -> None:
    history = History(1000)
    for t in range(300):
        history.add(Frame(time=float(t), gpus=(GpuSample(index=0, temp_c=50.0),)))
    both = (GpuSample(index=0, temp_c=50.0), GpuSample(index=1, temp_c=60.0))
    for t in range(300, 700):
        history.add(Frame(time=float(t), gpus=both))
    assert history.window(1, Metric.TEMP_C, 1000) == [60.0] * 400
    assert len(history.window(0, Metric.TEMP_C, 1000)) == 700
    assert len(history.resized(500).window(1, Metric.TEMP_C, 1000)) == 400


def test_a_windows_stats_are_those_of_its_readings_before_and_after_the_ring_wraps() -> None:
    """Each window's figures are those of the readings the series holds for it, whatever
    the ring's state: filling, full, wrapped at any point; several windows asked each tick
    (the advisor's), each worked out once a tick."""
    history = History(7)
    for i in range(30):
        temp = None if i % 5 == 3 else 40.0 + (i * 7) % 11
        reasons = None if i % 4 == 1 else i % 3
        history.add(frame(100.0 + i, temp_c=temp, util_gpu=float(i), clock_reasons=reasons))
        for seconds in (0.0, 3.0, 60.0):
            n = min(i + 1, 7, int(seconds) + 1)
            masks = history.reasons(0)[-n:]
            assert history.known_reasons(0, seconds) == [r for r in masks if r != NO_REASONS]
        for seconds in (0.0, 2.0, 4.0, 6.0, 60.0, 2.0):
            for metric in (Metric.TEMP_C, Metric.UTIL_GPU):
                stats = history.stats(0, metric, seconds)
                n = min(i + 1, 7, int(seconds) + 1)
                times = history.times()[-n:]
                values = history.series(0, metric)[-n:]
                known = [(t, v) for t, v in zip(times, values, strict=True) if v == v]
                assert history.window(0, metric, seconds) == [v for _, v in known]
                assert history.span_s(seconds) == (times[-1] - times[0] if n > 1 else 0.0)
                if not known:
                    assert stats is None
                    continue
                assert stats is not None
                assert stats.values == [v for _, v in known]
                assert list(stats.times) == [t for t, _ in known]
                assert (stats.count, stats.min, stats.max) == (
                    len(known),
                    min(v for _, v in known),
                    max(v for _, v in known),
                )
    assert history.stats(5, Metric.TEMP_C, 60.0) is None  # a GPU it never saw
