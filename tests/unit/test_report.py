"""``gputui report``'s numbers and text, from runs of the demo scenarios fed through the
same advisor as live: every GPU's time shares add up to its wall time, a throttle's share is
what the history's clock-event reasons say, a stretch no finding covered counts as busy, a
downsampled series keeps every peak, and outside text reaches the HTML page only escaped."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
import re
import time
from collections.abc import Callable, Sequence
from html.parser import HTMLParser

import pytest

from gputui.cli.exits import EXIT_USAGE
from gputui.core import clock_events as ce
from gputui.core.config import Thresholds
from gputui.core.manual_clock import ManualClock
from gputui.core.model import Frame, SourceInfo
from gputui.core.names import Metric, RuleId, SourceKind
from gputui.exporters.report import (
    Cause,
    Collector,
    Run,
    account,
    downsample,
    recording_thresholds,
    report_text,
)
from gputui.exporters.report.accounting import CAUSES
from gputui.exporters.report.run import REPORT_JUDGE_EVERY_S, judged_less_often_s
from gputui.sampling.history import NO_REASONS
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from tests.hostile import CORPUS, SECRET_VALUES, HostileSource

START = 1_800_000_000.0


def run_of(
    scenario: str,
    seconds: int = 300,
    gpus: int = 2,
    make: Callable[[ManualClock], SimulatedSource] | None = None,
    judge_every_s: float | None = None,
) -> Run:
    """A scenario's run through the advisor: judged as live (every 2 s), or as a
    recording's report judges it (``judge_every_s``)."""
    clock = ManualClock(START)
    if make is None:
        sim = SimulatedSource(resolve_scenarios(scenario, gpus), clock=clock)
    else:
        sim = make(clock)
    devices = sim.open()
    thresholds = None if judge_every_s is None else recording_thresholds(1.0, judge_every_s)
    source = SourceInfo("SIMULATED", SourceKind.SIMULATED, scenario)
    collector = Collector(devices, source, 1.0, origin="test", thresholds=thresholds)
    for _ in range(seconds):
        collector.add(sim.read())
        clock.advance(1.0)
    return collector.finish()


def _seconds(run: Run, gpu: int, tick_is: Callable[[int, int], bool]) -> float:
    """Seconds of the ticks a predicate picks (each tick lasts until the next)."""
    times = run.times
    return sum(times[i + 1] - times[i] for i in range(len(times) - 1) if tick_is(gpu, i))


#: judged as live, and as a recording's report judges
CADENCES = [None, REPORT_JUDGE_EVERY_S]


@pytest.mark.parametrize("judge_every_s", CADENCES)
@pytest.mark.parametrize(
    ("scenario", "gpus"),
    [("mix", 4), ("thermal", 2), ("powercap", 2), ("starved", 2), ("vram", 2), ("idle", 1)],
)
def test_every_gpus_shares_add_up_to_its_wall_time(
    scenario: str, gpus: int, judge_every_s: float | None
) -> None:
    run = run_of(scenario, 240, gpus, judge_every_s=judge_every_s)
    accounting = account(run)
    wall = run.end - run.start
    assert wall == pytest.approx(239.0)
    for acc in accounting.gpus.values():
        assert acc.wall_s == pytest.approx(wall)
        assert sum(acc.seconds.values()) == pytest.approx(wall)
        assert sum(acc.share(c) for c in CAUSES) == pytest.approx(1.0)
        for cause in CAUSES:
            assert 0.0 <= acc.lost_s[cause] <= acc.seconds[cause] + 1e-9
    assert accounting.total.wall_s == pytest.approx(wall * gpus)
    assert sum(accounting.total.seconds.values()) == pytest.approx(wall * gpus)


