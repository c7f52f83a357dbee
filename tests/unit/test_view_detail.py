"""The detail panel and its history: identity, honest cuts, and sparklines on a fixed time
scale that carry the gauge's own value."""

from __future__ import annotations

from dataclasses import replace

from gputui.core.config import Thresholds
from gputui.core.model import DeviceInfo, Frame, GpuSample, XidEvent
from gputui.core.names import Metric
from gputui.sampling.history import History
from gputui.view.cells import Cell, Row, plain_lines
from gputui.view.detail import View, detail, left_out, span_text
from gputui.view.glyphs import SPARKS
from gputui.view.timeline import Timeline, buckets, scale_for

T = Thresholds()
START = 1_800_000_000.0
DEVICE = DeviceInfo(
    index=3,
    name="NVIDIA H100 80GB HBM3",
    uuid="GPU-6258cbe0-7c1f-f081-e220-a8397b1dcdaf",
    pci_bus_id="00000000:18:00.0",
    max_sm_clock_mhz=1980,
    temp_slowdown_c=89,
    temp_shutdown_c=92,
    power_limit_w=700.0,
)


def _history(seconds: int, util: float = 90.0, start: float = START) -> History:
    history = History(3600)
    for i in range(seconds):
        sample = GpuSample(
            index=3,
            util_gpu=util,
            sm_clock_mhz=1900,
            temp_c=70.0,
            power_w=500.0,
            mem_used=60 << 30,
            mem_total=80 << 30,
            pcie_gen=5,
            pcie_width=16,
            pcie_rx_bps=2e9,
            pcie_tx_bps=3e8,
        )
        history.add(Frame(time=start + i, gpus=(sample,)))
    return history


def _lines(history: History, width: int = 100, height: int = 30, window: int = 300) -> list[str]:
    panel = detail(history.latest, DEVICE, history, Timeline(), View(window, 1.0, width, height), T)
    return plain_lines(panel, width)


def test_identity_uuid_and_bus_id_are_shown() -> None:
    lines = _lines(_history(20))
    ident = next(line for line in lines if line.startswith("ID"))
    assert "GPU-6258cbe0-7c1f-f081-e220-a8397b1dcdaf" in ident and "00000000:18:00.0" in ident


def test_a_short_history_says_how_much_it_covers_and_leaves_the_rest_blank() -> None:
    lines = _lines(_history(40))  # 40 s of a 5 min window
    heading = next(line for line in lines if line.startswith("history:"))
    assert "last 5 min" in heading and "recorded so far" in heading
    util = next(line for line in lines if line.startswith("util "))
    spark = util[8:].rsplit(" ", 2)[0]
    filled = [c for c in spark if c in SPARKS]
    assert 0 < len(filled) < len(spark) / 2  # most of five minutes has no data yet
    assert spark.startswith(" ")  # the unfilled part is on the left, blank
    full = next(line for line in _lines(_history(400)) if line.startswith("history:"))
    assert "recorded so far" not in full


def test_each_sparkline_ends_in_the_gauges_value_and_unit() -> None:
    lines = _lines(_history(60))
    ends = {line.split()[0]: line for line in lines}
    assert ends["util"].endswith(" 90 %")
    assert ends["VRAM"].endswith(" 60.0 GiB")  # the gauge says GiB, so does the history
    assert lines[next(i for i, line in enumerate(lines) if line.startswith("PCIe RX"))].endswith(
        "2.0 GB/s"
    )


def test_a_short_panel_keeps_the_readings_and_says_what_it_left_out() -> None:
    lines = _lines(_history(60), height=5)
    assert len(lines) == 5
    assert lines[0].startswith("Util") and lines[-1].startswith("+")
    assert "ID" in lines[-1] and "history" in lines[-1]


def _left_out_line(history: History, width: int, height: int) -> str:
    lines = _lines(history, width=width, height=height)
    assert len(lines) == height and lines[-1].startswith("+")
    return lines[-1]


def _counted(line: str) -> tuple[int, list[str]]:
    """The count a '+N rows (A, B ×2)' line gives, and each row it names (×2: twice)."""
    count = int(line[1:].split(" ", 1)[0])
    inside = line[line.index("(") + 1 : line.index(")")]
    names: list[str] = []
    for part in inside.split(", "):
        name, _, times = part.partition(" ×")
        names += [name] * int(times or 1)
    return count, names


