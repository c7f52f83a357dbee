"""What gputui and nvitop send over SSH: the bytes they write to their terminal against the
cells that changed on it, and the time from a key press to the screen showing its effect.

Usage: python benchmarks/terminal_bytes.py [--python /tmp/nvitop-venv/bin/python]
                                          [--sizes 160x50,80x24] [--gpus 8] [--warmup 10]
                                          [--seconds 40] [--presses 40] [--load 2]
                                          [--driver DIR --driver-config FILE] [--keep DIR]

Each tool runs on a fake node in a detached tmux session of each size, one after the
other: by default the node of benchmarks/vs_nvitop.py (its ``--child``: the test double
of an R570 driver with N H100s, readings changing every second, the same for both); with
--driver, a compiled stand-in for libnvidia-ml.so.1 in DIR (loaded through the real
nvidia-ml-py by both tools, each started as a user starts it: ``python -m gputui``,
``python -m nvitop``), configured by --driver-config (``FAKENVML_CONFIG``), with 8 sleeping
processes of this machine as the GPUs' processes (``FAKE_PID0`` to ``FAKE_PID7``,
holding /dev/nvidia0 open: benchmarks/stand_in.py).

After --warmup, tmux copies what the pane's program writes to this script (``pipe-pane
-O``) for --seconds: its bytes, the share of them that are SGR (colour and attribute)
sequences, and the cells that changed on the screen, counted by a terminal emulator
(pyte): the pane is captured with its colours first (``capture-pane -e``) and fed to the
emulator, then the output as it arrives, a tick at a time (a pause of 150 ms between
writes ends one), and each tick's screen compared with the one before, cell by cell
(character, colours, attributes). The cells that changed are the floor: what any program
showing the same screen must send.

Keys (gputui only, --presses > 0): → and ← in turn, each after the last one's effect
showed and the screen has been quiet for 0.3 s; the time from just before ``tmux
send-keys`` to the arrival of the output after which the emulator shows the next GPU
selected (its ``▶`` on the GPU list), median and worst, on the idle host and again with
--load busy processes beside it (one per core: the training job's data loaders).

pyte and tmux are needed (``pip install pyte``; the project's test extras have pyte).
nvitop is measured where --python can import it with pytest (see vs_nvitop.py).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import select
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyte

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the benchmarks and tests packages

from benchmarks.stand_in import Node, stand_in  # noqa: E402
from benchmarks.vs_nvitop import nvitop_version  # noqa: E402

SGR = re.compile(rb"\x1b\[[0-9;:]*m")
#: a tmux server of this run's own: nothing else's sessions, and nothing else kills these
SOCKET = f"terminal-bytes-{os.getpid()}"
#: the output of one tick: writes this close together
TICK_GAP_S = 0.15
SELECTED = re.compile(r"▶\s*(\d+) ")


def tmux(*args: str) -> str:
    command = ["tmux", "-L", SOCKET, "-f", "/dev/null", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


@dataclass
class Run:
    tool: str
    size: str
    seconds: float
    data: bytes
    changed_cells: int
    ticks: int

    @property
    def bytes_per_s(self) -> float:
        return len(self.data) / self.seconds

    @property
    def sgr_share(self) -> float:
        return sum(len(m) for m in SGR.findall(self.data)) / max(1, len(self.data))

    @property
    def cells_per_s(self) -> float:
        return self.changed_cells / self.seconds

    @property
    def bytes_per_cell(self) -> float:
        return len(self.data) / max(1, self.changed_cells)


@contextlib.contextmanager
def _session(tool: str, python: str, node: Node, size: str) -> Iterator[str]:
    """The tool running in its own tmux session of ``size``; the session's name."""
    session = f"bytes-{tool}-{os.getpid()}"
    width, height = size.split("x")
    tmux(
        "new-session",
        *("-d", "-s", session, "-x", width, "-y", height),
        f"exec {node.command(tool, python)}",
    )
    try:
        yield session
    finally:
        subprocess.run(["tmux", "-L", SOCKET, "kill-session", "-t", session], capture_output=True)


