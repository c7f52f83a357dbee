"""The host half of a tick on a training node: the GPU processes joined with the host's
view of them (their CPU, memory, workers), the host's readings and the jobs' settings,
for 8 GPU processes with ``--workers`` data-loader workers each.

Usage: python benchmarks/host_side.py [--workers 0 8 16] [--ticks 600] [--tree DIR ...]

The processes are real (sleeping children of this script, the workers children of their
GPU process, as a rank's forked DataLoader workers are), so every /proc read is the
kernel's; the clock is simulated, one tick a second, so the readers' periods (a job's
settings every 10 s, placement every 10 s, the process tree every 30 s) come round as in
a live run. The figure is the CPU of the calls (thread time), per tick, averaged over
``--ticks`` ticks: best of five rounds. ``--tree`` measures another checkout's gputui on
the same processes, in turn with this one (e.g. a worktree of the commit before).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GPU_PROCESSES = 8
ROUNDS = 5


def measure(pids: list[int], ticks: int) -> dict[str, float]:
    """Microseconds of CPU a tick: in all, and in each of the three calls."""
    from gputui.sources.host import GpuProcess, HostReader
    from gputui.sources.settings import SettingsReader

    now = [1000.0]

    def clock() -> float:
        return now[0]

    if "keep_files" in inspect.signature(HostReader).parameters:  # as the app reads
        host = HostReader(clock=clock, device_check=lambda pid: True, keep_files=True)
    else:  # a checkout from before the stat files were kept open
        host = HostReader(clock=clock, device_check=lambda pid: True)
    settings = SettingsReader(clock=clock)
    found = [GpuProcess(pid, i, 1 << 30, "compute") for i, pid in enumerate(pids)]
    spent = {"join": 0, "host": 0, "settings": 0}

    def tick() -> None:
        now[0] += 1.0
        t0 = time.thread_time_ns()
        processes, _notes = host.join_processes(found)
        t1 = time.thread_time_ns()
        host.read_host()
        t2 = time.thread_time_ns()
        settings.read(processes, host.workers_of, ())
        t3 = time.thread_time_ns()
        spent["join"] += t1 - t0
        spent["host"] += t2 - t1
        spent["settings"] += t3 - t2

    for _ in range(60):  # every period has come round once: the steady state
        tick()
    best: dict[str, float] | None = None
    for _ in range(ROUNDS):
        spent.update(join=0, host=0, settings=0)
        for _ in range(ticks):
            tick()
        total = sum(spent.values())
        if best is None or total / ticks / 1e3 < best["tick"]:
            best = {k: v / ticks / 1e3 for k, v in spent.items()}
            best["tick"] = total / ticks / 1e3
    assert best is not None
    return best


def _gpu_processes(workers: int, made: list[subprocess.Popen[bytes]]) -> None:
    """Start the GPU processes with their workers into ``made`` (ended by the caller)."""
    script = "sleep 600 & " * workers + "exec sleep 600"
    made.extend(subprocess.Popen(["sh", "-c", script]) for _ in range(GPU_PROCESSES))
    deadline = time.monotonic() + 5
    while not all(_started(p.pid, workers) for p in made):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the GPU processes' {workers} workers each did not start in 5 s")
        time.sleep(0.01)


def _started(pid: int, workers: int) -> bool:
    """The shell has become the GPU process (exec'd sleep) with its workers started."""
    from benchmarks.stand_in import children

    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return False
    return comm == "sleep" and len(children(pid)) >= workers


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        import gputui

        pids = [int(p) for p in sys.argv[3].split(",")]
        tree = str(Path(gputui.__file__).resolve().parent.parent)
        print(json.dumps({**measure(pids, int(sys.argv[2])), "tree": tree}))
        return 0
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 8, 16])
    parser.add_argument("--ticks", type=int, default=600)
    parser.add_argument("--tree", type=Path, nargs="*", default=[], help="other checkouts")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    trees = [ROOT, *(t.resolve() for t in args.tree)]
    print(
        f"{GPU_PROCESSES} GPU processes, simulated 1 s ticks, CPU per tick (best of {ROUNDS} "
        f"rounds of {args.ticks} ticks), Python {sys.version.split()[0]}"
    )
    print(f"{'workers':>7} {'tree':<32} {'tick us':>8} {'join':>6} {'host':>6} {'settings':>8}")
    from benchmarks.stand_in import end_with_children  # the parent's only: see --tree

    for workers in args.workers:
        made: list[subprocess.Popen[bytes]] = []
        try:
            _gpu_processes(workers, made)
            listed = ",".join(str(p.pid) for p in made)
            for tree in trees:
                child = [sys.executable, __file__, "--child", str(args.ticks), listed]
                env = {**os.environ, "PYTHONPATH": str(tree)}
                out = subprocess.run(child, env=env, check=True, capture_output=True, text=True)
                r = json.loads(out.stdout)
                if Path(r["tree"]) != tree:
                    raise RuntimeError(f"{tree} was asked for, {r['tree']}'s gputui measured")
                print(
                    f"{workers:>7} {str(tree)[-32:]:<32} {r['tick']:>8.0f} {r['join']:>6.0f} "
                    f"{r['host']:>6.0f} {r['settings']:>8.0f}"
                )
        finally:
            for process in made:
                end_with_children(process)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
