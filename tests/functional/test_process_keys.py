"""The process table as a person uses it, through Textual's pilot, on a fake 8-GPU node
(the NVML test double) whose GPU 0 runs a real child process of the test: its command
shows what was run, ↑ ↓ select it, T asks and SIGTERM ends it, a refusal sends nothing,
cancel sends nothing, and the process page masks its credentials."""

from __future__ import annotations

import html
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from textual.containers import VerticalScroll
from textual.widgets import Input

from gputui.core.config import Config
from gputui.launch import make_app, make_demo_app
from gputui.sources.host import HostReader
from gputui.sources.nvml import NvmlSource
from gputui.sources.process_access import LocalProcesses
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from gputui.ui.app import GpuTuiApp
from gputui.ui.lines import LineView
from gputui.ui.processes import AllProcessesScreen, FilterScreen, ProcessScreen, SignalScreen
from gputui.ui.screens import FindingScreen
from tests.nvml_double import FakeGpu, FakeNvmlLib, FakeProcess, install

MIB = 1 << 20
VENV_PYTHON = "/usr/local/lib/python3.11/venv/bin/python3"


@pytest.fixture
def trainer(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real process whose command line reads as a training job run from a venv."""
    (tmp_path / "train.py").write_text("import time\ntime.sleep(120)\n")
    env = {**os.environ, "WANDB_API_KEY": "wandb-secret-1", "NCCL_DEBUG": "INFO"}
    proc = subprocess.Popen(
        [VENV_PYTHON, "train.py", "--model", "llama", "--batch-size", "16", "--token", "tk-9"],
        executable=sys.executable,
        cwd=tmp_path,
        env=env,
    )
    yield proc
    proc.kill()
    proc.wait()


def _node_app(
    monkeypatch: pytest.MonkeyPatch, pid: int, access: LocalProcesses, tmp_path: Path
) -> GpuTuiApp:
    return _node(monkeypatch, pid, access, tmp_path)[0]


def _node(
    monkeypatch: pytest.MonkeyPatch, pid: int, access: LocalProcesses, tmp_path: Path
) -> tuple[GpuTuiApp, NvmlSource]:
    gpus = [FakeGpu(processes=[FakeProcess(pid, 2000 * MIB)] if i == 0 else []) for i in range(8)]
    install(monkeypatch, FakeNvmlLib(gpus))
    # a real GPU process holds /dev/nvidia*, which this machine may not have
    source = NvmlSource(host=HostReader(device_check=lambda pid: True))
    devices = source.open()
    app = make_app(
        source, devices, Config(), snapshot_dir=tmp_path, live=False, process_access=access
    )
    for _ in range(2):  # the second reading has the process's CPU share
        app.monitor.ingest(source.read())
    return app, source


def _table(app: GpuTuiApp) -> str:
    return app.query_one("#procs", LineView).plain


def _toasts(app: GpuTuiApp) -> list[str]:
    return [n.message for n in app._notifications]


@pytest.mark.parametrize("size", [(160, 50), (80, 24)])
async def test_the_command_shows_the_script_not_the_venv(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    trainer: subprocess.Popen[bytes],
    size: tuple[int, int],
) -> None:
    app = _node_app(monkeypatch, trainer.pid, LocalProcesses(), tmp_path)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        table = _table(app)
        assert "/usr/local/lib" not in table
        if size == (160, 50):
            assert "train.py --model llama" in table
        assert "python3 train.py" in table


async def test_select_then_sigterm_ends_the_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, trainer: subprocess.Popen[bytes]
) -> None:
    app = _node_app(monkeypatch, trainer.pid, LocalProcesses(), tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("down")
        assert app.choices.procs.pid == trainer.pid
        assert f"▶ {trainer.pid}".replace(" ", "") in _table(app).replace(" ", "")
        await pilot.press("T")
        assert isinstance(app.screen, SignalScreen)
        asked = app.screen.plain
        assert f"Send SIGTERM to PID {trainer.pid}?" in asked
        assert "train.py --model llama" in asked and "tk-9" not in asked
        await pilot.press("y")
        await pilot.pause()
        assert trainer.wait(timeout=5) == -signal.SIGTERM
        assert f"SIGTERM sent to PID {trainer.pid}" in _toasts(app)


async def test_cancel_sends_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, trainer: subprocess.Popen[bytes]
) -> None:
    sent: list[tuple[int, int]] = []
    access = LocalProcesses(kill=lambda pid, sig: sent.append((pid, sig)))
    app = _node_app(monkeypatch, trainer.pid, access, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down", "K")
        assert isinstance(app.screen, SignalScreen)
        await pilot.press("escape")
        await pilot.press("I", "n")
        await pilot.pause()
        assert not isinstance(app.screen, SignalScreen)
        assert sent == [] and trainer.poll() is None
        assert f"Cancelled: nothing sent to PID {trainer.pid}" in _toasts(app)


async def test_another_users_process_is_refused_with_a_clear_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, trainer: subprocess.Popen[bytes]
) -> None:
    sent: list[tuple[int, int]] = []
    not_root = LocalProcesses(
        kill=lambda pid, sig: sent.append((pid, sig)), ids=lambda: (4321, 4321)
    )
    app = _node_app(monkeypatch, trainer.pid, not_root, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down", "T")
        await pilot.pause()
        assert not isinstance(app.screen, SignalScreen)  # nothing to confirm: refused
        assert any("only its owner or root may signal it" in t for t in _toasts(app))
        assert sent == [] and trainer.poll() is None


async def test_the_process_page_masks_credentials(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, trainer: subprocess.Popen[bytes]
) -> None:
    app = _node_app(monkeypatch, trainer.pid, LocalProcesses(), tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("down", "i")
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen)
        page = app.screen.plain
        assert "--token ***" in page and "tk-9" not in page
        assert "WANDB_API_KEY=***" in page and "wandb-secret-1" not in page
        assert "NCCL_DEBUG=INFO" in page
        assert f"{os.getpid()}" in page  # its parent: this test
        await pilot.press("K")  # the page's own process, from the page
        assert isinstance(app.screen, SignalScreen) and "SIGKILL" in app.screen.plain
        await pilot.press("n")
        assert isinstance(app.screen, ProcessScreen) and trainer.poll() is None
        await pilot.press("escape")
        assert not isinstance(app.screen, ProcessScreen)


async def test_sort_keys_filter_user_and_every_gpu_in_the_demo() -> None:
    app = make_demo_app(None, 8, ascii=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("v")
        assert app.choices.procs.all_gpus and "Processes on all GPUs" in _title(app)
        for key, column in (("C", "cpu_percent"), ("P", "pid"), ("O", "command")):
            await pilot.press(key)
            assert app.choices.procs.sort == column
        await pilot.press("O")
        assert app.choices.procs.reverse
        frame = app.monitor.latest
        assert frame is not None
        owners = sorted({p.user for p in frame.processes if p.user})
        assert len(owners) > 1  # the team's job and someone's own run
        for owner in [*owners, None]:
            await pilot.press("u")
            assert app.choices.procs.user == owner
        await pilot.press("slash")
        await pilot.press(*"finetune")
        await pilot.press("enter")
        assert app.choices.procs.text == "finetune"
        assert "finetune.py" in _table(app) and "torchrun" not in _table(app)
        await pilot.press("escape")  # the filter and selection cleared
        assert app.choices.procs.text == "" and app.choices.procs.sort == "command"


async def test_the_every_process_page_has_the_same_keys_and_scrolls_sideways() -> None:
    app = make_demo_app(None, 8, ascii=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("a")
        assert isinstance(app.screen, AllProcessesScreen)
        await pilot.press("down", "down", "M", "right", "right")
        assert app.choices.procs.pid is not None and app.choices.procs.offset == 16
        page = app.screen.query_one("#all", LineView).plain
        assert "…" in page
        await pilot.press("enter")
        assert isinstance(app.screen, ProcessScreen)
        assert "simulated process: nothing more is read" in app.screen.plain
        await pilot.press("escape", "escape")
        assert not isinstance(app.screen, AllProcessesScreen)


def _drawn(app: GpuTuiApp) -> str:
    """The screen as drawn, in plain text (its SVG's text)."""
    svg = app.export_screenshot()
    return html.unescape("".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg))).replace(
        "\xa0", " "
    )


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_a_process_page_draws_its_title_the_process_and_its_pid(
    size: tuple[int, int],
) -> None:
    app = make_demo_app(None, 4, ascii=False)
    async with app.run_test(size=size) as pilot:
        await pilot.press("down", "i")
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen)
        pid = app.screen.pid
        frame = app.monitor.latest
        assert frame is not None
        name = next(p.name for p in frame.processes if p.pid == pid)
        assert name and f"Process {pid} · {name}" in _drawn(app)


