"""The app's cost as a user pays it: CPU, time to first frame and memory, in real tmux.

Usage: python benchmarks/app_cpu.py [--gpus 1 8 16] [--seconds 60] [--warmup 5] [--size 160x50]
                                   [--public | --both]

For each GPU count it starts `python -m gputui --demo --gpus N` in a detached tmux session
of the given size, times how long until the first frame is on the screen, lets it warm up
(5 s by default; 65 s measures the steady state, once the 60 s sparklines are full and
scroll every tick), then measures the CPU time of the app's process tree (every thread's
run time, in nanoseconds) over --seconds at 1 s refresh and prints a table. Needs tmux.

--public runs the app with GPUTUI_TEXTUAL_PUBLIC=1 (Textual's public paths only, none of
the shortcuts in gputui/ui/compat.py); --both measures each GPU count on both paths, back
to back. The default is the app as users get it (shortcuts on).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import time

import psutil

SESSION = "gputui-bench"
PATHS = {"shortcuts": "0", "public": "1"}  # the value of GPUTUI_TEXTUAL_PUBLIC


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def cpu_seconds(proc: psutil.Process) -> float:
    """CPU time of ``proc`` and its children, every thread's. Linux's scheduler counts each
    thread's run time in nanoseconds (/proc/PID/task/TID/schedstat); utime+stime come in
    clock ticks of 10 ms, a tenth of what a 20 s window of a light app holds. Threads that
    ended are not in schedstat: the steady state's threads live through the window."""
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += _run_time(p)
    return total


def _run_time(p: psutil.Process) -> float:
    tasks = f"/proc/{p.pid}/task"
    try:
        names = os.listdir(tasks)
    except FileNotFoundError as gone:
        raise psutil.NoSuchProcess(p.pid) from gone
    except OSError:
        names = []
    ns = 0
    counted = False
    for name in names:
        try:
            with open(f"{tasks}/{name}/schedstat", "rb") as f:
                ns += int(f.read().split()[0])
            counted = True
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended, or no schedstat (a kernel without it)
    if counted:
        return ns / 1e9
    t = p.cpu_times()
    return float(t.user + t.system)


def measure(
    gpus: int, seconds: float, warmup: float, width: int, height: int, path: str = "shortcuts"
) -> dict[str, float]:
    subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
    # Set either way: the tmux server's environment may not be this shell's.
    command = (
        f"env GPUTUI_TEXTUAL_PUBLIC={PATHS[path]} "
        f"{sys.executable} -m gputui --demo --gpus {gpus} --interval 1"
    )
    started = time.perf_counter()
    tmux("new-session", "-d", "-s", SESSION, "-x", str(width), "-y", str(height), command)
    pid = int(tmux("list-panes", "-t", SESSION, "-F", "#{pane_pid}").split()[0])
    first_frame = float("nan")
    deadline = started + 20
    while time.perf_counter() < deadline:
        screen = tmux("capture-pane", "-p", "-t", SESSION)
        if "GPU 0 NVIDIA" in screen and "Util" in screen:  # the detail panel is drawn
            first_frame = time.perf_counter() - started
            break
        time.sleep(0.01)
    proc = psutil.Process(pid)
    time.sleep(warmup)
    rss_start = proc.memory_info().rss
    cpu0, wall0 = cpu_seconds(proc), time.perf_counter()
    time.sleep(seconds)
    cpu1, wall1 = cpu_seconds(proc), time.perf_counter()
    rss_end = proc.memory_info().rss
    tmux("kill-session", "-t", SESSION)
    return {
        "gpus": gpus,
        "cpu_pct": 100.0 * (cpu1 - cpu0) / (wall1 - wall0),
        "first_frame_s": first_frame,
        "rss_start_mb": rss_start / 2**20,
        "rss_end_mb": rss_end / 2**20,
    }


def import_time() -> tuple[float, float]:
    def run(code: str) -> float:
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            best = min(best, time.perf_counter() - start)
        return best

    base = run("pass")
    return run("import gputui.cli") - base, run("import gputui.ui.app") - base


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, nargs="+", default=[1, 8, 16])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--size", default="160x50")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--public", action="store_true", help="GPUTUI_TEXTUAL_PUBLIC=1 only")
    which.add_argument("--both", action="store_true", help="shortcuts on, then public")
    args = parser.parse_args()
    paths = ["shortcuts", "public"] if args.both else ["public" if args.public else "shortcuts"]
    if shutil.which("tmux") is None:
        print("tmux is needed", file=sys.stderr)
        return 1
    width, height = (int(v) for v in args.size.split("x"))
    cli_import, ui_import = import_time()
    print(
        f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, tmux {args.size}, "
        f"warm-up {args.warmup:g} s, measured over {args.seconds:g} s"
    )
    print(
        f"import time: gputui.cli {cli_import * 1e3:.0f} ms, gputui.ui.app {ui_import * 1e3:.0f} ms"
    )
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        # An installed gputui starts from compiled modules; with this set, an editable
        # checkout compiles all of its own at every start (~100 ms more to the first frame).
        print("note: PYTHONDONTWRITEBYTECODE is set: gputui's modules are compiled at each start")
    columns = ("GPUs", "Textual path", "CPU % of a core", "first frame s", "RSS start MB")
    widths = (4, 12, 16, 14, 13, 11)
    print(" ".join(f"{c:>{w}}" for c, w in zip((*columns, "RSS end MB"), widths, strict=True)))
    for gpus in args.gpus:
        for path in paths:
            r = measure(gpus, args.seconds, args.warmup, width, height, path)
            print(
                f"{gpus:>4} {path:>12} {r['cpu_pct']:>16.2f} {r['first_frame_s']:>14.2f} "
                f"{r['rss_start_mb']:>13.1f} {r['rss_end_mb']:>11.1f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
