"""`gputui report --prometheus URL` over a range in which a node stopped reporting, against
a real Prometheus (Debian's `prometheus`, history written with `promtool`) and
VictoriaMetrics (``tests/prom_cluster.py``): the dead node is in the report with its own
board's limits (max SM clock, slowdown and shutdown temperatures), read as it last
reported them; not absent (its GPU time lost then measured against the highest clock it
happened to run at) and not its surviving neighbours'. Skipped where a binary is absent,
except Prometheus in CI.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from gputui.cli import EXIT_NO_SOURCE, main
from gputui.sources.prometheus.source import PrometheusSource
from tests.prom_cluster import (
    THERMAL,
    Plan,
    Server,
    in_ci,
    missing_binary,
    start_prometheus,
    start_victoria,
)
from tests.prom_fake import FakeProm, gpu_series
from tests.servers import serve

NODES = ["sxm-node-01", "sxm-node-02", "pcie-node-03"]
DYING = NODES[2]
#: the dying node's boards: H100 PCIe, not the survivors' H100 SXM
PCIE_BOARD = {
    "DCGM_FI_DEV_MAX_SM_CLOCK": 1755.0,
    "DCGM_FI_DEV_SLOWDOWN_TEMP": 90.0,
    "DCGM_FI_DEV_SHUTDOWN_TEMP": 95.0,
    "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF": 350.0,
    "DCGM_FI_DEV_POWER_MGMT_LIMIT": 350.0,
    "DCGM_FI_DEV_POWER_USAGE": 300.0,
}
HISTORY_S = 900.0
STOPPED_S = 400.0  # it stopped reporting this long before the history's end
INTERVAL_S = 15.0


@pytest.fixture(params=["prometheus", "victoria-metrics"])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    binary = request.param
    why = missing_binary(binary) or (missing_binary("promtool") if binary == "prometheus" else None)
    if why is not None:
        if in_ci() and binary == "prometheus":
            pytest.fail(f"CI must have {binary} (.ci/run installs Debian's): {why}")
        pytest.skip(why)
    start = start_prometheus if binary == "prometheus" else start_victoria
    plan = Plan(
        list(NODES),
        gpus=2,
        planted={(DYING, 1): THERMAL},  # throttled at 1410 MHz until it stopped
        stopped={DYING: STOPPED_S},
        boards={DYING: PCIE_BOARD},
    )
    server = start(plan, INTERVAL_S, tmp_path, history_s=HISTORY_S)
    try:
        yield server
    finally:
        server.stop()


def test_a_node_that_died_mid_range_keeps_its_own_limits(
    cluster: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    end = time.time()
    start = end - HISTORY_S + 60
    # the devices the report is made of, as `report` reads them
    source = PrometheusSource(cluster.url, timeout_s=30.0, at=end, history_s=end - start)
    devices = source.open()
    limits = {
        (d.node, d.node_index): (d.max_sm_clock_mhz, d.temp_slowdown_c, d.temp_shutdown_c)
        for d in devices
    }
    assert limits == {
        **{(n, g): (1980, 87.0, 92.0) for n in NODES[:2] for g in range(2)},
        **{(DYING, g): (1755, 90.0, 95.0) for g in range(2)},
    }
    assert {d.power_default_limit_w for d in devices if d.node == DYING} == {350.0}
    page = tmp_path / "report.html"
    base = ["report", "--prometheus", cluster.url, f"--since={start:.0f}", f"--until={end:.0f}"]
    assert main([*base, "-o", str(page)]) == 0
    html = page.read_text()
    data = json.loads(html.split('id="gputui-data">', 1)[1].split("</script>", 1)[0])
    charts = {
        gpu["name"]: {
            limit["label"]: limit["value"] for chart in gpu["charts"] for limit in chart["limits"]
        }
        for gpu in data["gpus"]
    }
    dying = [limits for name, limits in charts.items() if name.endswith(f"on {DYING}")]
    assert len(dying) == 2
    for drawn in dying:
        assert (drawn["max SM clock"], drawn["slowdown"], drawn["shutdown"]) == (1755, 90, 95)
    # its throttled GPU's time lost is held against its own 1755 MHz (1410 is 20 % below),
    # not the highest clock it ran at (0 %) nor the survivors' 1980 MHz (29 %)
    capsys.readouterr()
    assert main([*base, "--format", "md"]) == 0
    text = capsys.readouterr().out
    throttled = [line for line in text.splitlines() if re.match(r"- from .* thermally", line)]
    assert throttled, text
    assert all(re.search(r"-20 % SM clock", line) for line in throttled), throttled


def test_a_slow_server_is_left_at_the_reports_deadline(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 52: `report --prometheus` had no overall deadline: answers each well within
    the 30 s a query may take made a 3-minute range take 150 s. Every query together now
    ends within --deadline (300 s by default), said in a sentence."""
    fake = FakeProm(gpu_series("node-1", 2))

    def slow(request: BaseHTTPRequestHandler) -> None:
        time.sleep(0.3)
        body = fake(f"http://prom{request.path}", 30.0).encode()
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.end_headers()
        request.wfile.write(body)

    url, server = serve(slow)
    try:
        argv = ["report", "--prometheus", url.removesuffix("/metrics"), "--since=-20m"]
        started = time.monotonic()
        status = main([*argv, "--deadline", "1", "--format", "md"])
        took = time.monotonic() - started
    finally:
        server.shutdown()
    err = capsys.readouterr().err
    assert status == EXIT_NO_SOURCE and took < 3.0, (status, took, err)
    assert "was not read within --deadline 1 s" in err and "Traceback" not in err
    assert len(fake.asked) >= 3  # it was reading, slowly, when the deadline came
