"""A real Prometheus server (Debian's `prometheus`) as the source for a cluster.

The test starts it on 127.0.0.1 with a temporary config that scrapes two dcgm-exporter
pages served by the test every second, and a temporary storage directory; it waits until
the server answers the pages' series, and stops it after. Where the binary is absent the
test is skipped, except in CI (CI=true), where that is a failure.
Prometheus HTTP API facts used: /api/v1/query answers {"status":"success","data":
{"resultType":"vector","result":[{"metric":{...},"value":[t,"v"]}]}}, /api/v1/query_range
a "matrix" with "values"; errors are {"status":"error","errorType":..,"error":..}.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.core.source import SourceUnavailable
from gputui.sources.prometheus.source import PrometheusSource
from tests.dcgm_pages import default_page
from tests.servers import answer, free_port, prometheus_binary, serve, start_prometheus


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = prometheus_binary()
    pages = [serve(answer(default_page(host, gpus=2).encode())) for host in ("gpu-a", "gpu-b")]
    targets = [url.split("//")[1].split("/")[0] for url, _ in pages]
    work = tmp_path_factory.mktemp("prometheus")
    url, process = start_prometheus(binary, work, "dcgm", targets)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(
                    f"{url}/api/v1/query?query=count(DCGM_FI_DEV_GPU_TEMP)", timeout=1
                ) as r:
                    result = json.load(r)["data"]["result"]
                    if result and result[0]["value"][1] == "4":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("prometheus did not scrape the pages within 20 s")
            time.sleep(0.2)
        time.sleep(1.5)  # a few more scrapes: history for query_range
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
        for _, server in pages:
            server.shutdown()


def test_source_reads_the_cluster_with_history(prometheus: str) -> None:
    source = PrometheusSource(prometheus, 'job="dcgm"', step_s=1.0, history_s=30.0)
    devices = source.open()
    assert [(d.node, d.node_index) for d in devices] == [
        ("gpu-a", 0),
        ("gpu-a", 1),
        ("gpu-b", 0),
        ("gpu-b", 1),
    ]
    # open: the counts, the census, the scrape intervals, the lag, the down targets, one
    # page of GPUs
    assert source.queries == 6
    frame = source.read()
    assert len(frame.gpus) == 4 and frame.gpus[0].energy_j == pytest.approx(4_400_000.0)
    # a read: two aggregating queries and one page of readings. Never per node.
    assert source.queries == 6 + 3
    assert {s.node for s in frame.nodes} == {"gpu-a", "gpu-b"}
    assert all(s.up and s.gpus == 2 for s in frame.nodes)
    history = source.backfill()
    deadline = time.monotonic() + 15
    while len(history) < 2 and time.monotonic() < deadline:  # the server's first seconds
        time.sleep(0.5)
        history = source.backfill()
    assert len(history) >= 2 and len(history[-1].gpus) == 4  # earlier steps: before a scrape
    before = source.queries
    time.sleep(0.6)  # past half a step: the aggregates the last backfill kept are too old
    source.backfill()
    # the aggregates (which nodes to read) and one range query: never one per node
    assert source.queries == before + 3


def test_doctor_and_snapshot_over_prometheus(
    prometheus: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["doctor", "--prometheus", prometheus, "--json", "--duration", "0"])
    document = json.loads(capsys.readouterr().out)
    assert status in (0, 1, 2, 4)  # 4: a short window, rules the default counters leave blind
    assert {g["node"] for g in document["devices"]} == {"gpu-a", "gpu-b"}
    assert main(["snapshot", "--prometheus", prometheus, "--match", 'Hostname="gpu-b"']) == 0
    snap = json.loads(capsys.readouterr().out)
    assert {g["node"] for g in snap["devices"]} == {"gpu-b"}


def test_bad_servers_give_a_clear_message_in_bounded_time(tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(SourceUnavailable, match=r"cannot be read.*unreachable"):
        PrometheusSource(down, timeout_s=0.5).open()
    error = serve(answer(b'{"status":"error","errorType":"bad_data","error":"parse error"}'))
    huge = serve(
        answer(
            b'{"status":"success","data":{"resultType":"vector","result":['
            + b" " * (11 * 1024 * 1024)
            + b"]}}"
        )
    )
    unlabelled = serve(
        answer(
            b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"DCGM_FI_DEV_GPU_TEMP"},"value":[1,"50"]}]}}'
        )
    )
    try:
        with pytest.raises(SourceUnavailable, match=r"refused the query \(bad_data: parse error\)"):
            PrometheusSource(error[0].removesuffix("/metrics"), timeout_s=1).open()
        started = time.monotonic()
        with pytest.raises(SourceUnavailable, match="larger than 10 MB"):
            PrometheusSource(huge[0].removesuffix("/metrics"), timeout_s=2).open()
        assert time.monotonic() - started < 3
        with pytest.raises(
            SourceUnavailable, match=r"1 series refused: .*no Hostname/instance label"
        ):
            PrometheusSource(unlabelled[0].removesuffix("/metrics"), timeout_s=1).open()
    finally:
        for _, server in (error, huge, unlabelled):
            server.shutdown()


async def test_the_cluster_view_over_a_real_prometheus_server(
    prometheus: str, tmp_path: Path
) -> None:
    """The app over the Prometheus source, its history backfilled, the `c` view of every
    node, and Enter back to a node's GPUs."""

    from gputui.core.config import Config
    from gputui.launch import make_app
    from gputui.ui.screens import ClusterScreen

    source = PrometheusSource(prometheus, 'job="dcgm"', step_s=1.0, history_s=30.0)
    devices = source.open()
    app = make_app(source, devices, Config(interval_s=15.0), snapshot_dir=tmp_path, live=False)
    for frame in source.backfill():
        app.monitor.ingest(frame)
    app.monitor.ingest(source.read())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ClusterScreen)
        shown = app.screen.plain
        assert "2 node(s), 4 GPU(s)" in shown
        rows = [line for line in shown.splitlines() if "gpu-a" in line or "gpu-b" in line]
        assert len(rows) == 2 and all("not reporting" not in row for row in rows)
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, ClusterScreen)
        assert devices[app.selected].node == rows[0].split()[1]  # the first node's GPU
    source.close()
