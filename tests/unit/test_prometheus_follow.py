"""A cluster through its aggregates: every node ranked each tick from a few queries, only
the nodes the screen shows read in full (issue 26: the cost grows with what is shown)."""

from __future__ import annotations

import time
import urllib.parse

from gputui.advisor import make_monitor
from gputui.advisor.nodes import node_rows
from gputui.cli.opening import read_since_history
from gputui.core.config import Config
from gputui.core.model import DeviceInfo, SourceInfo
from gputui.core.names import RuleId, SourceKind
from gputui.sources.fetching import ScrapeError
from gputui.sources.prometheus.nodes import ClusterNode, wanted
from gputui.sources.prometheus.queries import TAG, NodeKey, display_names
from gputui.sources.prometheus.source import PrometheusSource
from gputui.view.cluster import shown_nodes
from tests.prom_fake import FakeProm, gpu_series

NODES = [f"n{i:02d}" for i in range(20)]


def _source() -> tuple[PrometheusSource, FakeProm]:
    server = FakeProm([s for n in NODES for s in gpu_series(n, 8)])
    return PrometheusSource("http://prom", fetcher=server), server


def test_only_the_shown_nodes_are_read_in_full_and_every_node_is_ranked() -> None:
    source, server = _source()
    source.follow(lambda: ("n05", "n06"))
    devices = source.open()
    assert len(devices) == 160
    frame = source.read()
    assert {devices[s.index].node for s in frame.gpus} == {"n05", "n06"}
    # the two aggregating queries asked once, ahead (at open), then one page and (the
    # first time) its history
    assert _summaries(server) == 1
    assert len([q for q in server.asked if 'Hostname=~"n05|n06"' in q]) == 2
    asked = len(server.asked)
    frame = source.read()
    assert len(server.asked) - asked == 3  # then the same three each tick, at any size
    assert {n.node for n in frame.nodes} == set(NODES) and all(n.up for n in frame.nodes)
    monitor = make_monitor(devices, Config(), SourceInfo("P", SourceKind.REMOTE))
    monitor.ingest(frame)
    # the nodes not read in full report (their aggregates say so): none is "not reporting"
    assert not [f for f in monitor.findings if f.rule == RuleId.NOT_REPORTING]
    rows = node_rows(monitor.devices, monitor.latest, monitor.findings)
    assert len(rows) == 20 and all(all(r.reporting) for r in rows)


def test_a_node_shown_for_the_first_time_brings_its_history() -> None:
    source, _server = _source()
    shown = ["n01"]
    source.follow(lambda: tuple(shown))
    source.open()
    source.read()
    shown[:] = ["n09"]
    frame = source.read()
    assert frame.late and all(g.index in range(72, 80) for f in frame.late for g in f.gpus)


def test_the_screen_names_the_selected_gpus_node_first() -> None:
    source, _server = _source()
    devices = source.open()
    names = shown_nodes(devices, selected=devices[83].index)
    assert names[0] == "n10" and set(names[1:3]) == {"n09", "n11"}
    assert len(names) <= 32


def test_a_node_that_comes_up_later_joins_the_view() -> None:
    server = FakeProm([s for n in NODES[:3] for s in gpu_series(n, 8)])
    source = PrometheusSource("http://prom", fetcher=server)
    devices = source.open()
    monitor = make_monitor(devices, Config(), SourceInfo("P", SourceKind.REMOTE))
    monitor.ingest(source.read())
    server.series = [*server.series, *gpu_series("late-node", 4)]  # autoscaled in
    frame = source.read()
    assert [d.node for d in frame.joined] == ["late-node"] * 4
    monitor.ingest(frame)
    assert len(monitor.devices) == 28 and monitor.devices[-1].node == "late-node"
    assert {monitor.devices[s.index].node for s in frame.gpus} >= {"late-node"}