class Pane:
    """The pane's output as it arrives (``pipe-pane -O`` into a FIFO), and a terminal
    emulator of the pane's size fed with it."""

    def __init__(self, session: str, size: str, fifo: Path) -> None:
        width, height = (int(n) for n in size.split("x"))
        self.screen = pyte.Screen(width, height)
        self.stream = pyte.ByteStream(self.screen)
        os.mkfifo(fifo)
        self.reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        tmux("pipe-pane", "-O", "-t", session, f"exec cat > {shlex.quote(str(fifo))}")
        self.session = session

    def close(self) -> None:
        subprocess.run(["tmux", "-L", SOCKET, "pipe-pane", "-t", self.session], capture_output=True)
        os.close(self.reader)

    def read(self, timeout: float) -> bytes:
        """What arrived within ``timeout`` (b"" when nothing did)."""
        if not select.select([self.reader], [], [], timeout)[0]:
            return b""
        with contextlib.suppress(BlockingIOError):
            return os.read(self.reader, 1 << 16)
        return b""

    def quiet(self, seconds: float) -> bytes:
        """Everything that arrives until the output pauses for ``seconds``."""
        got = b""
        while chunk := self.read(seconds):
            got += chunk
        return got

    def load_screen(self) -> None:
        """The pane as tmux shows it now, colours included, onto the emulator."""
        captured = tmux("capture-pane", "-p", "-e", "-t", self.session)
        self.screen.reset()
        for y, line in enumerate(captured.split("\n")[: self.screen.lines]):
            self.stream.feed(f"\x1b[{y + 1};1H{line}\x1b[0m".encode())
        # and its cursor where tmux has it: a program's next output may move from there
        at = tmux("display-message", "-p", "-t", self.session, "#{cursor_y};#{cursor_x}")
        y, x = (int(n) for n in at.strip().split(";"))
        self.stream.feed(f"\x1b[{y + 1};{x + 1}H".encode())

    def cells(self) -> dict[tuple[int, int], Any]:
        return {
            (y, x): char
            for y, line in self.screen.buffer.items()
            for x, char in line.items()
            if char.data != " " or char.bg != "default" or char.reverse
        }


def _changed(before: dict[tuple[int, int], Any], after: dict[tuple[int, int], Any]) -> int:
    return sum(1 for key in before.keys() | after.keys() if before.get(key) != after.get(key))


def record(tool: str, python: str, node: Node, size: str, warmup: float, seconds: float) -> Run:
    """One tool at one size: bytes and changed cells over ``seconds`` after ``warmup``."""
    with _session(tool, python, node, size) as session, tempfile.TemporaryDirectory() as tmp:
        time.sleep(warmup)
        pane = Pane(session, size, Path(tmp) / "pane")
        try:
            pane.quiet(TICK_GAP_S)  # a tick under way ends before the screen is taken
            pane.load_screen()
            shown = pane.cells()
            data, changed, ticks = b"", 0, 0
            end = time.monotonic() + seconds
            tick = b""
            while time.monotonic() < end:
                chunk = pane.read(TICK_GAP_S)
                if chunk:
                    tick += chunk
                    continue
                if tick:  # the tick's output is in: the screen it left
                    pane.stream.feed(tick)
                    data += tick
                    now = pane.cells()
                    changed += _changed(shown, now)
                    shown, tick, ticks = now, b"", ticks + 1
        finally:
            pane.close()
    return Run(tool, size, seconds, data, changed, ticks)


def _selected(pane: Pane) -> int | None:
    for line in pane.screen.display:
        found = SELECTED.search(line)
        if found:
            return int(found.group(1))
    return None


