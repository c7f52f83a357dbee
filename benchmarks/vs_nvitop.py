"""gputui against a bare Textual app and nvitop: first frame, memory, CPU and NVML calls,
same run, same fake 8-GPU node, same terminal.

Usage: python benchmarks/vs_nvitop.py [--python /tmp/nvitop-venv/bin/python] [--gpus 8]
                                      [--warmup 10] [--seconds 60] [--size 160x50] [--still]
                                      [--rounds 3] [--starts 3] [--day]
                                      [--driver DIR --driver-config FILE]

With --driver (the honest floor): a compiled stand-in for libnvidia-ml.so.1 in DIR, loaded
through the real nvidia-ml-py, and every tool started as a user starts it, in a plain
interpreter: ``python -m gputui --interval 1``, the bare app ``benchmarks/bare_app.py`` (only
Textual imported) and ``python -m nvitop --interval 1``; the library counts the NVML calls
(benchmarks/stand_in.py). Without it, the harness below: the test double in this script's
child, whose pytest and double every tool's figures carry.

Starts each monitor in its own detached tmux session of the given size through this same
script (``--child gputui`` / ``--child bare`` / ``--child nvitop``), one after the other,
--rounds times in turn. The bare app is Textual's floor: the same child (the same fake
node, pytest and the double imported), then an ``App`` with one ``Static`` showing a row
per GPU; what gputui takes above it is gputui's own. The first frame is the time from the
exec to the pane output after which tmux's pane shows every GPU's row (tmux copies the
pane's output to this script through ``pipe-pane`` as it parses it; the pane is captured as
each piece arrives), the median of --starts starts in each round (one start through tmux
moves by a third between tries; the last start goes on to be warmed up and measured, each
child gone before the next starts). Without
nvitop (no --python that imports it) the table has gputui and the bare app only. --day adds
benchmarks/app_memory.py over 24 simulated hours (minutes of CPU): the app's RSS after the
first hour and at the end. The child installs
the test double of libnvidia-ml (tests/nvml_double.py, an R570 driver with N Hopper GPUs,
GPM, a fan and one process each) into the real nvidia-ml-py, then runs the tool's own entry
point in-process: ``gputui.cli.main(["--interval", "1"])`` (the live NVML monitor) and
``nvitop.cli.main()`` with ``nvitop --interval 1``. The GPUs' processes are real PIDs of
this machine (the child itself and its parent, the tmux server), so both tools find them
with psutil / /proc. Unless --still, a thread in the child moves each GPU's utilisation,
power, temperature and memory once a second (real readings change; both tools get the same).

After the warm-up the child's CPU time (every thread's run time, in nanoseconds) is taken
over --seconds; the script prints each tool's CPU % of one core, its RSS, its NVML calls
per GPU per second, and the ratio gputui / nvitop (the project's budget: 0.5), with the top
of each screen so a reader can see that both show the same N GPUs. A 60 s figure on a
shared 2-core machine moves by a tenth or more between runs: the tools are measured in
turn --rounds times, and the round with the median ratio is the one reported.

To be fair to both, the child completes the double where nvitop needs more than gputui
(it prints what it added): nine functions a real R570 library exports and the double lacks
(nvitop shows N/A without them; gputui calls one of them, nvmlDeviceGetProcessUtilization)
and the video clock (without it nvitop stops with a KeyError). And since nothing here holds
/dev/nvidia* open, gputui's check that a GPU process does is told yes for the fake PIDs
(otherwise it takes them for another PID namespace's and skips their host details).
Both children import pytest and the double (their RSS includes them).

nvitop is no dependency of gputui: install it beside it in a throwaway venv and pass that
interpreter with --python, e.g.

    python3 -m venv /tmp/nvitop-venv
    /tmp/nvitop-venv/bin/pip install nvitop pytest -e .
    python benchmarks/vs_nvitop.py --python /tmp/nvitop-venv/bin/python

Needs tmux.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import ctypes
import functools
import importlib
import json
import math
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the benchmarks and tests packages

import psutil  # noqa: E402

from benchmarks import bare_app  # noqa: E402
from benchmarks.app_cpu import cpu_seconds, tmux  # noqa: E402
from benchmarks.stand_in import Node, stand_in  # noqa: E402

TOOLS = ("gputui", "bare", "nvitop")

if TYPE_CHECKING:
    from tests.nvml_double import FakeNvmlLib


# -- the child: the fake node, then the tool ----------------------------------------------


def fake_node(gpus: int, moving: bool) -> tuple[FakeNvmlLib, list[str]]:
    """The fake R570 driver installed into pynvml, and what was added to it for nvitop."""
    import pytest

    from tests.nvml_double import MIB, FakeGpu, FakeProcess, driver, install

    pids = [os.getpid(), os.getppid()]
    node = [
        FakeGpu(
            uuid=f"GPU-5f0c2a1e-1111-2222-3333-4444555566{i:02d}",
            bus_id=f"00000000:{0x18 + 0x10 * i:02X}:00.0",
            gpm=True,
            fan=40,
            util=(60 + 4 * i, 30 + 2 * i),
            memory_used=(30000 + 4000 * i) * MIB,
            processes=[FakeProcess(pids[i % 2], (29000 + 4000 * i) * MIB)],
        )
        for i in range(gpus)
    ]
    lib = driver(570, node)
    added = complete(lib)
    install(pytest.MonkeyPatch(), lib)  # kept for the life of the process
    if moving:
        threading.Thread(target=_move, args=(lib,), name="readings", daemon=True).start()
    return lib, added


# What a real R570 libnvidia-ml has and tests/nvml_double.py lacks, that nvitop asks for
# (it shows N/A, or stops with a traceback for the video clock, without them). Added here,
# in the child, to the one fake library both tools read; gputui calls only the last one
# (every 10 s; without it it stops asking). nvml.h's values:
NVML_CLOCK_VIDEO = 3
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
VIDEO_CLOCK_MHZ = (1635, 1980)  # current, max


def _scalar(value: Callable[[Any], int]) -> Callable[..., int]:
    """fn_NAME(self, name, handle, out) answering ``value(gpu)``."""

    def fn(lib: Any, name: str, h: Any, ref: Any) -> int:
        ret: int = lib._scalar(name, h, ref, value)
        return ret

    return fn


def _utilization(lib: Any, name: str, h: Any, util: Any, period: Any) -> int:
    gpu, ret = lib._gpu(name, h)
    if gpu is None:
        return int(ret)
    util._obj.value, period._obj.value = 0, 167_000  # encoder / decoder idle, 167 ms
    return 0


def _not_supported(lib: Any, name: str, *args: Any) -> int:
    return 3  # NVML_ERROR_NOT_SUPPORTED: the Windows driver model, on Linux


def _total_ecc(lib: Any, name: str, h: Any, kind: Any, counter: Any, ref: Any) -> int:
    uncorrected = kind.value == NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    return int(lib._scalar(name, h, ref, lambda g: g.ecc_dbe if uncorrected else g.ecc_sbe))


def _process_util(lib: Any, name: str, h: Any, buf: Any, count: Any, since: Any) -> int:
    """One sample a second per process, its share of the GPU's SM utilisation."""
    gpu, ret = lib._gpu(name, h)
    if gpu is None:
        return int(ret)
    stamp = int(time.time()) * 1_000_000
    procs = gpu.processes if stamp > since.value else []
    if not procs:
        return 6  # NVML_ERROR_NOT_FOUND: no sample newer than ``since``
    if buf is None or count._obj.value < len(procs):
        count._obj.value = len(procs)
        return 7  # NVML_ERROR_INSUFFICIENT_SIZE
    import pynvml  # noqa: TID251  (the struct of the fake function, as the double does)

    entries = ctypes.cast(buf, ctypes.POINTER(pynvml.c_nvmlProcessUtilizationSample_t))
    for i, proc in enumerate(procs):
        entry = entries[i]
        entry.pid, entry.timeStamp = proc.pid, stamp
        entry.smUtil = gpu.util[0] // len(procs)
        entry.memUtil = gpu.util[1] // len(procs)
        entry.encUtil = entry.decUtil = 0
    count._obj.value = len(procs)
    return 0