def test_what_a_short_panel_left_out_is_counted_as_it_is_named() -> None:
    """The count and the rows named agree: the history is no row of the count, and rows of
    one label (three Xids) are named once with how many."""
    history = _history(60)
    latest = history.latest
    assert latest is not None
    xids = tuple(XidEvent(code, latest.time - i) for i, code in enumerate((13, 31, 43)))
    (sample,) = latest.gpus
    history.add(Frame(latest.time + 1, gpus=(replace(sample, xid_events=xids),)))
    full = _lines(history, width=120, height=12)  # every reading, no history
    labels = [line.split()[0] for line in full if line]
    assert labels.count("Xid") == 3 and "history:" not in labels
    for height in (4, 7, 9, 11):
        line = _left_out_line(history, 160, height)
        count, names = _counted(line)
        assert count == len(names) == len(labels) - (height - 1), line
        assert names == labels[height - 1 :], line
        assert line.endswith(" and the history: a taller terminal shows them")
    assert "Xid ×3" in _left_out_line(history, 160, 6)
    # too narrow for a sparkline: a taller terminal would show no history, none is named
    one = Row((Cell("ID      "), Cell("GPU-1")))
    assert left_out([one], history=False) == "+1 row (ID): a taller terminal shows them"


def test_the_scale_is_fixed_and_aligned_to_the_clock() -> None:
    scale = scale_for(300, 1.0, 80, START + 0.4)
    assert scale.bucket_s == 5.0 and scale.columns == 60  # one column = 5 s, 5 min in all
    assert scale.end % 5.0 == 0.0
    assert span_text(5.0) == "5 s" and span_text(300) == "5 min" and span_text(3600) == "1 h"


def test_a_row_changes_only_when_a_bucket_ends() -> None:
    history = _history(120)
    timeline = Timeline()
    drawn = []
    for tick in range(5):  # five ticks inside one 5 s bucket
        now = START + 120 + tick
        if tick:
            history.add(Frame(time=now, gpus=(GpuSample(index=3, util_gpu=10.0 * tick),)))
        scale = scale_for(300, 1.0, 80, START + 120.5)
        drawn.append(timeline.spark(history, 3, Metric.UTIL_GPU, scale, 1.0, 100.0))
    assert len(set(drawn)) == 1


def test_jitter_is_held_over_but_a_real_gap_stays_blank() -> None:
    scale = scale_for(10, 1.0, 10, 110.0)  # ten 1 s buckets, 100 .. 110
    # bucket 103 is empty only because 102.98 came early; 106-108 have no readings at all
    times = [100.0, 101.0, 102.0, 102.98, 104.05, 105.0, 109.0]
    values = [1.0] * len(times)
    out = buckets(times, values, scale, 1.0)
    assert out[3] == 1.0  # a bucket emptied by jitter holds the reading before it
    assert all(v != v for v in out[6:9])  # three seconds without readings: blank


def test_moving_on_by_a_bucket_gives_what_a_fresh_computation_gives() -> None:
    """The timeline computes only the newest buckets as the scale moves on: the result is
    the same as bucketing the whole window again, gaps and jitter included."""
    history = History(3600)
    timeline = Timeline()
    t = START
    for i in range(400):
        t += 1.0 + (0.3 if i % 7 == 0 else -0.02 if i % 5 == 0 else 0.0)
        if 200 <= i < 210:
            continue  # ten seconds without readings
        history.add(Frame(time=t, gpus=(GpuSample(index=3, util_gpu=float(i % 100)),)))
        scale = scale_for(60, 1.0, 80, t)
        kept = timeline.series(history, 3, Metric.UTIL_GPU, scale, 1.0)
        fresh = Timeline().series(history, 3, Metric.UTIL_GPU, scale, 1.0)
        assert [v if v == v else None for v in kept] == [v if v == v else None for v in fresh]


def test_a_sparkline_drawn_column_by_column_matches_one_drawn_whole() -> None:
    history = History(3600)
    timeline = Timeline()
    for i in range(300):
        t = START + i
        history.add(Frame(time=t, gpus=(GpuSample(index=3, util_gpu=float((i * 37) % 101)),)))
        scale = scale_for(60, 1.0, 80, t)
        kept = timeline.spark(history, 3, Metric.UTIL_GPU, scale, 1.0, 100.0)
        assert kept == Timeline().spark(history, 3, Metric.UTIL_GPU, scale, 1.0, 100.0)


def test_a_full_history_at_a_slow_scrape_says_nothing_is_missing() -> None:
    """Read every 15 s (a Prometheus cluster) the window's first reading lies up to a
    scrape before the buckets' edge: 'recorded so far' stayed under the heading with hours
    of history behind it."""
    history = History(3600)
    sample = GpuSample(index=DEVICE.index, util_gpu=90.0)
    start = 1_800_000_000.0
    for i in range(40):  # ten minutes at 15 s, the newest scrape a little late (jitter)
        history.add(Frame(time=start + 15 * i + 7 + 0.5 * (i == 39), gpus=(sample,)))
    for width in (100, 160):
        panel = detail(history.latest, DEVICE, history, Timeline(), View(60, 15.0, width, 30), T)
        heading = next(line for line in plain_lines(panel, width) if line.startswith("history:"))
        assert "recorded so far" not in heading, heading
