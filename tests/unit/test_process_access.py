"""The one action gputui takes, on real child processes: a signal only to a process the user
may signal, only to the process the readings showed (not a reused PID), never to gputui
itself; and a look inside a process (its environment, tree and devices)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gputui.core.process_access import Outcome
from gputui.core.sanitize import MAX_TEXT
from gputui.sources import process_access
from gputui.sources.process_access import MAX_ENVIRONMENT, LocalProcesses, signal_name


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "3", "HF_TOKEN": "hf_secret"}
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "--token", "t0k"], env=env
    )
    _exec_done(proc.pid)
    yield proc
    proc.kill()
    proc.wait()


def _exec_done(pid: int) -> None:
    """Wait until the child runs Python: between fork and exec its environment reads empty."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if "time.sleep(60)" in " ".join(psutil.Process(pid).cmdline()):
                return
        except psutil.Error:
            pass
        time.sleep(0.01)


def _started(pid: int) -> float:
    return psutil.Process(pid).create_time()


def _not_root() -> tuple[int, int]:
    return (12345, 12345)  # a user who owns nothing here


def test_a_signal_reaches_its_process_and_says_so(child: subprocess.Popen[bytes]) -> None:
    access = LocalProcesses()
    result = access.send(child.pid, _started(child.pid), signal.SIGTERM)
    assert result.outcome is Outcome.SENT and result.text == f"SIGTERM sent to PID {child.pid}"
    assert child.wait(timeout=5) == -signal.SIGTERM


def test_another_users_process_is_refused_and_nothing_is_sent(
    child: subprocess.Popen[bytes],
) -> None:
    sent: list[tuple[int, int]] = []
    access = LocalProcesses(kill=lambda pid, sig: sent.append((pid, sig)), ids=_not_root)
    assert not access.is_root
    why = access.refusal(child.pid, _started(child.pid))
    assert why is not None and "only its owner or root may signal it" in why
    result = access.send(child.pid, _started(child.pid), signal.SIGKILL)
    assert result.outcome is Outcome.REFUSED and result.text.startswith("Not sent:")
    assert sent == [] and child.poll() is None


def test_root_may_signal_anyone_and_is_told_whose_it_is(child: subprocess.Popen[bytes]) -> None:
    sent: list[tuple[int, int]] = []
    access = LocalProcesses(kill=lambda pid, sig: sent.append((pid, sig)), ids=lambda: (0, 0))
    assert access.is_root and access.refusal(child.pid, _started(child.pid)) is None
    access.send(child.pid, _started(child.pid), signal.SIGINT)
    assert sent == [(child.pid, signal.SIGINT)]


def test_a_reused_pid_or_an_unknown_start_is_not_signalled(
    child: subprocess.Popen[bytes],
) -> None:
    sent: list[tuple[int, int]] = []
    access = LocalProcesses(kill=lambda pid, sig: sent.append((pid, sig)))
    earlier = _started(child.pid) - 100.0  # the PID named another process then
    result = access.send(child.pid, earlier, signal.SIGTERM)
    assert result.outcome is Outcome.GONE and "has ended" in result.text
    assert access.refusal(child.pid, None) is not None
    assert sent == []


def test_gputui_never_signals_itself_or_init() -> None:
    sent: list[tuple[int, int]] = []
    access = LocalProcesses(kill=lambda pid, sig: sent.append((pid, sig)), ids=lambda: (0, 0))
    me = os.getpid()
    assert "gputui itself" in (access.refusal(me, _started(me)) or "")
    assert access.refusal(1, 0.0) is not None
    access.send(me, _started(me), signal.SIGKILL)
    assert sent == []


def test_the_kernels_refusal_is_a_plain_line(child: subprocess.Popen[bytes]) -> None:
    def refuse(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    result = LocalProcesses(kill=refuse).send(child.pid, _started(child.pid), signal.SIGTERM)
    assert result.outcome is Outcome.DENIED
    assert result.text == f"The kernel refused SIGTERM to PID {child.pid}: Operation not permitted"


def test_a_look_inside_reads_environment_tree_and_devices(
    child: subprocess.Popen[bytes],
) -> None:
    access = LocalProcesses()
    details = access.details(child.pid, _started(child.pid))
    assert not details.gone
    assert "CUDA_VISIBLE_DEVICES=3" in details.environment
    assert "HF_TOKEN=hf_secret" in details.environment  # masked where shown, not here
    assert details.parent is not None and details.parent.pid == os.getpid()
    assert details.threads is not None and details.threads >= 1
    assert details.gpu_devices == ()  # a plain Python process holds no NVIDIA device


def test_a_look_inside_an_ended_process_says_it_has_gone(
    child: subprocess.Popen[bytes],
) -> None:
    started = _started(child.pid)
    child.kill()
    child.wait()
    time.sleep(0.05)
    assert LocalProcesses().details(child.pid, started).gone


def test_signal_names() -> None:
    assert [signal_name(s) for s in (2, 9, 15)] == ["SIGINT", "SIGKILL", "SIGTERM"]
    assert signal_name(999) == "signal 999"


def test_a_huge_environment_is_cut_to_what_a_page_shows() -> None:
    env = {f"VAR_{i:04d}": "x" for i in range(MAX_ENVIRONMENT + 100)}
    env["A_HUGE_ONE"] = "y" * 100_000  # under the kernel's 128 KiB a string
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    _exec_done(proc.pid)
    try:
        details = LocalProcesses().details(proc.pid, _started(proc.pid))
    finally:
        proc.kill()
        proc.wait()
    assert len(details.environment) == MAX_ENVIRONMENT
    assert all(len(pair) <= MAX_TEXT for pair in details.environment)
    assert details.environment[0].startswith("A_HUGE_ONE=yyy")


def test_a_process_with_many_children_lists_the_first_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(process_access, "MAX_CHILDREN", 3)
    spawn = "import subprocess, sys, time; [subprocess.Popen(['sleep', '60']) for _ in range(6)]"
    proc = subprocess.Popen([sys.executable, "-c", spawn + "; time.sleep(60)"])
    try:
        deadline = time.monotonic() + 10
        while len(psutil.Process(proc.pid).children()) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        details = LocalProcesses().details(proc.pid, _started(proc.pid))
    finally:
        for below in psutil.Process(proc.pid).children():
            below.kill()
        proc.kill()
        proc.wait()
    assert len(details.children) == 3


def test_descriptors_past_the_bound_are_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, child: subprocess.Popen[bytes]
) -> None:
    # a process holding more descriptors than the page reads: a fake /proc with ten GPUs open
    monkeypatch.setattr(process_access, "MAX_DESCRIPTORS", 4)
    folder = tmp_path / str(child.pid) / "fd"
    folder.mkdir(parents=True)
    for n in range(10):
        (folder / str(n)).symlink_to(f"/dev/nvidia{n}")
    details = LocalProcesses(proc=tmp_path).details(child.pid, _started(child.pid))
    assert len(details.gpu_devices) == 4
