"""Where the running app's CPU goes, stage by stage, in a real tmux.

Usage: python benchmarks/app_stages.py [--gpus 8] [--warmup 65] [--seconds 30] [--size 160x50]
                                      [--public] [--driver DIR --driver-config CONF]

Starts the demo in tmux through this same script (``--child``), which wraps the app's
stages with per-thread CPU timers before it runs: the frame handler (monitor.ingest,
then drawing the panels' lines), Textual's compositor refresh (rendering the changed
rows, writing the ANSI), the sampler thread (the source read) and garbage collection.
After the warm-up it measures for --seconds and prints CPU milliseconds per tick for
each stage beside the process total. The timers cost a little themselves: the process
figure here reads ~0.05 points above app_cpu.py's. Each thread's own CPU over the same
window follows (its schedstat; threads named as gputui and Textual name them).

With ``--driver`` (a folder with a stand-in libnvidia-ml.so.1, ``benchmarks/stand_in.py``)
the live app reads the stand-in's GPUs through nvidia-ml-py instead of the demo, and the
sampler's stages are the NVML read's: the GPUs' samples, the event poll, the GPU processes'
host side, the host, and the jobs' settings.

The Textual stages are private methods, which gputui/ui/compat.py names
(``paint_stages``): a stage this Textual lacks is left out of the table. --public runs
the app with GPUTUI_TEXTUAL_PUBLIC=1 (none of the shortcuts in gputui/ui/compat.py).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from benchmarks.stand_in import stand_in

SESSION = "gputui-stages"


def child(out: Path, argv: list[str]) -> int:
    """Run the app with timers on its stages; SIGUSR1 starts a measurement, SIGUSR2 ends it."""
    from textual import app as textual_app
    from textual import screen as textual_screen

    from gputui import cli
    from gputui.sources import simulated
    from gputui.ui import app as ui_app
    from gputui.ui import compat
    from gputui.ui import lines as ui_lines
    from gputui.view import screen as view_screen

    spent: defaultdict[str, float] = defaultdict(float)
    calls: defaultdict[str, int] = defaultdict(int)
    main = threading.get_ident()

    def wrap(owner: Any, name: str, label: str, any_thread: bool = False) -> None:
        original: Callable[..., Any] | None = getattr(owner, name, None)
        if original is None:  # a private name this Textual (or gputui) no longer has
            print(f"app_stages: no {getattr(owner, '__name__', owner)}.{name}", file=sys.stderr)
            return

        def timed(*args: Any, **kwargs: Any) -> Any:
            if not any_thread and threading.get_ident() != main:
                return original(*args, **kwargs)
            start = time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                spent[label] += time.thread_time() - start
                calls[label] += 1

        setattr(owner, name, timed)

    from gputui.sampling.monitor import Monitor

    wrap(ui_app.GpuTuiApp, "_show_frame", "frame handler")  # a message or the fast way
    wrap(Monitor, "ingest", "  monitor.ingest (history + advisor)")
    wrap(ui_app.GpuTuiApp, "redraw", "  redraw (view model, then paint)")
    wrap(view_screen.ScreenView, "contents", "    view model: the panels' rows")
    wrap(ui_lines.LineView, "set_rows", "    paint the changed rows")
    wrap(compat.FastPaint, "write_rows", "  write the changed cells (the fast paint)")
    labels: dict[type[Any], str] = {
        textual_screen.Screen: "compositor refresh",
        textual_app.App: "  write the ANSI",
    }
    for owner, method in compat.paint_stages():  # Textual's own: private, named in compat
        wrap(owner, method, labels.get(owner, "  render the changed rows"))
    if "--demo" in argv:
        wrap(simulated.SimulatedSource, "read", "sampler thread: source read", any_thread=True)
    else:
        from gputui.sources.host import HostReader
        from gputui.sources.nvml import source as nvml_source
        from gputui.sources.settings import SettingsReader

        reader = nvml_source.NvmlSource
        wrap(reader, "read", "sampler thread: source read", any_thread=True)
        wrap(nvml_source, "sample", "  the GPUs' samples", any_thread=True)
        wrap(reader, "_poll_events", "  event poll", any_thread=True)
        wrap(HostReader, "join_processes", "  GPU processes' host side", any_thread=True)
        wrap(HostReader, "read_host", "  the host", any_thread=True)
        wrap(SettingsReader, "read", "  the jobs' settings", any_thread=True)

    gc_start = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if threading.get_ident() != main:
            return
        if phase == "start":
            gc_start[0] = time.thread_time()
        else:
            spent["garbage collection"] += time.thread_time() - gc_start[0]
            calls["garbage collection"] += 1

    gc.callbacks.append(on_gc)
    marks = {"wall": 0.0, "process": 0.0, "main": 0.0}

    threads_at: dict[str, float] = {}

    def begin(_signum: int, _frame: object) -> None:
        spent.clear()
        calls.clear()
        marks.update(wall=time.monotonic(), process=time.process_time(), main=time.thread_time())
        threads_at.update(_thread_times())

    def end(_signum: int, _frame: object) -> None:
        now = _thread_times()
        result = {
            "wall": time.monotonic() - marks["wall"],
            "process": time.process_time() - marks["process"],
            "main": time.thread_time() - marks["main"],
            "stages": {k: [spent[k], calls[k]] for k in spent},
            "threads": {name: now[name] - threads_at.get(name, 0.0) for name in now},
        }
        out.write_text(json.dumps(result))

    signal.signal(signal.SIGUSR1, begin)
    signal.signal(signal.SIGUSR2, end)
    return cli.main(argv)


def _thread_times() -> dict[str, float]:
    """Each live thread's CPU seconds so far (its schedstat), by its name."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = {}
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/schedstat") as stat:
                ran = int(stat.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile
        name = names.get(int(task), f"thread {task}")
        out[name] = out.get(name, 0.0) + ran
    return out


def measure(
    gpus: int,
    warmup: float,
    seconds: float,
    size: str,
    public: bool = False,
    driver: Path | None = None,
    config: Path | None = None,
    workers: int = 0,
) -> dict[str, Any]:
    width, height = size.split("x")
    node_made = stand_in(driver, config, gpus, workers)
    with tempfile.TemporaryDirectory() as tmp, node_made as node:
        out = Path(tmp) / "stages.json"
        child = [sys.executable, str(Path(__file__).resolve()), "--child", str(out)]
        demo = ["--demo", "--gpus", str(gpus)] if driver is None else []  # else the stand-in's
        public_only = f"GPUTUI_TEXTUAL_PUBLIC={int(public)}"
        command = shlex.join([*node.environment(), public_only, *child, *demo, "--interval", "1"])
        subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", SESSION, "-x", width, "-y", height, command],
            check=True,
        )
        try:
            pane = subprocess.run(
                ["tmux", "list-panes", "-t", SESSION, "-F", "#{pane_pid}"],
                check=True,
                capture_output=True,
                text=True,
            )
            pid = int(pane.stdout.split()[0])
            time.sleep(warmup)
            os.kill(pid, signal.SIGUSR1)
            time.sleep(seconds)
            os.kill(pid, signal.SIGUSR2)
            for _ in range(50):
                if out.exists():
                    break
                time.sleep(0.1)
            result: dict[str, Any] = json.loads(out.read_text())
        finally:
            subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
    return result


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        return child(Path(sys.argv[2]), sys.argv[3:])
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--warmup", type=float, default=65.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--size", default="160x50")
    parser.add_argument("--public", action="store_true", help="GPUTUI_TEXTUAL_PUBLIC=1")
    parser.add_argument("--driver", type=Path, help="a folder with a stand-in libnvidia-ml.so.1")
    parser.add_argument("--driver-config", type=Path, help="the stand-in's FAKENVML_CONFIG")
    parser.add_argument(
        "--workers", type=int, default=0, help="data-loader workers of each stand-in GPU process"
    )
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is needed", file=sys.stderr)
        return 1
    r = measure(
        args.gpus,
        args.warmup,
        args.seconds,
        args.size,
        args.public,
        args.driver,
        args.driver_config,
        args.workers,
    )
    wall = r["wall"]
    ticks = max(1, r["stages"].get("frame handler", [0.0, 1])[1])
    where = (
        f"the stand-in in {args.driver} ({args.workers} workers a GPU process)"
        if args.driver
        else "the demo"
    )
    print(
        f"{args.gpus} GPUs of {where}, {args.size}, 1 s refresh, "
        f"{args.seconds:g} s after {args.warmup:g} s, "
        f"{'public Textual paths only' if args.public else 'shortcuts on'}: "
        f"process {100 * r['process'] / wall:.2f} % of a core "
        f"({1e3 * r['process'] / ticks:.1f} ms per tick), "
        f"main thread {1e3 * r['main'] / ticks:.1f} ms per tick"
    )
    print(f"{'stage':<44} {'ms per tick':>11} {'calls':>6}")
    for label, (spent, calls) in r["stages"].items():
        print(f"{label:<44} {1e3 * spent / ticks:>11.2f} {calls:>6}")
    print(f"{'thread':<44} {'ms per tick':>11}")
    for name, ran in sorted(r["threads"].items(), key=lambda item: -item[1]):
        if ran > 0:
            print(f"{name:<44} {1e3 * ran / ticks:>11.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