FUNCTIONS: dict[str, Callable[..., int]] = {
    "nvmlDeviceIsMigDeviceHandle": _scalar(lambda g: 0),  # no MIG device on this node
    "nvmlDeviceGetEncoderUtilization": _utilization,
    "nvmlDeviceGetDecoderUtilization": _utilization,
    "nvmlDeviceGetPowerManagementLimit": _scalar(lambda g: g.enforced_limit_mw),
    "nvmlDeviceGetDisplayActive": _scalar(lambda g: 0),
    "nvmlDeviceGetDriverModel_v2": _not_supported,
    "nvmlDeviceGetDriverModel": _not_supported,
    "nvmlDeviceGetTotalEccErrors": _total_ecc,
    "nvmlDeviceGetProcessUtilization": _process_util,
}


def complete(lib: FakeNvmlLib) -> list[str]:
    """Give the fake library what nvitop needs; the list of what was added."""
    added = []
    for name, fn in FUNCTIONS.items():
        if not hasattr(type(lib), "fn_" + name):
            setattr(type(lib), "fn_" + name, fn)
            added.append(name)
    for gpu in lib.gpus:
        gpu.clocks.setdefault(NVML_CLOCK_VIDEO, VIDEO_CLOCK_MHZ[0])
        gpu.max_clocks.setdefault(NVML_CLOCK_VIDEO, VIDEO_CLOCK_MHZ[1])
    added.append(f"the video clock ({VIDEO_CLOCK_MHZ[0]} of {VIDEO_CLOCK_MHZ[1]} MHz)")
    return added