@pytest.mark.parametrize("judge_every_s", CADENCES)
def test_a_thermal_runs_throttled_share_is_what_its_history_says(
    judge_every_s: float | None,
) -> None:
    run = run_of("thermal", 600, 2, judge_every_s=judge_every_s)
    accounting = account(run)
    assert any(e.finding.rule is RuleId.THERMAL_THROTTLE for e in run.episodes)
    for index, track in run.tracks.items():

        def throttled(gpu: int, i: int, reasons: Sequence[int] = track.reasons) -> bool:
            return reasons[i] != NO_REASONS and bool(
                reasons[i] & (ce.THERMAL_BITS | ce.HW_SLOWDOWN)
            )

        expected = _seconds(run, index, throttled)
        assert expected > 0.8 * (run.end - run.start)  # the scenario throttles most of the run
        acc = accounting.gpus[index]
        assert acc.seconds[Cause.THERMAL] == pytest.approx(expected)
        assert acc.seconds[Cause.BUSY] == pytest.approx(run.end - run.start - expected)
        # what it cost: the SM clock given up against the board's maximum, tick by tick
        top = float(track.device.max_sm_clock_mhz or 0)
        clock = track.values[Metric.SM_CLOCK_MHZ]
        lost = sum(
            (run.times[i + 1] - run.times[i]) * (1 - clock[i] / top)
            for i in range(len(run.times) - 1)
            if throttled(index, i)
        )
        assert acc.lost_s[Cause.THERMAL] == pytest.approx(lost, rel=1e-4)
        worst = acc.worst[Cause.THERMAL]
        assert worst.gpu == index and worst.end - worst.start > 0.8 * (run.end - run.start)
        assert re.fullmatch(r"-\d+ % SM clock", worst.figure)


def test_a_board_at_its_default_power_limit_is_power_capped_though_nothing_is_to_fix() -> None:
    """A board at its default power limit under a heavy load is shown as info ("normal for
    this board", nothing to fix), and its clocks are still held down: its ticks count as
    power capped, as their reasons say, with the SM clock given up (issue 50: the report
    called that time "busy, unthrottled"). Another rule's info finding gives no cause."""
    run = run_of("at-power-limit", 240, 1)
    capped = [e for e in run.episodes if e.finding.rule is RuleId.POWER_CAP]
    assert capped and all(e.finding.severity == "info" for e in capped)
    acc = account(run).gpus[0]
    assert acc.seconds[Cause.POWER] > 0.9 * (run.end - run.start)
    assert acc.lost_s[Cause.POWER] == pytest.approx(0.24 * acc.seconds[Cause.POWER], rel=0.05)
    assert acc.worst[Cause.POWER].figure == "-24 % SM clock"
    assert acc.seconds[Cause.BUSY] < 0.1 * (run.end - run.start)
    # the same stretch under an info finding of another cause (starved) is busy
    starved = [
        dataclasses.replace(e, finding=dataclasses.replace(e.finding, rule=RuleId.INPUT_STARVED))
        for e in run.episodes
    ]
    plain = account(dataclasses.replace(run, episodes=starved)).gpus[0]
    assert plain.seconds[Cause.STARVED] == 0.0
    assert plain.seconds[Cause.BUSY] == pytest.approx(run.end - run.start)


@pytest.mark.parametrize("judge_every_s", CADENCES)
def test_a_stretch_no_finding_covers_counts_as_busy(judge_every_s: float | None) -> None:
    """The reasons show a throttle all along, but only the findings give a tick a cause:
    cut the throttle's episode at half time, and the second half is busy and unthrottled
    (judged less often than live: up to the judgement that no longer saw it)."""
    run = run_of("thermal", 600, 1, judge_every_s=judge_every_s)
    later = judged_less_often_s(run.thresholds)
    middle = run.start + 300.0
    cut = [
        dataclasses.replace(e, until=min(e.until, middle)) for e in run.episodes if e.since < middle
    ]
    whole = account(run).gpus[0]
    half = account(dataclasses.replace(run, episodes=cut)).gpus[0]
    none = account(dataclasses.replace(run, episodes=[])).gpus[0]
    assert none.seconds[Cause.THERMAL] == 0.0
    assert none.seconds[Cause.BUSY] == pytest.approx(run.end - run.start)
    assert half.seconds[Cause.THERMAL] == pytest.approx(
        whole.seconds[Cause.THERMAL] - (run.end - middle - later), abs=1.0
    )
    assert half.seconds[Cause.BUSY] + half.seconds[Cause.THERMAL] == pytest.approx(
        run.end - run.start
    )
    # a finding that started late: the throttled ticks before it count only as far back as
    # its rule needed to see them (window and start delay, and two judgements' lag when
    # judged less often than live), the earlier ones are busy
    late = [dataclasses.replace(e, since=max(e.since, middle)) for e in run.episodes]
    started = account(dataclasses.replace(run, episodes=late)).gpus[0]
    reach = run.thresholds.window_s + run.thresholds.start_after_s + 2 * later
    assert started.seconds[Cause.THERMAL] == pytest.approx(run.end - middle + reach, abs=1.0)


