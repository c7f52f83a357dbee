"""What ``gputui.watch`` (and so each framework's callback) costs a training loop, per step.

Usage: python benchmarks/watch_overhead.py [--gpus 8] [--steps 1000] [--step-ms 20]
       [--rounds 3] [--log-every 50]

A loop of ``--steps`` steps, each ``--step-ms`` of work that releases the GIL (a sleep: the
host thread of a GPU-bound step waits on the device), runs without a watch and with one,
alternating ``--rounds`` times so both see the same load; the difference of the medians,
per step, is the overhead. The watch reads the NVML test double (tests/nvml_double.py, an
R570 driver with ``--gpus`` GPUs: gputui's and nvidia-ml-py's Python over a fake library,
more than a real driver's calls cost), judges every reading, and logs every
``--log-every`` steps. Then the parts alone: ``step()``, one ``log()``, and the sampling
thread's CPU per second (its reads and the advisor), as the share of a 100 ms step each
is.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gputui.api import Log, Watch, watch
from tests.nvml_double import driver, hgx, install

STEP_100MS_US = 100_000.0


def loop(steps: int, step_s: float, watch: Watch | None) -> float:
    """Wall seconds for ``steps`` steps."""
    start = time.perf_counter()
    for _ in range(steps):
        time.sleep(step_s)
        if watch is not None:
            watch.step()
    return time.perf_counter() - start


def watched(args: argparse.Namespace, logs: list[Log]) -> Watch:
    return watch("all", log_every=args.log_every, on_log=logs.append)


def per_call_us(fn: Callable[[], object], count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        fn()
    return (time.perf_counter() - start) / count * 1e6


def sampling_cpu(args: argparse.Namespace, seconds: float = 10.0) -> float:
    """The process's CPU seconds a second with a watch whose loop only sleeps (its sampling
    thread alone works), less the same without one."""
    logs: list[Log] = []
    before = time.process_time()
    time.sleep(seconds)
    idle = time.process_time() - before
    with watched(args, logs):
        time.sleep(1.0)  # past the open and the first reads
        before = time.process_time()
        time.sleep(seconds)
        busy = time.process_time() - before
    return (busy - idle) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--step-ms", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--log-every", type=int, default=50)
    args = parser.parse_args()
    monkeypatch = pytest.MonkeyPatch()
    install(monkeypatch, driver(570, hgx(args.gpus)))
    step_s = args.step_ms / 1e3

    bare: list[float] = []
    with_watch: list[float] = []
    for _ in range(args.rounds):
        bare.append(loop(args.steps, step_s, None))
        logs: list[Log] = []
        with watched(args, logs) as w:
            with_watch.append(loop(args.steps, step_s, w))
    base, taken = statistics.median(bare), statistics.median(with_watch)
    overhead_us = (taken - base) / args.steps * 1e6
    print(f"{args.steps} steps of {args.step_ms:g} ms, {args.rounds} rounds, {args.gpus} GPUs")
    print(f"  without the watch: {base / args.steps * 1e3:.3f} ms a step (median round)")
    print(f"  with the watch:    {taken / args.steps * 1e3:.3f} ms a step (median round)")
    print(
        f"  overhead:          {overhead_us:+.1f} us a step "
        f"({overhead_us / STEP_100MS_US * 100:+.3f} % of a 100 ms step); rounds "
        f"{[round(b / args.steps * 1e3, 3) for b in bare]} and "
        f"{[round(t / args.steps * 1e3, 3) for t in with_watch]} ms"
    )

    logs = []
    with watched(args, logs) as w:
        time.sleep(2.0)
        w.log_every = None  # step() alone
        step_us = per_call_us(w.step, 100_000)
        w.log()
        log_us = per_call_us(w.log, 200)
    cpu = sampling_cpu(args)
    print("the parts alone:")
    print(f"  step():           {step_us:.2f} us")
    print(
        f"  log():            {log_us:.0f} us, every {args.log_every} steps: "
        f"{log_us / args.log_every:.2f} us a step"
    )
    print(
        f"  sampling thread:  {cpu * 100:.2f} % of a core: {cpu * 100:.2f} ms of CPU in "
        "each 100 ms of steps, on a core the step leaves free while it waits on its GPU"
    )
    monkeypatch.undo()


if __name__ == "__main__":
    main()
