"""The engine's verdict read back (issue 53): where `gputui rules` are loaded in the
cluster's server, doctor takes its alerts for the rules it evaluates (one query, at any
size) and the app ranks the nodes it names; the live rule's evidence where gputui read
the node's history, the engine's own words where it did not."""

from __future__ import annotations

from dataclasses import replace

from gputui.advisor import make_advisor
from gputui.advisor.nodes import node_rows
from gputui.advisor.promrules import Terms, covers, engine
from gputui.core.judgement import EngineAlert, EngineVerdict
from gputui.core.model import Frame, NodeStatus
from gputui.core.names import RuleId, Severity
from gputui.exporters.rules_file import rules_yaml
from gputui.sampling.history import History
from gputui.sources.prometheus.alerts import (
    MATCH_LABEL,
    alerts_of,
    annotations_of,
    match_tag,
    rules_loaded,
)
from gputui.sources.prometheus.nodes import ClusterNode, Tagged, status_of, suspicion
from gputui.sources.prometheus.queries import TAG, NodeKey
from tests.advisor_kit import BUSY, H100

NOW = 1_800_000_000.0
#: every rule `gputui rules` writes: a verdict that names them all is complete
ALL = frozenset(engine(Terms(30.0)).by_rule())


def _nodes() -> dict[NodeKey, ClusterNode]:
    a = ClusterNode(NodeKey("Hostname", "node-a"), "node-a", gpus=(0, 1), first_index=0)
    b = ClusterNode(NodeKey("Hostname", "node-b"), "node-b", gpus=(0,), first_index=2)
    return {a.key: a, b.key: b}


def _series(labels: dict[str, str], value: float) -> dict[str, object]:
    return {"metric": labels, "value": [NOW, repr(value)]}


def test_the_marker_says_which_rules_the_engine_evaluates_for_which_match() -> None:
    # an empty match is no label at all (Prometheus drops a label with an empty value)
    marker = {"__name__": "gputui_rules_info", "rules": ",".join(sorted(ALL))}
    found = rules_loaded([_series({**marker, "scrape_interval": "30s"}, 1)], "")
    assert found == (ALL, 30.0)
    # rules written for another selection of nodes judge other nodes: not this verdict
    assert rules_loaded([_series({**marker, "scrape_interval": "30s"}, 1)], 'job="x"') is None
    assert covers(ALL)
    for rule in (RuleId.CLOCKS_HELD, RuleId.BUSY_NO_WORK, RuleId.FAN_FAULT):
        assert not covers(ALL - {rule})


def test_alerts_land_on_their_gpu_or_node_with_what_the_engine_said() -> None:
    gpu = {"alertname": "GputuiClocksHeld", "gputui_rule": "clocks-held", "severity": "warning"}
    gpu |= {"Hostname": "node-a", "instance": "node-a:9400", "gpu": "1"}
    node = {"alertname": "GputuiNodeNotReporting", "gputui_rule": "not-reporting"}
    node |= {"severity": "warning", "Hostname": "node-b", "instance": "node-b:9400"}
    # a node of this selection the source holds no GPUs of: the alert is about it whole;
    # one of another rules file's selection (its digest) is that file's business
    other = {**gpu, "Hostname": "node-z", "instance": "node-z:9400"}
    elsewhere = {**other, "Hostname": "node-y", MATCH_LABEL: match_tag('cluster="b"')}
    said = annotations_of(
        [
            {
                "labels": gpu,
                "annotations": {
                    "description": "SM clock at 55 % of its maximum",
                    "remedies": "a\nb",
                },
                "state": "firing",
            }
        ]
    )
    alerts = alerts_of(
        [
            _series(gpu, NOW - 120),
            _series(node, NOW - 60),
            _series(other, NOW),
            _series(elsewhere, NOW),
        ],
        _nodes(),
        NOW,
        said,
    )
    assert [(a.name, a.gpu, a.node, a.since) for a in alerts] == [
        ("GputuiClocksHeld", 1, "node-a", NOW - 120),
        ("GputuiNodeNotReporting", None, "node-b", NOW - 60),
        ("GputuiClocksHeld", None, "node-z GPU 1", NOW),
    ]
    assert alerts[0].description == "SM clock at 55 % of its maximum"
    assert alerts[0].remedies == ("a", "b")


