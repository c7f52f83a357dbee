"""`gputui doctor --prometheus` as a cluster's gate (issue 53), against a real Prometheus
(Debian's) scraping synthetic dcgm-exporter nodes with the counters an operator enables:
a healthy cluster exits 0 (the rules an exporter can never feed are not applicable to it,
listed, not "not judged"), a node down for an hour is a finding, and a GPU busy with its
SM clock held at 1,095 of 1,980 MHz and no reason named is found. Where the binaries are
absent the test skips, except in CI (CI=true)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from gputui.cli import main
from tests.prom_cluster import HELD, Plan, Server, require, start_prometheus

HEALTHY = [f"healthy-{i:02d}" for i in range(6)]
STUCK, GONE = "stuck-00", "gone-00"


@pytest.fixture(scope="module")
def gate_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    require("prometheus", "promtool")
    plan = Plan([*HEALTHY, STUCK, GONE], planted={(STUCK, 4): HELD}, stopped={GONE: 3600.0})
    server = start_prometheus(plan, 15.0, tmp_path_factory.mktemp("gate"), history_s=600.0)
    try:
        yield server
    finally:
        server.stop()


def _doctor(url: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    status = main(["doctor", "--prometheus", url, "--json", *extra])
    return status, json.loads(capsys.readouterr().out)


def test_a_healthy_cluster_exits_0(
    gate_cluster: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    status, document = _doctor(gate_cluster.url, capsys, "--match", 'Hostname=~"healthy-.*"')
    judgement = document["judgement"]
    assert status == 0, (document["findings"], judgement["not_judged"])
    assert judgement["complete"] and not judgement["not_judged"]
    applicable = {item["rule"] for item in judgement["not_applicable"]}
    assert {"input-starved", "persistence-off", "cpu-governor"} <= applicable
    assert len(document["devices"]) == 8 * len(HEALTHY)


def test_a_node_down_an_hour_and_a_held_clock_are_findings(
    gate_cluster: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    status, document = _doctor(gate_cluster.url, capsys)
    assert status == 1, document["findings"]
    where = {d["index"]: (d["node"], d["node_index"]) for d in document["devices"]}
    found = {(f["rule"], where.get(f["gpu"])) for f in document["findings"]}
    assert found == {("clocks-held", (STUCK, 4)), ("not-reporting", None)}
    (down,) = [f for f in document["findings"] if f["rule"] == "not-reporting"]
    assert GONE in down["title"] and down["severity"] == "warning"
    (held,) = [f for f in document["findings"] if f["rule"] == "clocks-held"]
    assert held["evidence"][0].startswith("SM clock 1095 / 1980 MHz max (55 %) while busy")