def _move(lib: FakeNvmlLib) -> None:
    """Every second, new readings on every GPU (a slow wave, different per GPU)."""
    mib = 1024**2
    tick = 0
    while True:
        time.sleep(1.0)
        tick += 1
        for i, gpu in enumerate(lib.gpus):
            wave = math.sin((tick + 7 * i) / 6.0)
            gpu.util = (int(70 + 25 * wave), int(35 + 20 * wave))
            gpu.power_mw = int(550_000 + 120_000 * wave)
            gpu.temperature = int(68 + 6 * wave)
            gpu.memory_used = int((40000 + 8000 * wave + 1000 * i) * mib)
            gpu.energy_mj += gpu.power_mw  # mW over 1 s


def trust_fake_pids(pids: set[int]) -> str:
    """gputui shows a GPU process's host details only if it holds /dev/nvidia* open (else
    it takes it for a PID of another namespace and skips it, which is cheaper than what it
    does on a real node). Nothing here opens a GPU: say yes for the fake node's PIDs."""
    host: Any = importlib.import_module("gputui.sources.host")
    real = host._uses_nvidia_device

    def check(pid: int) -> bool | None:
        if pid in pids:
            return True
        verdict: bool | None = real(pid)
        return verdict

    init = host.HostReader.__init__
    host.HostReader.__init__ = functools.partialmethod(init, device_check=check)
    return "gputui's /dev/nvidia* check of a GPU process answers yes for the fake node's PIDs"


def count_calls(lib: FakeNvmlLib, report: Path, added: list[str], changed: list[str]) -> None:
    """SIGUSR1 starts counting NVML calls, SIGUSR2 writes them to ``report`` (JSON)."""
    marks: dict[str, Any] = {"calls": {}, "wall": time.monotonic()}

    def begin(_signum: int, _frame: object) -> None:
        marks.update(calls=dict(lib.calls), wall=time.monotonic())

    def end(_signum: int, _frame: object) -> None:
        now = dict(lib.calls)
        made = {n: c - marks["calls"].get(n, 0) for n, c in sorted(now.items())}
        wall = time.monotonic() - marks["wall"]
        calls = {n: c for n, c in made.items() if c}
        result = {"added": added, "changed": changed, "calls": calls, "wall": wall}
        report.write_text(json.dumps(result))

    signal.signal(signal.SIGUSR1, begin)
    signal.signal(signal.SIGUSR2, end)