async def test_a_process_pages_title_shows_outside_text_inert(tmp_path: Path) -> None:
    """The title names the process by what the process calls itself: escapes made
    visible, markup shown as written, never read."""
    hostile = "\u202e\x1b]0;pwned\x07[b]loud[/b]"
    source = SimulatedSource(resolve_scenarios("healthy", 1), clock=time.time)
    read = source.read
    source.read = lambda: replace(  # type: ignore[method-assign]
        (frame := read()), processes=tuple(replace(p, name=hostile) for p in frame.processes)
    )
    app = make_app(source, source.open(), Config(), snapshot_dir=tmp_path, live=False)
    app.monitor.ingest(source.read())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down", "i")
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen)
        pid, drawn = app.screen.pid, _drawn(app)
    assert f"Process {pid} · <U+202E>␛]0;pwned␇[b]loud[/b] ─" in drawn
    assert "\x1b" not in drawn and "\u202e" not in drawn


def _hidden_rows(app: GpuTuiApp, view: LineView) -> list[str]:
    """The rows of ``view`` the screen does not show as they are (something over them)."""
    drawn = [line.strip() for line in _drawn(app).splitlines()]
    return [row for row in view.plain.splitlines() if row.strip() and row.strip() not in drawn]


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_the_filter_line_hides_no_row_of_the_process_table(size: tuple[int, int]) -> None:
    """/ opens one line at the foot, over the main screen's key line: the process panel
    (the lowest) keeps every row; over every process (a, which reaches the foot) the
    table gives the line its last row and keeps its '+N processes' marker in sight."""
    app = make_demo_app(None, 32, ascii=False)
    async with app.run_test(size=size) as pilot:
        await pilot.press("slash")
        await pilot.pause()
        assert isinstance(app.screen, FilterScreen)
        procs = app.screen_stack[0].query_one("#procs", LineView)
        assert not _hidden_rows(app, procs)
        bar = app.screen.query_one(Input).region
        assert bar.height == 1 and bar.y == size[1] - 1 and procs.region.bottom <= bar.y
        await pilot.press(*"mlteam")
        await pilot.pause()
        assert "mlteam" in procs.plain and not _hidden_rows(app, procs)
        await pilot.press("escape", "a")
        assert isinstance(app.screen, AllProcessesScreen)
        table = app.screen.query_one("#all", LineView)
        rows = len(table.plain.splitlines())
        assert table.region.bottom == size[1] and "processes ↓" in table.plain  # 32 GPUs' jobs
        await pilot.press("slash")
        await pilot.pause()
        assert not _hidden_rows(app, table)
        assert table.region.bottom <= app.screen.query_one(Input).region.y
        assert len(table.plain.splitlines()) == rows - 1
        assert "processes ↓" in table.plain.splitlines()[-1]
        await pilot.press("escape")  # the filter closed: the table has its row back
        await pilot.pause()
        assert table.region.bottom == size[1] and len(table.plain.splitlines()) == rows