@pytest.mark.parametrize(
    ("scenario", "gpus"), [("mix", 4), ("thermal", 2), ("powercap", 2), ("starved", 2), ("vram", 4)]
)
def test_a_recording_judged_less_often_finds_what_the_live_screen_found(
    scenario: str, gpus: int
) -> None:
    """A recording's report judges every 5 s of frame time, not every 2 s, with the rules'
    windows, holds and ends unchanged. Every finding the live screen showed for longer than
    three such judgements is found over the same stretch (each end within two judgements),
    nothing that long is found that the live screen did not show, and no GPU's share of
    any cause moves by more than 2 % of its wall time (what a flicker of a few seconds,
    seen at one cadence's instants and not the other's, can add)."""
    live = run_of(scenario, 900, gpus)
    report = run_of(scenario, 900, gpus, judge_every_s=REPORT_JUDGE_EVERY_S)
    assert report.thresholds.window_s == live.thresholds.window_s
    assert report.thresholds.judge_every_s == REPORT_JUDGE_EVERY_S
    slack = 2 * REPORT_JUDGE_EVERY_S
    assert live.episodes
    for ours, theirs in ((live, report), (report, live)):
        for episode in ours.episodes:
            if episode.until - episode.since <= 3 * REPORT_JUDGE_EVERY_S:
                continue
            same = [
                e
                for e in theirs.episodes
                if e.finding.key == episode.finding.key
                and e.since <= episode.until
                and e.until >= episode.since
            ]
            assert same, episode.finding.key
            assert abs(min(e.since for e in same) - episode.since) <= slack
            assert abs(max(e.until for e in same) - episode.until) <= slack
    seen, judged = account(live), account(report)
    for index, acc in seen.gpus.items():
        assert sum(judged.gpus[index].seconds.values()) == pytest.approx(acc.wall_s)
        for cause in CAUSES:
            assert judged.gpus[index].share(cause) == pytest.approx(acc.share(cause), abs=0.02)


def test_a_gap_in_the_readings_counts_as_not_running() -> None:
    run = run_of("healthy", 200, 1)
    times = list(run.times)
    gapped = [t if t < run.start + 100 else t + 600.0 for t in times]  # ten minutes unread
    accounting = account(dataclasses.replace(run, times=gapped))
    acc = accounting.gpus[0]
    assert acc.wall_s == pytest.approx(gapped[-1] - gapped[0])
    # the tick before the gap lasts at most three intervals or two live judgements
    last = max(3 * run.interval_s, 2 * Thresholds().judge_every_s) - run.interval_s
    assert acc.seconds[Cause.NOT_RUNNING] == pytest.approx(600.0 - last, abs=3.0)
    assert acc.seconds[Cause.BUSY] == pytest.approx(199.0 + last, abs=3.0)


def test_downsampling_a_week_keeps_every_peak_and_stays_small() -> None:
    rng = random.Random(7)
    n = 7 * 86400
    times = [START + i for i in range(n)]
    values = [50.0 + rng.random() for _ in range(n)]
    values[123_457] = 99.5  # a one-second spike
    values[500_001] = 0.5  # and a one-second dip
    for i in range(300_000, 300_600):
        values[i] = math.nan  # ten minutes unread
    b = downsample.buckets(times, 1500)
    points = downsample.series(values, b)
    assert len(points) == len(b.xs) == 3000
    known = [p for p in points if p is not None]
    assert max(known) == 99.5 and min(known) == 0.5
    for k in range(1500):  # each bucket: its lowest and highest reading, in time order
        chunk = [v for v in values[b.bounds[k] : b.bounds[k + 1]] if v == v]
        pair = points[2 * k : 2 * k + 2]
        if not chunk:
            assert pair == [None, None]
            continue
        assert sorted(p for p in pair if p is not None) == [
            round(min(chunk), 1),
            round(max(chunk), 1),
        ]
    # a short run is drawn as it is
    assert downsample.series([1.0, math.nan, 3.0], downsample.buckets([0.0, 1.0, 2.0], 10)) == [
        1.0,
        None,
        3.0,
    ]


