"""`gputui doctor --prometheus URL`, at its default settings, against a real server that
scrapes a synthetic cluster at the intervals clusters run (15 s and 30 s), finds every
problem planted there: thermal throttling on three GPUs, a power cap, PCIe replays and an
Xid (issue 26: before, it reported only the Xid and said nothing slowed the others).

The servers are Debian's `prometheus` (history written at once with `promtool tsdb
create-blocks-from openmetrics`) and `victoria-metrics` (history through its import API),
started by the test (``tests/prom_cluster.py``). Where a binary is absent the case is
skipped, except in CI (CI=true), where that is a failure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gputui.cli import main
from tests.prom_cluster import (
    POWER_CAP,
    REPLAYS,
    THERMAL,
    XID,
    Plan,
    Server,
    in_ci,
    missing_binary,
    start_prometheus,
    start_victoria,
)

NODES = [f"gpu-node-{i:02d}" for i in range(16)]
PLANTED = {
    (NODES[3], 2): THERMAL,
    (NODES[7], 5): THERMAL,
    (NODES[9], 0): THERMAL,
    (NODES[11], 1): POWER_CAP,
    (NODES[5], 6): REPLAYS,
    (NODES[13], 3): XID,
}
#: what each planted problem must be reported as
RULES = {
    THERMAL: "thermal-throttle",
    POWER_CAP: "power-cap",
    REPLAYS: "pcie-errors",
    XID: "gpu-errors",
}
DEAD = "gpu-node-15"


def _plan() -> Plan:
    return Plan(list(NODES), planted=dict(PLANTED), dead={DEAD}, pods={NODES[3]: "llm-train-0"})


Starter = Callable[[Plan, float, Path], Server]


@pytest.fixture(
    params=[("prometheus", 15.0), ("prometheus", 30.0), ("victoria-metrics", 15.0)],
    ids=["prometheus-15s", "prometheus-30s", "victoria-metrics-15s"],
)
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    binary, interval = request.param
    why = missing_binary(binary) or (missing_binary("promtool") if binary == "prometheus" else None)
    if why is not None:
        if in_ci() and binary == "prometheus":
            pytest.fail(f"CI must have {binary} (.ci/run installs Debian's): {why}")
        pytest.skip(why)
    start: Starter = start_prometheus if binary == "prometheus" else start_victoria
    server = start(_plan(), interval, tmp_path)
    try:
        yield server
    finally:
        server.stop()


def test_doctor_finds_every_planted_problem_at_the_scrape_interval(
    cluster: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["doctor", "--prometheus", cluster.url, "--json"])
    document = json.loads(capsys.readouterr().out)
    assert status == 2, document["judgement"]
    where = {d["index"]: (d["node"], d["node_index"]) for d in document["devices"]}
    found = {(f["rule"], where[f["gpu"]]) for f in document["findings"] if f["gpu"] is not None}
    for (node, gpu), kind in PLANTED.items():
        assert (RULES[kind], (node, gpu)) in found, (kind, node, gpu, sorted(found))
    # nothing else is wrong on the cluster: no false alarm either
    planted_gpus = {place for place in PLANTED}
    others = {(rule, place) for rule, place in found if place not in planted_gpus}
    assert not others, others
    # the workload's pod, not the exporter's; the node down since the start is named
    pods = {d["pod"] for d in document["devices"] if d["node"] == NODES[3]}
    assert pods == {"llm-train-0"}
    capsys.readouterr()
    main(["doctor", "--prometheus", cluster.url])
    text = capsys.readouterr().out
    assert f"node {DEAD}" in text and "down" in text
    assert "nothing slows these GPUs down" not in text