async def test_enter_opens_what_the_last_move_selected() -> None:
    """Right after ↓ ↑ in the process table Enter looks into the selected process (as in
    nvitop); after n or Esc it opens the selected finding, as before."""
    app = make_demo_app(None, 4, ascii=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down", "enter")
        assert isinstance(app.screen, ProcessScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, ProcessScreen)
        await pilot.press("n", "enter")  # moved in the findings: the finding
        assert isinstance(app.screen, FindingScreen)
        await pilot.press("escape", "down", "escape", "enter")  # Esc left the table
        assert isinstance(app.screen, FindingScreen)


async def test_a_demo_process_is_never_signalled() -> None:
    app = make_demo_app(None, 4, ascii=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("T")
        assert any("Select a process first" in t for t in _toasts(app))
        await pilot.press("down", "K")
        await pilot.pause()
        assert not isinstance(app.screen, SignalScreen)
        assert any("simulated processes, not this machine's" in t for t in _toasts(app))


def _title(app: GpuTuiApp) -> str:
    return str(app.query_one("#procs", LineView).border_title)


NS_LAST_PID = Path("/proc/sys/kernel/ns_last_pid")


def _take_pid(pid: int, argv: list[str]) -> subprocess.Popen[bytes]:
    """A new process with PID ``pid``, as a PID is reused on a busy machine: the kernel
    gives the PID after ``ns_last_pid`` next (what CRIU restores processes with; root in
    the PID namespace may set it). Skips where this kernel does not let the test choose."""
    for _ in range(50):
        try:
            NS_LAST_PID.write_text(str(pid - 1))
        except OSError as exc:
            pytest.skip(f"a PID cannot be chosen here ({NS_LAST_PID}: {exc.strerror})")
        proc = subprocess.Popen(argv)
        if proc.pid == pid:
            return proc
        proc.kill()  # another process forked in between: try again
        proc.wait()
    pytest.skip(f"PID {pid} could not be taken again (the machine forks too busily)")


@pytest.mark.parametrize("when", ["before T", "between T and y"])
async def test_a_process_page_never_signals_the_process_that_took_its_pid(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    trainer: subprocess.Popen[bytes],
    when: str,
) -> None:
    """Issue 52: a page (i) opened for a process that then ended, its PID taken by a new
    GPU process: T then y signalled the new one. The page's process is its PID and start
    time: the new process is never signalled, and the screen says why."""
    sent: list[tuple[int, int]] = []
    access = LocalProcesses(kill=lambda pid, sig: sent.append((pid, sig)))
    app, source = _node(monkeypatch, trainer.pid, access, tmp_path)
    pid = trainer.pid
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("down", "i")
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen) and app.screen.pid == pid
        assert app.monitor.latest is not None
        (opened,) = [p for p in app.monitor.latest.processes if p.pid == pid]
        if when == "between T and y":
            await pilot.press("T")
            assert isinstance(app.screen, SignalScreen)
        trainer.kill()
        trainer.wait()
        newcomer = _take_pid(pid, [sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            for _ in range(2):  # NVML's list still names the PID: now the newcomer's
                app.monitor.ingest(source.read())
            (shown,) = [p for p in app.monitor.latest.processes if p.pid == pid]
            assert shown.started is not None and shown.started != opened.started
            if when == "before T":
                await pilot.press("T")
                await pilot.pause()
                assert not isinstance(app.screen, SignalScreen)  # nothing to confirm
            await pilot.press("y")
            await pilot.pause()
            assert sent == [] and newcomer.poll() is None
            said = str(app.screen.query_one("#dialog", VerticalScroll).border_subtitle)
            assert isinstance(app.screen, ProcessScreen), "the page stays, for its process"
            assert said.startswith("SIGTERM: Not sent: PID") and "another process" in said, said
        finally:
            newcomer.kill()
            newcomer.wait()