@pytest.mark.parametrize("scale", [1e-9, 1.0 / (1 << 30), 0.001])
def test_a_series_scaled_after_its_buckets_is_the_series_of_the_scaled_readings(
    scale: float,
) -> None:
    """The charts scale a bucket's two points, not every reading: the same points, as a
    float32 column of a run or as a list, with gaps and ties."""
    from array import array

    rng = random.Random(7)
    n = 40_000
    times = [START + i for i in range(n)]
    values = [rng.choice([0.0, 5e9, 16e9, rng.random() * 3e10]) for _ in range(n)]
    for i in range(1000, 1400):
        values[i] = math.nan
    column = array("f", values)
    b = downsample.buckets(times, 300)
    scaled = [v * scale for v in column]
    for digits in (0, 3):
        want = downsample.series(scaled, b, digits)
        assert downsample.series(column, b, digits, scale) == want
        assert downsample.series(list(column), b, digits, scale) == want


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.data: dict[str, str] = {}
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        self._in = dict(attrs).get("id") if tag == "script" else None

    def handle_data(self, data: str) -> None:
        if self._in:
            self.data[self._in] = self.data.get(self._in, "") + data


#: text that means something to a browser, as process names
HTML_NAMES = ("<script>alert(1)</script>", "</script><img src=x onerror=alert(2)>", "a&b\"c'd")


def _hostile_run() -> Run:
    texts = [*CORPUS.values(), *HTML_NAMES]

    class Named(HostileSource):
        def read(self) -> Frame:
            frame = super().read()
            procs = tuple(
                dataclasses.replace(p, name=HTML_NAMES[i % len(HTML_NAMES)])
                for i, p in enumerate(frame.processes)
            )
            return dataclasses.replace(frame, processes=procs)

    return run_of(
        "mix", 120, 4, lambda clock: Named(resolve_scenarios("mix", 4), texts, clock=clock)
    )


def test_outside_text_reaches_the_page_escaped_and_masked() -> None:
    run = _hostile_run()
    assert {s.name for s in run.spans} == set(HTML_NAMES)
    page = report_text(run, "html")
    parser = _Tags()
    parser.feed(page)
    scripts = [attrs for tag, attrs in parser.tags if tag == "script"]
    assert len(scripts) == 3  # the data, uPlot and the report's own: nothing a name opened
    assert not [t for t, _ in parser.tags if t in ("img", "iframe", "object", "embed", "form")]
    for _, attrs in parser.tags:
        assert not [k for k, _ in attrs if k.startswith("on")]
        assert not [v for _, v in attrs if v and "javascript:" in v.lower()]
    for value in SECRET_VALUES:
        assert value not in page
    assert "alert(1)</script>" not in page and "<img src=x" not in page
    # the names travel as data (JSON the script sets with textContent), intact but masked
    data = json.loads(parser.data["gputui-data"])
    lanes = [lane for gpu in data["gpus"] for lane in gpu["processes"]]
    assert any("<script>alert(1)</script>" in lane[2] for lane in lanes)
    assert all("hunter2" not in lane[3] for lane in lanes)
    assert "hunter2" in report_text(run, "html", keep_secrets=True)


def test_the_markdown_summary_holds_the_table_and_escapes_names() -> None:
    run = _hostile_run()
    text = report_text(run, "md")
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert table[0] == "| GPU | " + " | ".join(c.label for c in CAUSES) + " |"
    gpu_rows = table[1 : 1 + len(run.tracks) + 1]
    for row in gpu_rows:  # each row's shares add up to 100 % (to the rounding)
        cells = [c.strip() for c in row.strip("|").split("|")][-len(CAUSES) :]
        assert len(cells) == len(CAUSES), row
        shares = [float(c.split()[0]) for c in cells if c not in ("-", "<0.1 %")]
        assert sum(shares) == pytest.approx(100.0, abs=0.1 * len(CAUSES))
    assert "<img" not in text and "<script>" not in text
    for value in SECRET_VALUES:
        assert value not in text