def child(tool: str, gpus: int, moving: bool, report: Path | None) -> int:
    lib, added = fake_node(gpus, moving)
    changed = []
    if tool == "gputui":
        changed.append(trust_fake_pids({p.pid for gpu in lib.gpus for p in gpu.processes}))
    if report is not None:
        count_calls(lib, report, added, changed)
    if tool == "gputui":
        from gputui import cli

        return cli.main(["--interval", "1"])
    if tool == "bare":
        return bare_app.run(len(lib.gpus))
    nvitop_cli: Any = importlib.import_module("nvitop.cli")
    sys.argv = ["nvitop", "--interval", "1"]
    status: int = nvitop_cli.main()
    return status


# -- the parent: tmux, /proc ---------------------------------------------------------------


def rss_mb(pid: int) -> float:
    return float(psutil.Process(pid).memory_info().rss) / 2**20


#: one line per GPU on each tool's screen: gputui's GPU list ("▶0 H100 80GB HBM3 ..."),
#: nvitop's device rows (power "605W / 700W", in its compact and its full mode alike)
GPU_ROW = {
    "gputui": re.compile(r"^\s*▶?\s*\d+ (?:NVIDIA )?[AH]100"),
    "bare": re.compile(r"^bare \d+ H100 "),
    "nvitop": re.compile(r"^│.*\d+W / \d+W"),
}


def gpu_rows(tool: str, screen: str) -> int:
    return sum(1 for line in screen.splitlines() if GPU_ROW[tool].search(line))


@dataclass
class Result:
    tool: str
    cpu_pct: float
    rss_start_mb: float
    rss_end_mb: float
    first_frame_s: float
    screen: str
    added: list[str]  # what the child added to the fake library
    changed: list[str]  # what it changed in the tool
    calls_per_gpu_s: float  # NVML calls per GPU per second over the measured window
    calls: dict[str, int]


def _start(tool: str, command: str, session: str, gpus: int, size: str) -> tuple[int, float]:
    """The child started in its own tmux session: its PID, and the time from the exec to
    the pane output that completes every GPU's row.

    tmux copies what the pane's program writes to a pipe (``pipe-pane -O``) in the same
    step in which it parses it onto the pane: each time output arrives here, its time is
    taken and the pane captured. The first frame is the arrival of the output after which
    the pane shows every GPU's row (re-captured once the output pauses, should a capture
    have come before tmux's parse). Polling the pane instead quantized the time to its
    period and two tmux commands a turn, and took CPU from the starting tool."""
    width, height = size.split("x")
    subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    with tempfile.TemporaryDirectory() as tmp:
        fifo = Path(tmp) / "pane"
        os.mkfifo(fifo)
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            started = time.perf_counter()
            tmux("new-session", "-d", "-s", session, "-x", width, "-y", height, f"exec {command}")
            tmux("pipe-pane", "-O", "-t", session, f"exec cat > {shlex.quote(str(fifo))}")
            # a tool that stops leaves its pane, and its last words, to read
            tmux("set-option", "-t", session, "remain-on-exit", "on")
            pid = int(tmux("list-panes", "-t", session, "-F", "#{pane_pid}").split()[0])
            arrived = _frame_arrival(tool, session, gpus, reader, started)
        finally:
            os.close(reader)
    if arrived is not None:
        return pid, arrived
    screen = tmux("capture-pane", "-p", "-t", session)
    subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    raise RuntimeError(f"{tool} did not show {gpus} GPUs; its screen:\n{screen}")


