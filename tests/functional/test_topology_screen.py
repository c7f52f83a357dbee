"""The topology screen through Textual's pilot: the `y` key, on the demo's topology scenarios."""

from __future__ import annotations

import asyncio

from gputui.launch import make_demo_app
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from gputui.ui.screens import TopologyScreen
from gputui.view.topology import matrix, topology_page


def _screen_text(scenario: str, gpus: int) -> str:
    async def go() -> str:
        app = make_demo_app(scenario, gpus, warmup_s=30)
        async with app.run_test(size=(140, 48)) as pilot:
            await pilot.press("y")
            await pilot.pause()
            assert isinstance(app.screen, TopologyScreen)
            text = app.screen.plain
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, TopologyScreen)
            return text

    return asyncio.run(go())


def test_y_opens_the_matrix_with_numa_and_far_processes() -> None:
    text = _screen_text("numa", 4)
    assert "NV18" in text and "PCIe path" in text and "SYS" in text
    assert "CPUs 32-63 (node 1)" in text and "workers: 8 on node 1" in text


def test_nvlink_down_shows_the_links_that_are_down() -> None:
    text = _screen_text("nvlink-down", 2)
    assert "16/18 up" in text and "down: link 3, 11" in text


def test_matrix_cells_follow_topo_m() -> None:
    devices = SimulatedSource(resolve_scenarios("pcie", 4)).open()  # PCIe cards: no NVLink
    assert matrix(devices)[0] == ["X", "PIX", "SYS", "SYS"]
    page = topology_page(devices, None)
    assert any("no NVLink (PCIe only)" in "".join(c.text for c in r.cells) for r in page.rows)
