"""What a newcomer tripped on (issue 50), through Textual's pilot: a GPU's only process
never hidden by a note about other GPUs, `c` on one node, a topology the driver does not
give, the every-process page's filter and scroll staying its own, USER at 80x24, the
snapshot key in the footer at 120 columns."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gputui.core.config import Config
from gputui.launch import make_app
from gputui.sources.process_access import LocalProcesses
from gputui.sources.remote import RemoteSource
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from gputui.ui.app import GpuTuiApp
from gputui.ui.lines import LineView
from gputui.ui.processes import AllProcessesScreen, ProcessScreen, SignalScreen
from gputui.ui.screens import ClusterScreen, RulesScreen, TopologyScreen
from tests.conftest import DemoApp
from tests.node_apps import node_app
from tests.nvml_double import NOT_SUPPORTED
from tests.servers import answer, dcgm_payload, serve

MIB = 1 << 20


def _foreign(count: int) -> tuple[int, ...]:
    """PIDs no process here has (under this kernel's pid_max): how NVML names processes of
    another PID namespace."""
    top = int(Path("/proc/sys/kernel/pid_max").read_text())
    free = (p for p in range(top - 1, 300, -1) if not Path(f"/proc/{p}").exists())
    return tuple(next(free) for _ in range(count))


@pytest.fixture
def job() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


def _node(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, own: int, **gpu: Any) -> GpuTuiApp:
    """Eight GPUs: GPU 0 runs ``own`` (a process of this test), GPUs 3, 4, 5 and 7 run
    processes of another PID namespace (five of them)."""
    pids = _foreign(5)
    held = {0: (own,), 3: pids[:2], 4: pids[2:3], 5: pids[3:4], 7: pids[4:]}
    access = LocalProcesses(kill=lambda pid, sig: None)
    app, _ = node_app(monkeypatch, tmp_path, held, (own,), access, **gpu)
    return app


def _procs(app: GpuTuiApp) -> list[str]:
    return app.query_one("#procs", LineView).plain.splitlines()


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_a_note_about_other_gpus_never_hides_a_gpus_only_process(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    job: subprocess.Popen[bytes],
    size: tuple[int, int],
) -> None:
    app = _node(monkeypatch, tmp_path, job.pid)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        table = _procs(app)
        assert any(f" {job.pid} " in f" {row} " for row in table), table
        assert not any("PID namespace" in row for row in table)  # GPU 0 has none hidden
        await pilot.press("j")
        marked = [row for row in _procs(app) if row.startswith("▶")]
        assert len(marked) == 1 and str(job.pid) in marked[0]
        await pilot.press("T")
        assert isinstance(app.screen, SignalScreen) and str(job.pid) in app.screen.plain
        await pilot.press("n", "escape", "3")
        await pilot.pause()
        table = _procs(app)  # GPU 3: the two processes it cannot see, a row each or counted
        rows = sum(1 for row in table if "(not visible" in row)
        assert rows == 2 or (rows == 0 and table[-1].startswith("+2 processes")), table
        await pilot.press("j")  # what j selects is in view, whatever the room
        marked = [row for row in _procs(app) if row.startswith("▶")]
        assert len(marked) == 1 and "(not visible" in marked[0], _procs(app)
        note = [row for row in table if "here not visible in this PID namespace" in row]
        assert not note or note[0].startswith("2 processes here")


def _toasts(app: GpuTuiApp) -> list[str]:
    return [n.message for n in app._notifications]


async def test_c_on_one_node_says_why_there_is_no_cluster_page(demo_app: DemoApp) -> None:
    app = demo_app(None, 4)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("c")
        await pilot.pause()
        assert not isinstance(app.screen, ClusterScreen)
        assert any("One node here" in t and "--prometheus" in t for t in _toasts(app))


async def test_a_remote_gpu_says_its_source_reads_no_processes() -> None:
    url, server = serve(answer(dcgm_payload("gpu-node-a")))
    source = RemoteSource([url], timeout_s=2.0)
    try:
        app = make_app(source, source.open(), Config(), live=False, ascii=False)
        app.monitor.ingest(source.read())
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            table = "\n".join(_procs(app))
            assert "this source reads no processes" in table
            assert "no processes on this GPU" not in table
            await pilot.press("v")
            assert "this source reads no processes" in "\n".join(_procs(app))
            await pilot.press("a")
            assert isinstance(app.screen, AllProcessesScreen)
            page = app.screen.query_one("#all", LineView).plain
            assert "this source reads no processes" in page
    finally:
        source.close()
        server.shutdown()


async def test_a_driver_without_topology_says_so_instead_of_a_grid_of_question_marks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, job: subprocess.Popen[bytes]
) -> None:
    errors = {"nvmlDeviceGetTopologyCommonAncestor": NOT_SUPPORTED}
    app = _node(
        monkeypatch, tmp_path, job.pid, errors=errors, numa_node=0, cpu_affinity=(0, 1, 2, 3)
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, TopologyScreen)
        page = app.screen.plain
        assert "This driver gives no PCIe paths between the GPUs" in page
        assert "no NVLink (PCIe only)" in page
        matrix = page[: page.index("NVLink")].splitlines()
        rows = [line.split() for line in matrix if line.startswith("GPU")]
        # each GPU's CPUs and NUMA node alone, no column of paths; the NUMA node where the
        # bindings can ask for it (nvidia-ml-py 12.535 has no nvmlDeviceGetNumaNodeId)
        assert rows and all(row[1:] in (["0-3", "0"], ["0-3", "?"]) for row in rows), rows
        if any(row[2] == "?" for row in rows):
            assert "not read: the driver did not say" in page


async def test_a_process_page_counts_two_children_in_english(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    loader = (
        "import subprocess, sys, time\n"
        "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])"
        " for _ in range(2)]\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", loader])
    try:
        app = _node(monkeypatch, tmp_path, parent.pid)
        async with app.run_test(size=(120, 40)) as pilot:
            for _ in range(50):  # its two workers started
                await pilot.pause(0.1)
                kids = Path(f"/proc/{parent.pid}/task/{parent.pid}/children").read_text()
                if len(kids.split()) == 2:
                    break
            await pilot.press("j", "i")
            await pilot.pause()
            assert isinstance(app.screen, ProcessScreen)
            page = app.screen.plain
            assert "2 children" in page and "childs" not in page
    finally:
        with contextlib.suppress(OSError):
            for kid in Path(f"/proc/{parent.pid}/task/{parent.pid}/children").read_text().split():
                os.kill(int(kid), signal.SIGKILL)
        parent.kill()
        parent.wait()


async def test_the_every_process_pages_filter_and_scroll_stay_its_own(demo_app: DemoApp) -> None:
    app = demo_app(None, 8)
    async with app.run_test(size=(120, 40)) as pilot:
        before = _procs(app)
        await pilot.press("a", "slash", *"finetune", "enter", "right", "right")
        assert isinstance(app.screen, AllProcessesScreen)
        assert app.choices.procs.text == "finetune" and app.choices.procs.offset == 16
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, AllProcessesScreen)
        procs = app.choices.procs
        assert (procs.text, procs.user, procs.offset) == ("", None, 0)
        assert _procs(app) == before  # not filtered, not scrolled sideways
        title = str(app.query_one("#procs", LineView).border_title)
        assert " of " not in title and "finetune" not in title


async def test_every_process_at_80x24_says_whose_each_is(demo_app: DemoApp) -> None:
    app = demo_app(None, 8)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("a")
        assert isinstance(app.screen, AllProcessesScreen)
        rows = app.screen.query_one("#all", LineView).plain.splitlines()
        header = next(row for row in rows if "PID" in row)
        assert "USER" in header and "COMMAND" in header, header
        assert any("mlteam" in row for row in rows)


@pytest.mark.parametrize("size", [(120, 40), (100, 30), (80, 24)])
async def test_the_footer_always_offers_the_snapshot(
    demo_app: DemoApp, size: tuple[int, int]
) -> None:
    app = demo_app(None, 8)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        footer = app.query_one("#footer", LineView).plain
        assert " s snapshot " in footer and " ? help " in footer, footer


async def test_the_rules_page_says_what_a_causes_number_is(demo_app: DemoApp) -> None:
    app = demo_app(None, 4)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, RulesScreen)
        page = " ".join(app.screen.plain.split())
        assert "(1) thermal throttling" in page and "(5) the software stack" in page
        assert "thermal-throttle cause 1 thermal" in page


async def test_the_demos_history_meets_its_live_ticks_without_a_gap(tmp_path: Path) -> None:
    """The demo opens with two minutes of simulated history; the app takes a moment to
    start before its first read (here two seconds): the seconds between are caught up, so
    the sparklines have no empty column where the history meets the live ticks."""
    source = SimulatedSource(resolve_scenarios("healthy", 2), history_s=120.0)
    devices = source.open()
    history = source.backfill()
    time.sleep(2.0)  # a slow start
    app = make_app(source, devices, Config(), snapshot_dir=tmp_path, history=history)
    async with app.run_test(size=(160, 50)) as pilot:
        for _ in range(40):
            await pilot.pause(0.1)
            if app.monitor.history.times()[-1] > history[-1].time + 2.5:
                break
        times = app.monitor.history.times()
        steps = [b - a for a, b in itertools.pairwise(times)]
        assert times[-1] > history[-1].time + 2.5 and max(steps) < 1.5, steps[-6:]
        detail = app.query_one("#detail", LineView).plain.splitlines()
        util = next(line for line in detail if line.startswith("util "))
        spark = util.split()[1]  # the sparkline: one glyph a column, none blank
        assert " " not in spark and len(spark) >= 20, util
    if app.sampler is not None:
        app.sampler.stop()
    source.close()
