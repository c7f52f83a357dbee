"""Several processes signalled at once, as nvitop's users tag them, through Textual's pilot
on a fake node (the NVML double) whose GPUs 0, 1 and 2 run real processes of this test:
space tags, T I K ask once naming each, n sends nothing, y sends each its signal by its PID
and start time (one that is now another process is named and skipped), and --readonly
sends none."""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from gputui.sources.nvml import NvmlSource
from gputui.sources.process_access import LocalProcesses
from gputui.ui.app import GpuTuiApp
from gputui.ui.lines import LineView
from gputui.ui.processes import AllProcessesScreen, SignalScreen, SignalsScreen
from tests.node_apps import node_app

MIB = 1 << 20


@pytest.fixture
def jobs() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Three real processes, one a GPU (0, 1, 2), each its own command line."""
    started = [
        subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(120)  # job {i}"])
        for i in range(3)
    ]
    yield started
    for proc in started:
        proc.kill()
        proc.wait()


def _app(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    pids: list[int],
    access: LocalProcesses,
    readonly: bool = False,
) -> tuple[GpuTuiApp, NvmlSource]:
    """Four GPUs, the first three running one of ``pids`` each."""
    held = {i: (pid,) for i, pid in enumerate(pids)}
    return node_app(monkeypatch, tmp_path, held, pids, access, gpus=4, readonly=readonly)


def _toasts(app: GpuTuiApp) -> list[str]:
    return [n.message for n in app._notifications]


async def _tag_first_two(app: GpuTuiApp, pids: list[int], pilot: Pilot[int]) -> None:
    """v (every GPU's processes), sorted by PID, the first two tagged."""
    await pilot.press("v", "P", "down", "space", "down", "space")
    assert app.choices.procs.tagged_pids == frozenset(sorted(pids)[:2])


async def test_tagged_processes_are_named_once_and_cancel_sends_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, jobs: list[subprocess.Popen[bytes]]
) -> None:
    pids = [p.pid for p in jobs]
    sent: list[tuple[int, int]] = []
    app, _ = _app(monkeypatch, tmp_path, pids, LocalProcesses(kill=lambda *a: sent.append(a)))
    first, second, third = sorted(pids)
    async with app.run_test(size=(160, 50)) as pilot:
        await _tag_first_two(app, pids, pilot)
        table = app.query_one("#procs", LineView)
        assert "2 tagged" in str(table.border_title)
        rows = table.plain.splitlines()
        marks = {pid: next(r[0] for r in rows if f" {pid} " in r) for pid in (first, second, third)}
        assert marks == {first: "•", second: "▶", third: " "}, rows
        await pilot.press("T")
        assert isinstance(app.screen, SignalsScreen)
        asked = app.screen.plain
        assert "Send SIGTERM to 2 processes?" in asked
        assert f"PID {first}" in asked and f"PID {second}" in asked
        assert f"PID {third}" not in asked and "# job" in asked
        await pilot.press("n")
        await pilot.pause()
        assert not isinstance(app.screen, SignalsScreen)
        assert sent == [] and all(p.poll() is None for p in jobs)
        assert f"Cancelled: nothing sent to PIDs {first}, {second}" in _toasts(app)
        assert app.choices.procs.tagged_pids == {first, second}  # kept for another signal
        await pilot.press("space", "escape")  # untag under the cursor, then clear all
        assert app.choices.procs.tagged == ()


async def test_yes_sends_each_tagged_process_its_signal_and_no_other(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, jobs: list[subprocess.Popen[bytes]]
) -> None:
    pids = [p.pid for p in jobs]
    app, _ = _app(monkeypatch, tmp_path, pids, LocalProcesses())
    first, second, third = sorted(pids)
    by_pid = {p.pid: p for p in jobs}
    async with app.run_test(size=(160, 50)) as pilot:
        await _tag_first_two(app, pids, pilot)
        await pilot.press("T", "y")
        await pilot.pause()
        assert by_pid[first].wait(timeout=5) == -signal.SIGTERM
        assert by_pid[second].wait(timeout=5) == -signal.SIGTERM
        assert by_pid[third].poll() is None
        assert any(f"SIGTERM sent to PIDs {first}, {second}" in t for t in _toasts(app))
        assert app.choices.procs.tagged == ()  # spent


async def test_a_tagged_pid_that_is_now_another_process_is_named_and_skipped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, jobs: list[subprocess.Popen[bytes]]
) -> None:
    """Between the tag and the signal, a tagged PID's process ended and the PID was
    reused (here: its start time read later): the same check as for one process."""
    pids = [p.pid for p in jobs]
    sent: list[tuple[int, int]] = []
    app, source = _app(monkeypatch, tmp_path, pids, LocalProcesses(kill=lambda *a: sent.append(a)))
    first, second, _ = sorted(pids)
    async with app.run_test(size=(160, 50)) as pilot:
        await _tag_first_two(app, pids, pilot)
        frame = source.read()
        reused = tuple(
            dataclasses.replace(p, started=(p.started or 0) + 30) if p.pid == second else p
            for p in frame.processes
        )
        app.monitor.ingest(dataclasses.replace(frame, processes=reused))
        await pilot.press("K")
        assert isinstance(app.screen, SignalsScreen)
        asked = app.screen.plain
        assert "Send SIGKILL to 1 process?" in asked
        assert f"PID {second}" in asked and "now another process" in asked
        await pilot.press("y")
        await pilot.pause()
        assert sent == [(first, signal.SIGKILL)]


async def test_readonly_sends_no_signal_tagged_or_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, jobs: list[subprocess.Popen[bytes]]
) -> None:
    pids = [p.pid for p in jobs]
    sent: list[tuple[int, int]] = []
    access = LocalProcesses(kill=lambda *a: sent.append(a))
    app, _ = _app(monkeypatch, tmp_path, pids, access, readonly=True)
    async with app.run_test(size=(160, 50)) as pilot:
        assert "read-only" in app.query_one("#header", LineView).plain
        await _tag_first_two(app, pids, pilot)
        await pilot.press("T")
        await pilot.pause()
        assert not isinstance(app.screen, SignalsScreen)
        assert any("Not sent" in t and "--readonly" in t for t in _toasts(app))
        await pilot.press("escape", "down", "K")  # one process, untagged
        await pilot.pause()
        assert not isinstance(app.screen, SignalScreen)
        assert sum("--readonly" in t for t in _toasts(app)) == 2
        await pilot.press("a", "down", "I")  # from the every-process page
        await pilot.pause()
        assert isinstance(app.screen, AllProcessesScreen)  # no confirmation over it
        assert any("--readonly" in t for t in _toasts(app))
    assert sent == [] and all(p.poll() is None for p in jobs)