def test_a_history_that_takes_long_to_read_is_read_up_to_now() -> None:
    server = FakeProm([s for n in NODES[:4] for s in gpu_series(n, 8)])
    clock = [time.time()]
    slow = [True]

    def fetch(url: str, timeout: float, headers: dict[str, str] | None = None) -> str:
        if "query_range" in url and slow[0]:  # the window's read takes five minutes
            slow[0] = False
            clock[0] += 300.0
        return server(url, timeout, headers)

    source = PrometheusSource("http://prom", fetcher=fetch, clock=lambda: clock[0])
    source.open()
    frames = source.backfill()
    assert frames[-1].time >= clock[0] - 30.0  # no gap before the next reading
    times = [f.time for f in frames]
    assert times == sorted(set(times)) and len(times) > 20


def _summaries(server: FakeProm) -> int:
    return sum(f'"{TAG}", "newest"' in q and '"seen"' not in q for q in server.asked)


def test_the_read_right_after_the_history_asks_the_aggregates_once() -> None:
    server = FakeProm([s for n in NODES for s in gpu_series(n, 8)])
    clock = [time.time()]
    source = PrometheusSource("http://prom", fetcher=server, clock=lambda: clock[0])
    source.follow(lambda: ("n03",))
    source.open()
    assert source.backfill()
    assert _summaries(server) == 1
    clock[0] += 2.0  # the same scrape: the backfill's aggregates serve the first read
    frame = source.read()
    assert _summaries(server) == 1
    assert {n.node for n in frame.nodes} == set(NODES) and all(n.up for n in frame.nodes)
    clock[0] += 2.0
    source.read()  # only the first read: every later one asks anew
    assert _summaries(server) == 2


def test_a_read_a_scrape_after_the_history_asks_the_aggregates_anew() -> None:
    server = FakeProm([s for n in NODES for s in gpu_series(n, 8)])
    clock = [time.time()]
    source = PrometheusSource("http://prom", fetcher=server, clock=lambda: clock[0])
    source.follow(lambda: ("n03",))
    source.open()
    source.backfill()
    clock[0] += 15.0  # the server has a newer scrape to tell
    source.read()
    assert _summaries(server) == 2


LIMITS = {"DCGM_FI_DEV_SLOWDOWN_TEMP": 87.0, "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF": 700.0}


def test_following_lists_the_gpus_alone_and_a_node_brings_its_limits_when_first_read() -> None:
    server = FakeProm([s for n in NODES for s in gpu_series(n, 8, **LIMITS)])
    shown = ["n01"]
    source = PrometheusSource("http://prom", fetcher=server)
    source.follow(lambda: tuple(shown))
    devices = source.open()
    assert len(devices) == 160 and all(d.temp_slowdown_c is None for d in devices)
    assert not [q for q in server.asked if "POWER_MGMT_LIMIT_DEF" in q]  # the listing: REF
    monitor = make_monitor(devices, Config(), SourceInfo("P", SourceKind.REMOTE))
    for frame in source.backfill():  # n01's history: its limits come with it
        monitor.ingest(frame)
    limited = {d.node for d in monitor.devices if d.temp_slowdown_c == 87.0}
    assert "n01" in limited and "n09" not in limited
    assert all(d.power_default_limit_w == 700.0 for d in monitor.devices if d.node == "n01")
    shown[:] = ["n09"]
    frame = source.read()  # n09 read in full for the first time: its limits with it
    assert {d.node for d in frame.joined} == {"n09"}
    monitor.ingest(frame)
    assert len(monitor.devices) == 160
    assert [d.temp_slowdown_c for d in monitor.devices[72:80]] == [87.0] * 8
    assert [d.index for d in monitor.devices] == list(range(160))
    assert all(d.node == "n09" and d.node_index == i for i, d in enumerate(monitor.devices[72:80]))
    again = source.read()  # once a node: the next reads bring nothing new
    assert not again.joined


def test_without_following_the_listing_carries_the_limits() -> None:
    server = FakeProm([s for n in NODES[:3] for s in gpu_series(n, 8, **LIMITS)])
    devices = PrometheusSource("http://prom", fetcher=server).open()
    assert all(d.temp_slowdown_c == 87.0 and d.power_default_limit_w == 700.0 for d in devices)


def _listings(server: FakeProm) -> list[str]:
    return [q for q in server.asked if q.startswith("{") and not q.endswith("s]")]


