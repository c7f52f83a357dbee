"""The engine end to end: a real Prometheus (Debian's `prometheus`) evaluates `gputui rules`
over synthetic dcgm-exporter nodes with problems planted, and a real Alertmanager (Debian's
`prometheus-alertmanager`) sends what fires to a webhook the test holds. Every planted
problem arrives as one alert on the right GPU (or node) with its remedy, none from the
healthy nodes, within the delay docs/alerting.md gives (``for`` and one evaluation, the
route's group_wait) at 15 s and 30 s scrapes.

The history before the start is written at once (``tests/prom_cluster.py``): the rules'
windows read it at their first evaluation, so no test waits for a window to fill. Where a
binary is absent the test skips, except in CI (CI=true).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gputui.advisor.promrules import Terms, engine
from gputui.exporters.rules_file import rules_yaml
from tests.alertmanager import BINARY, Webhook, start_alertmanager
from tests.prom_cluster import (
    HELD,
    POWER_CAP,
    REPLAYS,
    SPIN,
    THERMAL,
    XID,
    Plan,
    Server,
    require,
    start_prometheus,
)

NODES = [f"gpu-node-{i:02d}" for i in range(12)]
PLANTED = {
    (NODES[1], 2): THERMAL,
    (NODES[3], 1): POWER_CAP,
    (NODES[5], 6): REPLAYS,
    (NODES[7], 3): XID,
    (NODES[9], 0): HELD,
    (NODES[4], 5): SPIN,
}
#: nodes whose exporter stopped: an hour before the start (its target's scrapes fail ever
#: since; nothing of it in the history written) and four minutes before it
STOPPED = {NODES[10]: 3600.0, NODES[11]: 240.0}
#: (alert, node, GPU) each planted problem must arrive as; None: the node as a whole
EXPECTED = {
    ("GputuiThermalThrottle", NODES[1], "2"),
    ("GputuiPowerCap", NODES[3], "1"),
    ("GputuiPowerLimitLowered", NODES[3], "1"),  # the cap's cause, a finding of its own
    ("GputuiPcieReplays", NODES[5], "6"),
    ("GputuiXidBus32", NODES[7], "3"),
    ("GputuiClocksHeld", NODES[9], "0"),
    ("GputuiBusyNoWork", NODES[4], "5"),
    ("GputuiExporterDown", NODES[10], None),
    ("GputuiNodeNotReporting", NODES[11], None),
}
#: a word of each alert's remedy, that it came with it
REMEDY = {
    "GputuiThermalThrottle": "airflow",
    "GputuiPowerCap": "nvidia-smi -i 1 -q -d POWER",
    "GputuiPowerLimitLowered": "nvidia-smi -i 1 -pl",
    "GputuiPcieReplays": "reseat",
    "GputuiXidBus32": "Reboot the node",
    "GputuiClocksHeld": "nvidia-smi -i 0 -rgc",
    "GputuiBusyNoWork": "nvidia-smi -r -i 5",
    "GputuiExporterDown": "dcgm-exporter",
    "GputuiNodeNotReporting": "dcgm-exporter",
}


def _plan(scrape_s: float) -> Plan:
    xid_from = int((time.time() - 120) // scrape_s)  # the Xid's code changes 2 min ago
    return Plan(
        list(NODES),
        planted=dict(PLANTED),
        stopped=dict(STOPPED),
        onsets={place: xid_from for place, kind in PLANTED.items() if kind == XID},
    )


@pytest.fixture(params=[15.0, 30.0], ids=["15s", "30s"])
def engine_cluster(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Server, Webhook, float, float]]:
    require("prometheus", "promtool", BINARY)
    scrape_s: float = request.param
    terms = Terms(scrape_s)
    rules = tmp_path / "gputui-rules.yml"
    rules.write_text(rules_yaml(engine(terms), terms))
    hook = Webhook()
    manager, process = start_alertmanager(tmp_path, hook.url)
    server = None
    try:
        server = start_prometheus(
            _plan(scrape_s), scrape_s, tmp_path, rules=rules, alertmanager=manager
        )
        yield server, hook, scrape_s, time.monotonic()
    finally:
        if server is not None:
            server.stop()
        process.terminate()
        process.wait(timeout=10)
        hook.shutdown()


def _key(alert: dict[str, Any]) -> tuple[str, str, str | None]:
    labels = alert["labels"]
    return labels["alertname"], labels.get("gputui_node", ""), labels.get("gpu")


def _query(server: Server, query: str) -> list[dict[str, Any]]:
    params = urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(f"{server.url}/api/v1/query?{params}", timeout=5) as answer:
        result: list[dict[str, Any]] = json.load(answer)["data"]["result"]
    return result


def _active(server: Server) -> set[tuple[str, str, str | None]]:
    """Every alert the server holds now, pending or firing."""
    with urllib.request.urlopen(f"{server.url}/api/v1/alerts", timeout=5) as answer:
        alerts = json.load(answer)["data"]["alerts"]
    return {_key(a) for a in alerts if a["labels"].get("gputui_rule")}


def test_every_planted_problem_arrives_as_one_alert_within_the_delay(
    engine_cluster: tuple[Server, Webhook, float, float],
) -> None:
    server, hook, scrape_s, ready = engine_cluster
    # docs/alerting.md: an alert fires ``for`` (one scrape interval here) after the first
    # evaluation that sees its condition, evaluations come every scrape interval, and
    # Alertmanager sends a new group after its group_wait (1 s); a few seconds' slack
    delay = 2 * scrape_s + 1 + 10
    while time.monotonic() - ready < delay:
        if {_key(a) for _, a in hook.received()} >= EXPECTED:
            break
        time.sleep(0.5)
    got = hook.received()
    keys = [_key(alert) for _, alert in got]
    assert set(keys) == EXPECTED, (
        sorted(set(keys) - EXPECTED),
        sorted(EXPECTED - set(keys)),
        [(round(t - ready), _key(a)) for t, a in got],
        _active(server),
    )
    assert len(keys) == len(set(keys))  # one alert each
    for arrived, alert in got:
        assert arrived - ready <= delay
        assert alert["status"] == "firing"
        assert REMEDY[alert["labels"]["alertname"]] in alert["annotations"]["remedies"]
        assert alert["annotations"]["summary"] and alert["annotations"]["description"]
    # nothing pending or firing on a healthy GPU either
    assert _active(server) == EXPECTED
    if scrape_s == 15.0:  # doctor reads the same verdict at any interval: once is enough
        _doctor_reads_the_engine(server)


def _doctor_reads_the_engine(server: Server) -> None:
    """doctor over the same server: the engine's verdict in one query, every planted
    problem a finding on its GPU (the live rule's evidence where it read the node), the
    down nodes one finding; no history read but of the nodes the alerts name."""
    # a server that has just started writes its ALERTS series an evaluation or two after
    # it has sent them (a server that ran all along has them): wait for them, as doctor
    # reads the series, not the notifications
    deadline = time.monotonic() + 60
    while len(_query(server, 'ALERTS_FOR_STATE{gputui_rule!=""}')) < len(EXPECTED):
        assert time.monotonic() < deadline, "the server never wrote its ALERTS series"
        time.sleep(1)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "gputui", "doctor", "--prometheus", server.url, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - started
    document = json.loads(done.stdout)
    notes = " ".join(n["text"] for n in document["latest"]["notes"])
    assert done.returncode == 2, (document["findings"], notes)
    where = {d["index"]: (d["node"], str(d["node_index"])) for d in document["devices"]}
    found = {(f["rule"], where.get(f["gpu"])) for f in document["findings"]}
    assert found == {
        ("thermal-throttle", (NODES[1], "2")),
        ("power-cap", (NODES[3], "1")),
        ("power-limit-lowered", (NODES[3], "1")),
        ("pcie-errors", (NODES[5], "6")),
        ("gpu-errors", (NODES[7], "3")),
        ("clocks-held", (NODES[9], "0")),
        ("busy-no-work", (NODES[4], "5")),
        ("not-reporting", None),
    }
    (down,) = [f for f in document["findings"] if f["rule"] == "not-reporting"]
    assert NODES[10] in down["title"] and NODES[11] in down["title"]
    assert "the engine's rules (gputui rules" in notes
    assert document["judgement"]["complete"], document["judgement"]["not_judged"][:6]
    assert took < 20, took  # a few seconds (a fresh interpreter on a shared machine)
