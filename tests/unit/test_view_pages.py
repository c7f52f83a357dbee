"""The pages over the panels, built without Textual: help, a finding, the rules, the
cluster, the topology. Every line fits its width; outside text stays text."""

from __future__ import annotations

import dataclasses

import pytest

from gputui.advisor import RULES
from gputui.advisor.nodes import node_rows
from gputui.core.config import Thresholds
from gputui.core.manual_clock import ManualClock
from gputui.core.model import Finding
from gputui.core.names import RuleId, Severity
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from gputui.view.cells import Panel
from gputui.view.cluster import cluster_page
from gputui.view.pages import finding_page, help_page, rules_page
from gputui.view.topology import topology_page


def lines(panel: Panel) -> list[str]:
    return ["".join(cell.text for cell in row.cells) for row in panel.rows]


@pytest.mark.parametrize("width", [40, 66, 110])
def test_help_lists_each_key_whole_and_wraps_what_it_does(width: int) -> None:
    keys = [("← → / h l / Shift+Tab Tab", "previous / next GPU"), ("q", "quit " * 20)]
    legend = [("Columns", [("SM%", "the share of the SMs a process kept busy")])]
    text = lines(help_page(keys, legend, replay=False, width=width))
    assert text[0] == "gputui keys  (live)"
    assert "← → / h l / Shift+Tab Tab" in "\n".join(text)  # never cut
    assert all(len(line.rstrip()) <= width for line in text), width
    assert "Columns" in text and any(line.startswith("SM%") for line in text)


def test_a_finding_page_says_everything_and_that_remedies_are_text() -> None:
    finding = Finding(
        RuleId.THERMAL_THROTTLE,
        Severity.CRITICAL,
        3,
        "Thermal throttling",
        ("90 °C, slowdown at 89 °C", "[bold]not markup[/]"),
        ("Check the airflow",),
        since=0.0,
        updated=1.0,
    )
    page = finding_page(finding, 60)
    text = lines(page)
    assert text[0] == "CRITICAL  thermal-throttle  (GPU 3)"
    assert "  · [bold]not markup[/]" in text  # a cell's text, never parsed
    assert "  → Check the airflow" in text
    assert text[-1].startswith("gputui never changes GPU settings")


def test_the_rules_page_states_each_rules_numbers() -> None:
    t = Thresholds()
    text = "\n".join(lines(rules_page(RULES, t, 80)))
    for rule in RULES:
        assert rule.id.value in text
    assert f"{t.window_s:g} s" in text and "suggests:" in text


def test_the_cluster_page_ranks_nodes_worst_first_with_a_selection() -> None:
    clock = ManualClock(1.8e9)
    sim = SimulatedSource(("healthy", "healthy", "thermal", "healthy"), clock=clock)
    devices = tuple(dataclasses.replace(d, node=f"node-{d.index // 2}") for d in sim.open())
    from gputui.advisor import make_monitor
    from gputui.core.config import Config
    from gputui.core.model import SourceInfo
    from gputui.core.names import SourceKind

    monitor = make_monitor(devices, Config(), SourceInfo("S", SourceKind.SIMULATED))
    for _ in range(60):
        monitor.ingest(sim.read())
        clock.advance(1.0)
    rows = node_rows(monitor.devices, monitor.latest, monitor.findings)
    text = lines(cluster_page(rows, 4, selected=0, width=100))
    nodes = [line for line in text if "node-" in line]
    assert nodes[0].startswith("▶ node-1") and "✖" in nodes[0]
    assert nodes[1].startswith("  node-0")


def test_the_topology_page_shows_the_matrix_and_where_processes_run() -> None:
    clock = ManualClock(1.8e9)
    sim = SimulatedSource(resolve_scenarios("numa", 4), clock=clock)
    devices = sim.open()
    text = "\n".join(lines(topology_page(devices, sim.read())))
    assert "NV18" in text and "PCIe path" in text and "SYS" in text
    assert "CPUs 32-63 (node 1)" in text and "workers: 8 on node 1" in text
    assert "This source gives no topology" in "\n".join(lines(topology_page((), None)))