def test_following_lists_the_whole_cluster_in_one_answer() -> None:
    server = FakeProm([s for n in NODES for s in gpu_series(n, 8)])
    source = PrometheusSource("http://prom", fetcher=server)
    source.follow(tuple)
    assert len(source.open()) == 160
    assert _listings(server) == ['{__name__=~"DCGM_FI_DEV_GPU_TEMP"}']  # no page of names


def test_a_cluster_too_large_for_one_answer_is_listed_in_pages() -> None:
    server = FakeProm([s for n in NODES for s in gpu_series(n, 8)], max_answer=100)
    source = PrometheusSource("http://prom", fetcher=server)
    source.follow(tuple)
    devices = source.open()
    assert len(devices) == 160 and {d.node for d in devices} == set(NODES)
    assert len(_listings(server)) > 2  # the whole refused, then pages of nodes


def test_aggregates_asked_ahead_that_fail_are_asked_again_by_the_read() -> None:
    server = FakeProm([s for n in NODES for s in gpu_series(n, 8)])
    failing = [True]

    def fetch(url: str, timeout: float, headers: dict[str, str] | None = None) -> str:
        if failing[0] and "hottest" in urllib.parse.unquote_plus(url):
            raise ScrapeError("HTTP 503")
        return server(url, timeout, headers)

    source = PrometheusSource("http://prom", fetcher=fetch)
    source.follow(lambda: ("n03",))
    assert len(source.open()) == 160  # the aggregates asked ahead fail on their own thread
    assert source.backfill() == ()  # as a failed summary always did
    failing[0] = False
    frame = source.read()
    assert {n.node for n in frame.nodes} == set(NODES) and all(n.up for n in frame.nodes)


def test_the_stretch_a_long_judgement_of_the_history_took_is_read_before_the_next_read() -> None:
    server = FakeProm([s for n in NODES[:4] for s in gpu_series(n, 8)])
    clock = [time.time() // 15 * 15 + 1.0]  # a second past a step of the 15 s grid
    source = PrometheusSource("http://prom", fetcher=server, clock=lambda: clock[0])
    source.open()
    frames = source.backfill()
    last = frames[-1].time
    assert source.catch_up(last) == ()  # no gap yet
    clock[0] += 50.0  # judging a large cluster's history took 50 s
    later = source.catch_up(last)
    assert [f.time - last for f in later] == [15.0, 30.0, 45.0]
    assert all(len(f.gpus) == 32 for f in later)


def test_doctor_reads_the_stretch_since_the_history_until_no_gap_is_left() -> None:
    server = FakeProm([s for n in NODES[:4] for s in gpu_series(n, 8)])
    clock = [time.time() // 15 * 15 + 1.0]
    source = PrometheusSource("http://prom", fetcher=server, clock=lambda: clock[0])
    devices = source.open()
    monitor = make_monitor(devices, Config(interval_s=15.0), SourceInfo("P", SourceKind.REMOTE))
    for frame in source.backfill():
        monitor.ingest(frame)
    end = monitor.history.times()[-1]
    clock[0] += 50.0  # judging the history took 50 s
    read_since_history(monitor, source)
    assert [t - end for t in monitor.history.times()[-3:]] == [15.0, 30.0, 45.0]
    read_since_history(monitor, source)  # under 1.5 steps behind now: nothing to read
    assert monitor.history.times()[-1] - end == 45.0


def test_a_node_with_a_hostile_name_is_read_when_shown() -> None:
    """The screen names what it shows by the GPUs' node, cleaned like all outside text;
    the source matched those names against the raw label value, so a Hostname holding an
    escape sequence was never read in full: its GPUs stayed 'no data' and the advisor
    said nothing slowed them down."""
    hostile = NodeKey("Hostname", '\x1b[2J\x1b[31mEVIL[bold red]node\x07"q\nnl')
    plain = NodeKey("Hostname", "n00")
    names = display_names([hostile, plain])
    nodes = {key: ClusterNode(key, names[key], gpus=(0, 1)) for key in (hostile, plain)}
    device = DeviceInfo(index=0, name="H100", node=names[hostile])  # as the screen has it
    assert device.node is not None and "\x1b" not in device.node
    assert wanted(nodes, [device.node], {}, {}, 8) == [hostile]