def test_a_finding_that_comes_and_goes_keeps_the_page_small() -> None:
    """Thousands of stretches of one finding: one entry in the timeline that counts them
    and lists the longest, a bounded number of shades; the accounting still sees all."""
    run = run_of("thermal", 600, 1)
    (throttle,) = [e for e in run.episodes if e.finding.rule is RuleId.THERMAL_THROTTLE]
    flapping = [
        dataclasses.replace(throttle, since=run.start + k * 0.1, until=run.start + k * 0.1 + 0.05)
        for k in range(5000)
    ]
    flapping.append(dataclasses.replace(throttle, since=run.start + 510, until=run.start + 590))
    many = dataclasses.replace(run, episodes=flapping)
    page = report_text(many, "html")
    assert len(page.encode()) < len(report_text(run, "html").encode()) + 60_000
    assert page.count("<details") == 1
    assert "shown 5001 times" in page and "and 4989 shorter" in page
    assert "(1 min 20 s)" in page  # the longest stretch, in words
    data = json.loads(page.split('id="gputui-data">', 1)[1].split("</script>", 1)[0])
    assert 1 <= len(data["gpus"][0]["findings"]) <= 400


def test_a_ranges_moments_and_a_future_end() -> None:
    """--since/--until as people write them; a moment before 1970 is an age ('-90': 90 s
    ago), and an end past now is now: beyond it the server repeats each series' last
    sample for its lookback, and minutes that had not happened were counted as work."""
    from types import SimpleNamespace

    from gputui.cli.report import _window, parse_when

    now = 1_800_000_000.0
    assert parse_when("-90", now) == now - 90 and parse_when("-2h", now) == now - 7200
    assert parse_when(str(now - 5), now) == now - 5 and parse_when("now", now) == now
    with pytest.raises(ValueError, match="no moment"):
        parse_when("+1h", now)
    ahead = SimpleNamespace(since="-10m", until=str(time.time() + 600))
    window = _window(ahead)
    assert isinstance(window, tuple) and window[1] <= time.time()
    assert _window(SimpleNamespace(since=str(time.time() + 60), until=None)) == EXIT_USAGE
    # the census of a report's source spans its whole range: a node that stopped hours
    # before the end is listed (the live source keeps its census to the last hour)
    from gputui.sources.prometheus.source import MAX_HISTORY_S, PrometheusSource

    night = PrometheusSource("http://prom:9090", None, at=now, history_s=8 * 3600.0)
    assert night._window_s(15.0) == 8 * 3600.0 > MAX_HISTORY_S
    live = PrometheusSource("http://prom:9090", None, history_s=8 * 3600.0)
    assert live._window_s(15.0) == MAX_HISTORY_S