def test_a_node_down_since_long_before_is_found_by_any_name_its_alerts_carry() -> None:
    """A node whose exporter stopped long before the window the source read: known by its
    target alone (``up == 0``), or not at all where that query failed on a loaded server.
    The engine's silence alerts name it by its target (``GputuiExporterDown``: ``up``'s
    labels) or by the names it last reported under (``GputuiNodeNotReporting``): either
    way it is a finding, never left out for want of a GPU of it in the window."""
    target = ClusterNode(NodeKey("instance", "node-c:9400"), "node-c:9400", "node-c:9400")
    nodes = {**_nodes(), target.key: target}
    rule = {"gputui_rule": "not-reporting", "severity": "warning"}
    exporter = {"alertname": "GputuiExporterDown", "instance": "node-c:9400", **rule}
    remembered = {"alertname": "GputuiNodeNotReporting", "Hostname": "node-c", **rule}
    remembered["instance"] = "node-c:9400"
    unlisted = {**remembered, "Hostname": "node-d", "instance": "node-d:9400"}
    match = 'cluster="a"'
    tagged = [_series({**s, MATCH_LABEL: match_tag(match)}, NOW) for s in (exporter, unlisted)]
    alerts = alerts_of([_series(remembered, NOW - 30), *tagged], nodes, NOW, match=match)
    assert [(a.name, a.node, a.gpu) for a in alerts] == [
        ("GputuiNodeNotReporting", "node-c:9400", None),
        ("GputuiExporterDown", "node-c:9400", None),
        ("GputuiNodeNotReporting", "node-d", None),
    ]
    # a name is matched as the source keyed it (node_key: as the label has it, spaces and
    # all), not a cleaned copy that names no node
    spaced = ClusterNode(NodeKey("Hostname", "node-e "), "node-e", gpus=(0,), first_index=3)
    held = {"alertname": "GputuiClocksHeld", "gputui_rule": "clocks-held"}
    held |= {"severity": "warning", "Hostname": "node-e ", "gpu": "0"}
    (on_gpu,) = alerts_of([_series(held, NOW)], {spaced.key: spaced}, NOW)
    assert (on_gpu.node, on_gpu.gpu) == ("node-e", 3)
    # the rules for that selection carry its digest, which the source matches
    rules = rules_yaml(engine(Terms(30.0, match=match)), Terms(30.0, match=match))
    assert f'{MATCH_LABEL}: "{match_tag(match)}"' in rules
    assert MATCH_LABEL not in rules_yaml(engine(Terms(30.0)), Terms(30.0))
    advisor = make_advisor([replace(H100, index=0, node="node-a", node_index=0)], remote=True)
    advisor.set_engine(EngineVerdict(ALL, alerts, 30.0))
    history = History(40)
    history.add(Frame(time=NOW, gpus=(replace(BUSY, index=0),)))
    (down,) = advisor.update(history, force=True)
    assert down.rule is RuleId.NOT_REPORTING and down.gpu is None
    assert down.title == "2 node(s) not reporting: node-c:9400, node-d"


def test_the_advisor_takes_the_engines_alerts_and_its_verdict_is_complete() -> None:
    devices = [replace(H100, index=i, node="node-a", node_index=i) for i in range(2)]
    devices.append(replace(H100, index=2, node="node-b", node_index=0))
    advisor = make_advisor(devices, remote=True)
    held = EngineAlert(
        RuleId.CLOCKS_HELD,
        Severity.WARNING,
        1,
        "node-a",
        "GputuiClocksHeld",
        NOW - 120,
        "SM clock at 55 % of its maximum over the last 2 min 45 s",
    )
    down = EngineAlert(
        RuleId.NOT_REPORTING, Severity.WARNING, None, "node-b", "GputuiNodeNotReporting", NOW
    )
    advisor.set_engine(EngineVerdict(ALL, (held, down), 30.0))
    history = History(40)
    # one reading, no history: the engine judged every rule with its own windows
    history.add(Frame(time=NOW, gpus=(replace(BUSY, index=0), replace(BUSY, index=1))))
    findings = advisor.update(history, force=True)
    by_rule = {(f.rule, f.gpu): f for f in findings}
    clock = by_rule[(RuleId.CLOCKS_HELD, 1)]
    assert clock.evidence[0] == "SM clock at 55 % of its maximum over the last 2 min 45 s"
    assert "fires, since 2 min 00 s ago" in clock.evidence[-1]
    assert any("On node-a: " in r and "-i 1 " in r for r in clock.remedies)  # its form's
    assert by_rule[(RuleId.NOT_REPORTING, None)].title == "1 node(s) not reporting: node-b"
    assert len(findings) == 2  # nothing judged here says otherwise
    judgement = advisor.judgement
    assert judgement.complete, judgement.not_judged
    assert not judgement.gathering


def test_the_app_ranks_the_nodes_the_engine_names() -> None:
    nodes = _nodes()
    answer = [
        _series({"Hostname": "node-b", TAG: "engine_critical"}, 2),
        _series({"Hostname": "node-a", TAG: "newest"}, NOW),
        _series({"Hostname": "node-b", TAG: "newest"}, NOW),
    ]
    tagged = Tagged().take(answer, NOW)
    figure = tagged.figures[NodeKey("Hostname", "node-b")]
    assert suspicion(figure) is Severity.CRITICAL
    status = status_of(nodes[NodeKey("Hostname", "node-b")], figure, None, NOW)
    assert status.engine_critical == 2
    device = replace(H100, index=2, node="node-b", node_index=0)
    frame = Frame(time=NOW, gpus=(), nodes=(status, NodeStatus("node-a")))
    (row,) = node_rows([device], frame, [])
    assert row.worst == (Severity.CRITICAL,)
