"""The cluster view: one row per node, worst first, Enter opens that node's GPUs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gputui.advisor.nodes import node_rows
from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import DeviceInfo, Finding, Frame, GpuSample
from gputui.core.names import RuleId, Severity
from gputui.launch import make_app
from gputui.sources.simulated import SimulatedSource
from gputui.ui.screens import ClusterScreen


def _device(index: int, node: str) -> DeviceInfo:
    return DeviceInfo(index=index, name="NVIDIA H100 80GB HBM3", node=node)


def test_nodes_rank_worst_first() -> None:
    devices = [_device(i, f"node-{i // 2}") for i in range(6)]  # 3 nodes of 2 GPUs
    frame = Frame(
        time=1.0,
        gpus=tuple(
            GpuSample(index=i, util_gpu=50.0 + i, temp_c=60.0 + i, power_w=400.0)
            for i in range(5)  # GPU 5 (node-2) did not report
        ),
    )
    findings = [
        Finding(RuleId.THERMAL_THROTTLE, Severity.CRITICAL, 1, "t", (), (), 0, 1),
        Finding(RuleId.POWER_CAP, Severity.WARNING, 2, "t", (), (), 0, 1),
    ]
    rows = node_rows(devices, frame, findings)
    assert [r.node for r in rows] == ["node-2", "node-0", "node-1"]  # not reporting first
    node0 = rows[1]
    assert node0.worst == (None, Severity.CRITICAL) and node0.findings == 1
    assert node0.hottest_c == 61.0 and node0.power_w == 800.0


async def test_the_cluster_screen_opens_a_node(tmp_path: Path) -> None:
    clock = ManualClock(1.8e9)
    sim = SimulatedSource(("healthy", "healthy", "thermal", "healthy"), clock=clock)
    devices = tuple(dataclasses.replace(d, node=f"gpu-node-{d.index // 2}") for d in sim.open())
    app = make_app(sim, devices, Config(), snapshot_dir=tmp_path, live=False)
    for _ in range(60):
        app.monitor.ingest(sim.read())
        clock.advance(1.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ClusterScreen)
        text = app.screen.plain
        lines = [line for line in text.splitlines() if "gpu-node-" in line]
        assert lines[0].startswith("▶ gpu-node-1")  # the thermal GPU's node first
        assert "✖" in lines[0] and "gpu-node-0" in lines[1]
        await pilot.press("down", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, ClusterScreen)
        assert app.selected == 0  # node-0's first GPU