@pytest.mark.parametrize(
    "moment",
    ["-99999999999d", "-9" + "9" * 400 + "d", "0001-01-01", "9999-12-31", "1e300", "-1e300"],
)
def test_a_moment_no_server_holds_is_a_usage_error_not_an_internal_one(
    moment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 52: ``--since=-99999999999d`` ended `report --prometheus` with exit 70 (a year
    out of range). A moment before 1970 or past the year 5138 is refused, in words."""
    from gputui import cli

    argv = ["report", "--prometheus", "http://127.0.0.1:9", f"--since={moment}"]
    assert cli.main(argv) == EXIT_USAGE
    assert cli.main([*argv[:3], "--since=-5m", f"--until={moment}"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "--since/--until:" in err and "internal" not in err


def test_a_long_prometheus_range_is_read_in_slices_that_cover_it_once() -> None:
    from gputui.cli.report import RANGE_FIELDS_PER_GPU, RANGE_POINTS, choose_step, range_slices

    start, end = START, START + 7 * 86400
    step = choose_step(end - start, 8)
    assert step == math.ceil(7 * 86400 / 20_000)  # a week on 8 GPUs: 20,000 ticks
    assert choose_step(end - start, 64) > step and choose_step(60.0, 1) == 1.0
    slices = list(range_slices(start, end, step, 8))
    assert slices[0][0] == start and slices[-1][1] == end
    per_slice = RANGE_POINTS // (8 * RANGE_FIELDS_PER_GPU)
    for (first, last), (following, _) in itertools.pairwise(slices):
        assert following == last + step  # no tick asked twice, none left out
        assert (last - first) / step + 1 <= per_slice


def test_a_run_shorter_than_the_advisors_window_says_it_could_not_judge() -> None:
    short = run_of("thermal", 10, 1)
    assert not short.episodes
    assert any("could not judge it yet" in n for n in short.notices)
    assert "could not judge it yet" in report_text(short, "md")
    page = report_text(short, "html")  # said with the answer, before the table
    assert page.index("could not judge it yet") < page.index("Share of wall time")
    assert not any("could not judge" in n for n in run_of("thermal", 60, 1).notices)


def test_a_node_that_stopped_before_the_reports_end_keeps_its_own_limits() -> None:
    """A report's GPUs and their limits are each GPU's last values in the whole range: a
    node that stopped reporting hours before the end is listed with its own board's limits
    (before, only the survivors' were read at the end, and its GPU time lost was held
    against the highest clock it happened to run at). The server drops the metric name
    from ``last_over_time`` (Prometheus keeps it there, not through other functions) and,
    as Prometheus does, matches ``or``'s sides on their labels less the name."""
    from gputui.sources.prometheus.source import PrometheusSource
    from tests.prom_fake import FakeProm, gpu_series

    def board(clock: float, slowdown: float, shutdown: float, power: float) -> dict[str, float]:
        return {
            "DCGM_FI_DEV_MAX_SM_CLOCK": clock,
            "DCGM_FI_DEV_SLOWDOWN_TEMP": slowdown,
            "DCGM_FI_DEV_SHUTDOWN_TEMP": shutdown,
            "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF": power,
        }

    sxm, pcie = board(1980.0, 87.0, 92.0, 700.0), board(1755.0, 90.0, 95.0, 350.0)
    series = [*gpu_series("alive", 2, **sxm), *gpu_series("dead", 2, **pcie)]
    now = 1_800_000_000.0
    report = FakeProm(series, stopped=frozenset({"dead"}))
    live = FakeProm(series, stopped=frozenset({"dead"}))
    sources = (
        PrometheusSource("http://p:9090", fetcher=report, env={}, at=now, history_s=8 * 3600.0),
        PrometheusSource("http://p:9090", fetcher=live, env={}),  # the live source
    )
    for source in sources:
        limits = {
            (d.node, d.node_index): (
                d.max_sm_clock_mhz,
                d.temp_slowdown_c,
                d.temp_shutdown_c,
                d.power_default_limit_w,
            )
            for d in source.open()
        }
        assert limits == {
            ("alive", 0): (1980, 87.0, 92.0, 700.0),
            ("alive", 1): (1980, 87.0, 92.0, 700.0),
            ("dead", 0): (1755, 90.0, 95.0, 350.0),
            ("dead", 1): (1755, 90.0, 95.0, 350.0),
        }
    # the report's range, whole: each GPU's last values in its 8 hours
    assert any("last_over_time(" in q and "[28800s]" in q for q in report.asked)


def test_the_links_pairs_of_a_run_are_those_read_side_by_side() -> None:
    """A run's float32 columns are told apart as 8-byte keys (no Python loop a tick): the
    same pairs a loop finds, gaps left out, a generation and a width never read together
    not made a pair."""
    from array import array

    from gputui.exporters.report import charts

    nan = math.nan
    gens = [4.0, 4.0, 5.0, nan, 5.0, 3.0, nan] * 1000
    widths = [16.0, 16.0, 8.0, 16.0, nan, 16.0, nan] * 1000
    want = {(4.0, 16.0), (5.0, 8.0), (3.0, 16.0)}
    assert charts._pairs(gens, widths) == want
    assert charts._pairs(array("f", gens), array("f", widths)) == want
    assert charts._pairs(array("f"), array("f")) == set()