def _frame_arrival(tool: str, session: str, gpus: int, reader: int, started: float) -> float | None:
    """Seconds from ``started`` to the output after which the pane shows ``gpus`` GPU
    rows; None if the tool stops or 30 s pass first."""
    last: float | None = None  # the last output not yet seen complete on the pane
    while time.perf_counter() - started < 30:
        arrived = False
        if select.select([reader], [], [], 0.05)[0]:
            with contextlib.suppress(BlockingIOError):
                arrived = bool(os.read(reader, 1 << 16))
            if arrived:
                last = time.perf_counter()
            elif last is None:  # no writer yet: the pipe's cat is starting
                time.sleep(0.005)
        if last is not None and gpu_rows(tool, tmux("capture-pane", "-p", "-t", session)) >= gpus:
            return last - started
        if not arrived and tmux("display-message", "-p", "-t", session, "#{pane_dead}") == "1\n":
            return None
    return None


def _stopped(session: str, pid: int) -> None:
    """The session closed and its child gone (reaped), before anything else starts."""
    subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(pid).wait(timeout=10)


def measure(
    tool: str,
    python: str,
    node: Node,
    warmup: float,
    seconds: float,
    size: str,
    moving: bool,
    starts: int = 1,
) -> Result:
    """One round of one tool: ``starts`` starts for the first frame (their median: a single
    start through tmux moves by a third between tries), the last of them then warmed up and
    measured. On a stand-in driver the tool runs as a user starts it and the library counts
    the calls; on the test double the harness child counts them."""
    gpus = node.gpus
    session = f"vs-nvitop-{tool}"
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = shlex.join(
            [
                python,
                str(Path(__file__).resolve()),
                "--child",
                tool,
                "--gpus",
                str(gpus),
                "--report",
                str(report),
                *([] if moving else ["--still"]),
            ]
        )
        # exec: the pane's process is the tool itself, not a shell waiting for it
        # bytecode as an installed package has it: compiled once, never at each start
        command = f"env -u PYTHONDONTWRITEBYTECODE {command}"
        if node.driver is not None:
            command = node.command(tool, python)
        pid, first_frame = _start(tool, command, session, gpus, size)
        frames = [first_frame]
        for _ in range(starts - 1):  # each start stopped before the next: the last one stays
            _stopped(session, pid)
            pid, first_frame = _start(tool, command, session, gpus, size)
            frames.append(first_frame)
        try:
            time.sleep(max(0.0, warmup - first_frame))  # the last start is just showing
            rss_start = rss_mb(pid)
            proc = psutil.Process(pid)
            if node.driver is None:
                os.kill(pid, signal.SIGUSR1)
            else:
                begun = node.calls()
            cpu0, wall0 = cpu_seconds(proc), time.perf_counter()
            time.sleep(seconds)
            cpu1, wall1 = cpu_seconds(proc), time.perf_counter()
            if node.driver is None:
                os.kill(pid, signal.SIGUSR2)
            else:
                ended = node.calls()
            rss_end = rss_mb(pid)
            screen = tmux("capture-pane", "-p", "-t", session)
            if node.driver is None:
                for _ in range(50):
                    if report.exists():
                        break
                    time.sleep(0.1)
                counted: dict[str, Any] = json.loads(report.read_text())
            else:
                counted = {
                    "calls": {"TOTAL": ended[1] - begun[1]},
                    "wall": ended[0] - begun[0],
                    "added": [],
                    "changed": [],
                }
        finally:
            _stopped(session, pid)
    calls: dict[str, int] = counted["calls"]
    return Result(
        tool,
        100.0 * (cpu1 - cpu0) / (wall1 - wall0),
        rss_start,
        rss_end,
        _median(frames),
        screen,
        counted["added"],
        counted["changed"],
        sum(calls.values()) / gpus / counted["wall"],
        calls,
    )


