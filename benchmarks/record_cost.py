"""What ``gputui record`` costs: CPU, the file's bytes a day, the bytes written and the
syncs, for N simulated GPUs at 1 s (the default mix).

Usage: python benchmarks/record_cost.py [--gpus 8] [--ticks 3600] [--seconds 120]
                                        [--warmup 10] [--against DIR] [--dir DIR]
                                        [--skip-live]

For this tree (and, with ``--against``, another checkout of gputui, e.g. an older commit
unpacked with ``git archive``), plain and gzip:

1. In one process, ``--ticks`` ticks of the simulated mix on a manual clock, read, judged
   and written as ``gputui record`` does each tick (source, monitor, the recording's
   writer): CPU ms a tick of each (and the writer's wall time, its syncs' waits
   included), the file's size a day, the bytes the writer handed the kernel a day (write
   amplification: those over the file's), and the fsyncs a day (the fsync and fdatasync
   calls counted). The frame time runs ``--ticks`` seconds: what a policy on frame time
   (``--sync``) does in a day is what it does here.
2. The real command, ``python -m gputui record --demo --gpus N -o FILE``, every tree and
   format side by side (the same load on all), ``--warmup`` then ``--seconds`` at 1 s:
   CPU % of one core (every thread's run time), the bytes it wrote (write calls) and its
   write calls, a day.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ("run.jsonl", "run.jsonl.gz")
DAY = 86_400


def _io() -> dict[str, int]:
    """This process's write counters (/proc/self/io): bytes through write calls, calls."""
    out: dict[str, int] = {}
    for line in Path("/proc/self/io").read_text().splitlines():
        key, _, value = line.partition(":")
        out[key] = int(value)
    return out


def inner(name: str, gpus: int, ticks: int, directory: Path) -> dict[str, float]:
    """Part 1, in the gputui on ``sys.path`` (run by ``--inner`` in a fresh process)."""
    syncs = [0]
    for sync in ("fsync", "fdatasync"):  # counted before gputui takes them
        real = getattr(os, sync)

        def counted(fd: int, real: Any = real) -> None:
            syncs[0] += 1
            real(fd)

        setattr(os, sync, counted)

    from gputui.advisor import make_monitor
    from gputui.core.config import Config
    from gputui.core.manual_clock import ManualClock
    from gputui.core.model import SourceInfo
    from gputui.core.names import SourceKind
    from gputui.exporters.recorder import RecordWriter
    from gputui.formats.recording import Header
    from gputui.sources.simulated import SimulatedSource, resolve_scenarios

    clock = ManualClock(1_800_000_000.0)
    source = SimulatedSource(resolve_scenarios("mix", gpus), clock=clock)
    devices = source.open()
    info = SourceInfo("SIMULATED", SourceKind.SIMULATED, "mix")
    monitor = make_monitor(devices, Config(), info)
    path = directory / name
    took = {"read": 0.0, "ingest": 0.0, "write": 0.0, "write wall": 0.0}
    cpu = time.process_time
    before = _io()
    writer = RecordWriter(path, Header(info, devices, 1.0, live_findings=True))
    for _ in range(ticks):
        t0 = cpu()
        frame = source.read()
        t1 = cpu()
        found = monitor.ingest(frame)
        t2, wall = cpu(), time.perf_counter()
        writer.write(frame, found)
        took["write wall"] += time.perf_counter() - wall
        took["write"] += cpu() - t2
        took["ingest"] += t2 - t1
        took["read"] += t1 - t0
        clock.advance(1.0)
    t0, wall = cpu(), time.perf_counter()
    writer.close()
    took["write"] += cpu() - t0
    took["write wall"] += time.perf_counter() - wall
    after = _io()
    scale = DAY / ticks
    return {
        **{f"{k} ms": v / ticks * 1e3 for k, v in took.items()},
        "file MB/day": path.stat().st_size * scale / 1e6,
        "written MB/day": (after["wchar"] - before["wchar"]) * scale / 1e6,
        "write calls/day": (after["syscw"] - before["syscw"]) * scale,
        "fsyncs/day": syncs[0] * scale,
    }


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree)}


def in_process(tree: Path, name: str, args: argparse.Namespace, work: Path) -> dict[str, float]:
    out = work / f"{tree.name}-inner"
    out.mkdir(exist_ok=True)
    command = [
        sys.executable,
        __file__,
        "--inner",
        name,
        "--gpus",
        str(args.gpus),
        "--ticks",
        str(args.ticks),
        "--dir",
        str(out),
    ]
    done = subprocess.run(command, env=_env(tree), capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def _proc_io(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        key, _, value = line.partition(":")
        out[key] = int(value)
    return out


def live(trees: list[Path], args: argparse.Namespace, work: Path) -> dict[str, dict[str, float]]:
    """Part 2: every tree's recorder for each format, started together."""
    import psutil

    from benchmarks.app_cpu import cpu_seconds

    procs: dict[str, subprocess.Popen[bytes]] = {}
    for n, tree in enumerate(trees):
        for name in FORMATS:
            out = work / f"live{n}"
            out.mkdir(exist_ok=True)
            command = [sys.executable, "-m", "gputui", "record", "--demo", "--gpus"]
            command += [str(args.gpus), "-o", str(out / name)]
            procs[f"{tree}: {name}"] = subprocess.Popen(
                command, env=_env(tree), cwd=tree, stderr=subprocess.DEVNULL
            )
    time.sleep(args.warmup)
    start = {k: (cpu_seconds(psutil.Process(p.pid)), _proc_io(p.pid)) for k, p in procs.items()}
    t0 = time.monotonic()
    time.sleep(args.seconds)
    took = time.monotonic() - t0
    results: dict[str, dict[str, float]] = {}
    for key, proc in procs.items():
        cpu, io = cpu_seconds(psutil.Process(proc.pid)), _proc_io(proc.pid)
        cpu0, io0 = start[key]
        results[key] = {
            "CPU %": (cpu - cpu0) / took * 100,
            "written MB/day": (io["wchar"] - io0["wchar"]) / took * DAY / 1e6,
            "write calls/day": (io["syscw"] - io0["syscw"]) / took * DAY,
        }
    for proc in procs.values():
        proc.terminate()
        proc.wait()
    return results


def _table(rows: dict[str, dict[str, float]]) -> None:
    columns = list(next(iter(rows.values())))
    width = max(len(k) for k in rows)
    print(f"{'':<{width}}" + "".join(f"{c:>17}" for c in columns))
    for key, row in rows.items():
        print(f"{key:<{width}}" + "".join(f"{row[c]:>17,.3f}" for c in columns))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--ticks", type=int, default=3600)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--against", type=Path, help="another gputui tree, measured alongside")
    parser.add_argument("--dir", type=Path, help="where the files go (default: a temp dir)")
    parser.add_argument("--skip-live", action="store_true", help="part 1 alone")
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        print(json.dumps(inner(args.inner, args.gpus, args.ticks, args.dir)))
        return 0
    sys.path.insert(0, str(ROOT))
    trees = [ROOT, *([args.against.resolve()] if args.against else [])]
    with tempfile.TemporaryDirectory(dir=args.dir) as name:
        work = Path(name)
        print(f"part 1: {args.ticks:,} ticks of {args.gpus} GPUs in one process, a day's worth")
        _table(
            {
                f"{tree}: {fmt}": in_process(tree, fmt, args, work)
                for tree in trees
                for fmt in FORMATS
            }
        )
        if not args.skip_live:
            print(f"part 2: gputui record, {args.seconds:g} s after {args.warmup:g} s, 1 s ticks")
            _table(live(trees, args, work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