def key_times(python: str, node: Node, size: str, warmup: float, presses: int) -> list[float]:
    """Seconds from a key press (→ then ←, in turn) to the screen showing its effect."""
    times: list[float] = []
    with (
        _session("gputui", python, node, size) as session,
        tempfile.TemporaryDirectory() as tmp,
    ):
        time.sleep(warmup)
        pane = Pane(session, size, Path(tmp) / "pane")
        try:
            pane.quiet(0.3)
            pane.load_screen()
            for press in range(presses):
                pane.stream.feed(pane.quiet(0.3))
                key, wanted = ("Right", 1) if press % 2 == 0 else ("Left", 0)
                started = time.perf_counter()
                tmux("send-keys", "-t", session, key)
                while time.perf_counter() - started < 5:
                    chunk = pane.read(0.5)
                    pane.stream.feed(chunk)
                    if chunk and _selected(pane) == wanted:
                        times.append(time.perf_counter() - started)
                        break
        finally:
            pane.close()
    return times


@contextlib.contextmanager
def busy(processes: int) -> Iterator[None]:
    """``processes`` busy loops beside the measurement (a loaded host)."""
    spinning = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)
    ]
    try:
        yield
    finally:
        for proc in spinning:
            proc.kill()
            proc.wait()


def _ms(seconds: float) -> str:
    return f"{1000 * seconds:.0f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--python", default=sys.executable, help="the interpreter for nvitop")
    parser.add_argument("--sizes", default="160x50,80x24")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--presses", type=int, default=40, help="key presses (0: none)")
    parser.add_argument("--load", type=int, default=os.cpu_count() or 2, help="busy processes")
    parser.add_argument("--keep", type=Path, help="write each run's bytes into this folder")
    parser.add_argument("--driver", type=Path, help="a folder with a stand-in libnvidia-ml.so.1")
    parser.add_argument("--driver-config", type=Path, help="its config (FAKENVML_CONFIG)")
    args = parser.parse_args()
    version = nvitop_version(args.python)
    tools = ["gputui", *(["nvitop"] if version else [])]
    node_text = (
        f"fake R570 node (the test double), {args.gpus} x H100, readings changing every second"
        if args.driver is None
        else f"the stand-in driver in {args.driver} ({args.driver_config or 'its default'})"
    )
    print(
        f"{node_text}; warm-up {args.warmup:g} s, {args.seconds:g} s measured; nvitop "
        + (f"{version} --interval 1" if version else f"not measured ({args.python})")
    )
    pythons = {"gputui": sys.executable, "nvitop": args.python}
    # a session that outlives the tools': the server stays up between them
    tmux("new-session", "-d", "-s", "keep", "sleep 86400")
    try:
        return _measure(args, tools, pythons)
    finally:
        subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)


def _measure(args: argparse.Namespace, tools: list[str], pythons: dict[str, str]) -> int:
    with stand_in(args.driver, args.driver_config, args.gpus) as node:
        runs = [
            record(tool, pythons[tool], node, size, args.warmup, args.seconds)
            for size in args.sizes.split(",")
            for tool in tools
        ]
        if args.presses:
            size = args.sizes.split(",")[0]
            idle = key_times(sys.executable, node, size, args.warmup, args.presses)
            with busy(args.load):
                loaded = key_times(sys.executable, node, size, args.warmup, args.presses)
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        for run in runs:
            (args.keep / f"{run.tool}-{run.size}.bin").write_bytes(run.data)
    print()
    print("| monitor | size | bytes/s | SGR share | cells changed/s | bytes per changed cell |")
    print("|---|---|---|---|---|---|")
    for run in runs:
        print(
            f"| {run.tool} | {run.size} | {run.bytes_per_s:,.0f} | {run.sgr_share:.0%} | "
            f"{run.cells_per_s:,.0f} | {run.bytes_per_cell:.1f} |"
        )
    if args.presses:
        print()
        print(f"gputui, key to screen through tmux at {size} ({args.presses} presses):")
        for name, times in (("idle host", idle), (f"{args.load} busy processes", loaded)):
            if times:
                print(
                    f"  {name}: median {_ms(statistics.median(times))}, worst "
                    f"{_ms(max(times))} ({len(times)} of {args.presses} seen)"
                )
            else:
                print(f"  {name}: no key's effect was seen")
    return 0


if __name__ == "__main__":
    sys.exit(main())