def nvitop_version(python: str, double: bool = True) -> str | None:
    """nvitop's version under that interpreter, or None if it cannot run nvitop (the
    harness child needs nvidia-ml-py and pytest for the test double too)."""
    needs = "nvitop, pynvml, pytest" if double else "nvitop"
    code = f"import importlib.metadata as m, {needs}; print(m.version('nvitop'))"
    probe = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return probe.stdout.strip() if probe.returncode == 0 else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--child", choices=TOOLS, help=argparse.SUPPRESS)
    parser.add_argument("--report", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--python", default=sys.executable, help="the interpreter for nvitop")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--size", default="160x50")
    parser.add_argument("--still", action="store_true", help="readings that never change")
    parser.add_argument(
        "--rounds", type=int, default=3, help="measure each tool this often, in turn"
    )
    parser.add_argument(
        "--starts", type=int, default=3, help="starts a round for the first frame (their median)"
    )
    parser.add_argument("--day", action="store_true", help="also 24 simulated hours of RSS")
    parser.add_argument(
        "--driver",
        type=Path,
        help="a folder with a stand-in libnvidia-ml.so.1: each tool in a plain interpreter",
    )
    parser.add_argument("--driver-config", type=Path, help="its config (FAKENVML_CONFIG)")
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="data-loader workers of each GPU process (the stand-in's), as on a training node",
    )
    args = parser.parse_args()
    starts = max(1, args.starts)
    if args.child:
        return child(args.child, args.gpus, not args.still, args.report)
    if shutil.which("tmux") is None:
        print("tmux is needed", file=sys.stderr)
        return 1
    version = nvitop_version(args.python, double=args.driver is None)
    tools = [t for t in TOOLS if t != "nvitop" or version is not None]
    node_text = (
        f"fake R570 driver (the test double, in the harness child), {args.gpus} x H100 with "
        f"GPM, readings {'fixed' if args.still else 'changing every second'}"
        if args.driver is None
        else f"the stand-in driver in {args.driver} ({args.driver_config or 'its default'}); "
        f"{args.workers} data-loader workers a GPU process; "
        "each tool in a plain interpreter (python -m gputui, benchmarks/bare_app.py, "
        "python -m nvitop)"
    )
    print(
        f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
        f"tmux {args.size}; {node_text}; "
        f"warm-up {args.warmup:g} s, measured over {args.seconds:g} s, {args.rounds} rounds, "
        f"the first frame of {starts} starts a round"
    )
    print(f"gputui and the bare Textual app: {sys.executable} (Python {sys.version.split()[0]})")
    if version is None:
        print(
            f"nvitop: not measured ({args.python} cannot import nvitop and pytest; install "
            "them beside gputui in a throwaway venv: python3 -m venv /tmp/nvitop-venv && "
            "/tmp/nvitop-venv/bin/pip install nvitop pytest -e . and pass --python "
            "/tmp/nvitop-venv/bin/python)"
        )
    else:
        print(f"nvitop {version}: {args.python} --interval 1")
    pythons = {"gputui": sys.executable, "bare": sys.executable, "nvitop": args.python}
    for folder in ("gputui", "tests", "benchmarks"):  # an editable checkout: compile it once
        compileall.compile_dir(ROOT / folder, quiet=1)
    with stand_in(args.driver, args.driver_config, args.gpus, args.workers) as node:
        if node.driver is not None and not node.holders:
            print(
                "the GPUs' processes hold no /dev/nvidia0 (no mount namespace here): gputui "
                "takes them for another PID namespace's and reads less of them"
            )
        rounds = _rounds(args, tools, pythons, node, starts)
    _report(args, tools, rounds)
    return 0


def _rounds(
    args: argparse.Namespace,
    tools: list[str],
    pythons: dict[str, str],
    node: Node,
    starts: int,
) -> list[dict[str, Result]]:
    rounds: list[dict[str, Result]] = []
    for number in range(1, args.rounds + 1):
        # In turn, so a slow spell of the machine falls on every tool alike.
        one = {
            tool: measure(
                tool,
                pythons[tool],
                node,
                args.warmup,
                args.seconds,
                args.size,
                not args.still,
                starts,
            )
            for tool in tools
        }
        rounds.append(one)
        print(
            f"round {number}: "
            + "; ".join(
                f"{t} {r.cpu_pct:.2f} %, first frame {r.first_frame_s:.2f} s, "
                f"RSS {r.rss_end_mb:.1f} MB"
                for t, r in one.items()
            ),
            flush=True,
        )
    return rounds


