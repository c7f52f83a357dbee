"""The cluster view: one row per node, worst first, Enter opens that node's GPUs."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from gputui.advisor.nodes import node_rows
from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import DeviceInfo, Finding, Frame, GpuSample
from gputui.core.names import RuleId, Severity
from gputui.launch import make_app
from gputui.sources.simulated import SimulatedSource
from gputui.ui.app import GpuTuiApp
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
        await pilot.press("c", "q")  # q goes back, as on every page over the panels
        await pilot.pause()
        assert app.screen is app.screen_stack[0] and app.is_running


def _cluster_app(tmp_path: Path, nodes: int = 40) -> tuple[GpuTuiApp, tuple[DeviceInfo, ...]]:
    """``nodes`` nodes of two GPUs each, every GPU reporting, fed by hand."""
    sim = SimulatedSource(("healthy",), clock=ManualClock(1.8e9))
    sim.open()
    devices = tuple(_device(i, f"node-{i // 2:02d}") for i in range(2 * nodes))
    app = make_app(sim, devices, Config(), snapshot_dir=tmp_path, live=False)
    return app, devices


def _feed(
    app: GpuTuiApp,
    devices: Sequence[DeviceInfo],
    at: float,
    silent: frozenset[int] = frozenset(),
) -> None:
    gpus = tuple(
        GpuSample(index=d.index, util_gpu=90.0, temp_c=60.0, power_w=500.0)
        for d in devices
        if d.index not in silent
    )
    app.monitor.ingest(Frame(time=at, gpus=gpus))


def _shown(app: GpuTuiApp) -> list[str]:
    assert isinstance(app.screen, ClusterScreen)
    return app.screen.plain.splitlines()


async def test_cluster_keys_selection_and_hidden_rows_at_80x24(tmp_path: Path) -> None:
    app, devices = _cluster_app(tmp_path)
    for t in range(3):
        _feed(app, devices, 1.8e9 + t)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("c")
        await pilot.pause()
        lines = _shown(app)
        assert any("nodes below" in line for line in lines)
        assert not any("nodes above" in line for line in lines)
        assert sum(1 for line in lines if "node-" in line) < 40  # not every node fits
        for _ in range(20):
            await pilot.press("down")  # the arrows select (the panel does not scroll)
        await pilot.pause()
        lines = _shown(app)
        chosen = [line for line in lines if line.lstrip().startswith("▶")]
        assert len(chosen) == 1 and "node-20" in chosen[0]
        assert any("nodes above" in line for line in lines)
        assert any("nodes below" in line for line in lines)
        # the ranking changes (node-03 stops reporting and goes first): node-20 stays chosen
        _feed(app, devices, 1.8e9 + 10, silent=frozenset({6, 7}))
        app.redraw()
        await pilot.pause()
        chosen = [line for line in _shown(app) if line.lstrip().startswith("▶")]
        assert len(chosen) == 1 and "node-20" in chosen[0]
        await pilot.press("up")
        await pilot.pause()
        chosen = [line for line in _shown(app) if line.lstrip().startswith("▶")]
        assert "node-19" in chosen[0]
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, ClusterScreen)
        assert devices[app.selected].node == "node-19"


async def test_cluster_screen_at_160x50_shows_more_and_counts_the_rest(tmp_path: Path) -> None:
    app, devices = _cluster_app(tmp_path, nodes=60)
    for t in range(3):
        _feed(app, devices, 1.8e9 + t)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("c")
        await pilot.pause()
        lines = _shown(app)
        rows = [line for line in lines if "node-" in line and "nodes" not in line]
        below = next(line for line in lines if "nodes below" in line)
        assert len(rows) > 30 and int(below.split("+")[1].split()[0]) == 60 - len(rows)
        await pilot.press("pagedown", "pagedown", "pagedown", "pagedown", "pagedown", "pagedown")
        await pilot.pause()
        chosen = [line for line in _shown(app) if line.lstrip().startswith("▶")]
        assert len(chosen) == 1 and "node-59" in chosen[0]  # the last, in view
        assert not any("nodes below" in line for line in _shown(app))
