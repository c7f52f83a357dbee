"""What a newcomer tripped on (issue 50), through Textual's pilot: a GPU's only process
never hidden by a note about other GPUs, `c` on one node, a topology the driver does not
give, the every-process page's filter and scroll staying its own, USER at 80x24, the
snapshot key in the footer at 120 columns."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gputui.core.config import Config
from gputui.launch import make_app
from gputui.sources.host import HostReader
from gputui.sources.nvml import NvmlSource
from gputui.sources.process_access import LocalProcesses
from gputui.sources.remote import RemoteSource
from gputui.ui.app import GpuTuiApp
from gputui.ui.lines import LineView
from gputui.ui.processes import AllProcessesScreen, SignalScreen
from gputui.ui.screens import ClusterScreen, TopologyScreen
from tests.conftest import DemoApp
from tests.nvml_double import NOT_SUPPORTED, FakeGpu, FakeNvmlLib, FakeProcess, install
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
    foreign = {3: pids[:2], 4: pids[2:3], 5: pids[3:4], 7: pids[4:]}
    gpus = []
    for i in range(8):
        held = (own,) if i == 0 else foreign.get(i, ())
        gpus.append(FakeGpu(processes=[FakeProcess(p, 2000 * MIB) for p in held], **gpu))
    install(monkeypatch, FakeNvmlLib(gpus))
    source = NvmlSource(host=HostReader(device_check=lambda pid: pid == own))
    devices = source.open()
    app = make_app(
        source,
        devices,
        Config(),
        snapshot_dir=tmp_path,
        live=False,
        ascii=False,
        process_access=LocalProcesses(kill=lambda pid, sig: None),
    )
    for _ in range(2):
        app.monitor.ingest(source.read())
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
        assert rows and all(row[1:] == ["0-3", "0"] for row in rows), rows  # its CPUs alone
        assert "?" not in "".join(matrix)