def _report(args: argparse.Namespace, tools: list[str], rounds: list[dict[str, Result]]) -> None:
    last = rounds[-1]
    for tool, r in last.items():
        print(f"\n--- {tool}: the top of its screen at the end of the last round ---")
        lines = r.screen.splitlines()
        print("\n".join(line.rstrip() for line in lines[: 8 + 2 * args.gpus]))
        print(f"{tool} shows {gpu_rows(tool, r.screen)} GPU rows")
        for what in r.changed:
            print(f"changed for this run: {what}")
    print()
    _table(tools, rounds)
    _verdicts(tools, rounds)
    added = sorted({what for one in rounds for r in one.values() for what in r.added})
    if added:
        print(
            "added to tests/nvml_double.py's fake library in every child (a real R570 "
            f"libnvidia-ml has them; nvitop asks for them): {', '.join(added)}"
        )
    if args.day:
        _day(args.gpus, args.size)


FIGURES: dict[str, Callable[[Result], float]] = {
    "first frame s": lambda r: r.first_frame_s,
    "RSS MB": lambda r: r.rss_end_mb,
    "CPU % of a core": lambda r: r.cpu_pct,
    "NVML calls/GPU/s": lambda r: r.calls_per_gpu_s,
}


def _spread(values: list[float]) -> str:
    ordered = sorted(values)
    middle = ordered[len(ordered) // 2]
    return f"{middle:.2f} ({ordered[0]:.2f}-{ordered[-1]:.2f})"


def _table(tools: list[str], rounds: list[dict[str, Result]]) -> None:
    print("median (lowest-highest) of the rounds; RSS at the end of the measured window")
    print(f"{'tool':<8}" + "".join(f"{name:>24}" for name in FIGURES))
    for tool in tools:
        cells = [_spread([figure(one[tool]) for one in rounds]) for figure in FIGURES.values()]
        print(f"{tool:<8}" + "".join(f"{cell:>24}" for cell in cells))


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _verdicts(tools: list[str], rounds: list[dict[str, Result]]) -> None:
    """The issue's goals, each from the same rounds (ratios taken round by round)."""
    frame = _median([one["gputui"].first_frame_s / one["bare"].first_frame_s for one in rounds])
    memory = _median([one["gputui"].rss_end_mb - one["bare"].rss_end_mb for one in rounds])
    calls = _median([one["gputui"].calls_per_gpu_s for one in rounds])
    print(f"first frame gputui / bare: {frame:.2f} (goal <= 1.25)")
    print(f"RSS gputui - bare: {memory:+.1f} MB (goal <= +6)")
    print(f"NVML calls per GPU per second: {calls:.2f} (goal <= 12)")
    if "nvitop" in tools:
        cpu = _median([one["gputui"].cpu_pct / one["nvitop"].cpu_pct for one in rounds])
        print(f"CPU gputui / nvitop: {cpu:.2f} (goal <= 0.40)")


def _day(gpus: int, size: str) -> None:
    """benchmarks/app_memory.py over 24 simulated hours: RSS after the first hour, at the end."""
    script = Path(__file__).resolve().parent / "app_memory.py"
    command = [sys.executable, str(script), "--gpus", str(gpus), "--hours", "24", "--size", size]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    hours = [float(m) for m in re.findall(r"hour\s+\d+.*?RSS ([\d.]+) MB", out)]
    if len(hours) < 2:
        print(f"24 h: could not read app_memory.py's output:\n{out}")
        return
    print(
        f"24 simulated hours of 1 s ticks: RSS {hours[0]:.1f} MB after the first hour, "
        f"{hours[-1]:.1f} MB at the end ({hours[-1] - hours[0]:+.1f} MB; goal <= +2)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
