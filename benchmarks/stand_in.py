"""Where the benchmarks' monitors read their GPUs: the project's test double of
libnvidia-ml (through ``benchmarks/vs_nvitop.py --child``, inside that harness process),
or a compiled stand-in library that every tool loads through the real nvidia-ml-py, each
tool then started as a user starts it, in a plain interpreter.

The stand-in is none of the project's: a benchmark takes its folder as an argument
(``--driver DIR``, with ``libnvidia-ml.so.1`` in it, and ``--driver-config FILE`` for its
``FAKENVML_CONFIG``). It lists the GPUs' processes from ``FAKE_PID0`` to ``FAKE_PID7``:
sleeping processes of this machine that hold ``/dev/nvidia0`` open as a CUDA process does
(in a mount namespace of their own, on a tmpfs: nothing of this machine's /dev changes),
so that gputui reads their host details as on a real node. Where no mount namespace can be
made (not root, no user namespaces), they are plain sleeps and gputui takes them for
another PID namespace's processes: that is said.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: a GPU process in its own mount namespace, /dev/nvidia0 open as descriptor 3; {workers}:
#: its data-loader workers, started before it and left its children
HOLDER = (
    "mount -t tmpfs tmpfs /dev && : > /dev/nvidia0 && "
    "{{ {workers}exec sleep 86400 3</dev/nvidia0; }}"
)
#: a data-loader worker: forked from its GPU process, with the device it inherited
WORKER = "(exec sleep 86400 3</dev/nvidia0) & "


@dataclass
class Node:
    """Where the tools read their GPUs: the test double (``driver`` None) or a stand-in
    library, its config, the PIDs it gives the GPUs and the file it counts its calls in."""

    gpus: int
    driver: Path | None = None
    config: Path | None = None
    pids: tuple[int, ...] = ()
    stats: Path | None = None
    holders: bool = False  # the PIDs hold /dev/nvidia0 open

    def environment(self) -> list[str]:
        """``env`` and the variables a tool runs with on this node (a stand-in's)."""
        env = ["env", "-u", "PYTHONDONTWRITEBYTECODE", "TERM=xterm-256color"]
        if self.driver is None:
            return env
        env += [f"LD_LIBRARY_PATH={self.driver}", "FAKENVML_QUIET=1"]
        env += [f"FAKENVML_CONFIG={self.config}"] * (self.config is not None)
        env += [f"FAKENVML_STATS={self.stats}"] * (self.stats is not None)
        return env + [f"FAKE_PID{i}={pid}" for i, pid in enumerate(self.pids)]

    def command(self, tool: str, python: str) -> str:
        """The shell command that starts ``tool`` (gputui, bare or nvitop) on this node."""
        env = self.environment()
        if self.driver is None:
            child = [python, str(ROOT / "benchmarks" / "vs_nvitop.py"), "--child", tool]
            return shlex.join([*env, *child, "--gpus", str(self.gpus)])
        if tool == "bare":  # Textual's floor, in a plain interpreter
            bare = [python, str(ROOT / "benchmarks" / "bare_app.py"), str(self.gpus)]
            return shlex.join([*env, *bare])
        return shlex.join([*env, python, "-m", tool, "--interval", "1"])

    def calls(self) -> tuple[float, int]:
        """The stand-in's count of calls so far (its TOTAL), read just after the library
        writes it (every 2 s), and when."""
        if self.stats is None:
            raise ValueError("calls are counted by the stand-in only")
        before = _modified(self.stats)
        deadline = time.monotonic() + 5
        while _modified(self.stats) == before and time.monotonic() < deadline:
            time.sleep(0.02)
        taken = time.monotonic()
        for line in self.stats.read_text().splitlines():
            if line.startswith("TOTAL "):
                return taken, int(line.split()[1])
        return taken, 0


def _modified(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return 0


def _gpu_process(workers: int) -> tuple[subprocess.Popen[bytes], bool]:
    holder = subprocess.Popen(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", _holder(workers)],
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):  # the sleep it becomes, or its failure
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{holder.pid}/fd/3") == "/dev/nvidia0":
                return holder, True
        if holder.poll() is not None:
            break
        time.sleep(0.01)
    end_with_children(holder)
    plain = "(exec sleep 86400) & " * workers + "exec sleep 86400"
    return subprocess.Popen(["sh", "-c", plain]), False


def _holder(workers: int) -> str:
    return HOLDER.format(workers=WORKER * workers)


def children(pid: int) -> list[int]:
    """A process's children (a GPU process's workers); none where /proc cannot say."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def end_with_children(process: subprocess.Popen[bytes]) -> None:
    """Kill a GPU process and its workers (its children, which outlive it otherwise)."""
    for child in children(process.pid):
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)
    process.kill()
    process.wait()


@contextlib.contextmanager
def stand_in(
    driver: Path | None, config: Path | None, gpus: int, workers: int = 0
) -> Iterator[Node]:
    """The node, with GPU processes for a stand-in's GPUs while it is used; ``workers``:
    data-loader workers of each GPU process (children that hold the device it opened, as
    a training rank's forked workers do), whose CPU gputui reads every tick."""
    if driver is None:
        yield Node(gpus)
        return
    made = [_gpu_process(workers) for _ in range(8)]
    stats = Path(os.environ.get("TMPDIR", "/tmp")) / f"stand-in-calls-{os.getpid()}"
    try:
        yield Node(
            gpus,
            driver.resolve(),
            config and config.resolve(),
            tuple(proc.pid for proc, _ in made),
            stats,
            all(held for _, held in made),
        )
    finally:
        for proc, _ in made:
            end_with_children(proc)
        stats.unlink(missing_ok=True)
