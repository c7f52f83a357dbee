"""Cost of one tick of each stage for N GPUs: source read, history, advisor, render.

Usage: python benchmarks/tick_cost.py [--gpus 8] [--ticks 300]

The NVML figures run the real nvidia-ml-py code and gputui's source over the test double of
libnvidia-ml (tests/nvml_double.py) as an R535 and an R570 driver: they measure gputui's and
pynvml's Python overhead and count NVML calls per native function, per GPU per second; not
the driver's own time, which only a real GPU shows (`--real` here, or
`python -m benchmarks.real_gpu_check`).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gputui.advisor import RULES, make_advisor, make_monitor
from gputui.core.config import Config, Thresholds
from gputui.core.manual_clock import ManualClock
from gputui.core.model import SourceInfo
from gputui.core.names import SourceKind
from gputui.sampling.history import History
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from gputui.view.choices import Choices
from gputui.view.screen import ScreenView


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3, max(samples) * 1e3


@dataclasses.dataclass
class NvmlCost:
    label: str
    median_ms: float
    worst_ms: float
    per_gpu_s: float  # NVML calls per GPU per second, steady
    by_name: dict[str, float]  # the same, per native function


def nvml_cost(gpus: int, ticks: int, branch: int) -> NvmlCost:
    """The NVML source over the fake driver of ``branch`` (535: no byte counters and a
    20 ms throughput call; 570: counters), one tick a simulated second. Calls are counted
    where the bindings call the native library, so every call pynvml makes is in."""
    import pytest

    from gputui.sources.nvml import NvmlSource
    from tests.nvml_double import FakeGpu, FakeProcess, driver, install

    monkeypatch = pytest.MonkeyPatch()
    try:
        procs = [FakeProcess(31337 + i, 1 << 30) for i in range(3)]
        lib = driver(branch, [FakeGpu(gpm=True, fan=40, processes=procs) for _ in range(gpus)])
        install(monkeypatch, lib)
        mono = ManualClock(1000.0)
        source = NvmlSource(host=None, monotonic=mono)
        source.open()
        warm = max(60, ticks // 5)
        samples: list[float] = []
        before: Counter[str] = Counter()
        for i in range(warm + ticks):
            if i == warm:
                before = Counter(lib.calls)
            start = time.perf_counter()
            source.read()
            samples.append(time.perf_counter() - start)
            source.wait_windows()  # outside the timing: the tick never waits for them
            mono.advance(1.0)
        made = Counter(lib.calls)
        made.subtract(before)
        source.close()
        by_name = {n: c / gpus / ticks for n, c in sorted(made.items()) if c}
        steady = samples[warm:]
        return NvmlCost(
            f"R{branch}",
            statistics.median(steady) * 1e3,
            max(steady) * 1e3,
            sum(by_name.values()),
            by_name,
        )
    finally:
        monkeypatch.undo()


def nvml_real(ticks: int) -> tuple[float, float, int]:
    from gputui.sources.nvml import NvmlSource

    source = NvmlSource(host=None)
    source.open()
    median, worst = timed(source.read, ticks)
    calls = max(source.last_calls.values()) if source.last_calls else 0
    source.close()
    return median, worst, calls


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--ticks", type=int, default=300)
    parser.add_argument("--real", action="store_true", help="use the installed NVIDIA driver")
    args = parser.parse_args()

    clock = ManualClock(1_800_000_000.0)
    source = SimulatedSource(resolve_scenarios("mix", args.gpus), clock=clock)
    devices = source.open()
    history = History(3600)
    # judge_every_s=0: every call below is a full judgement (the app judges every 2 s)
    advisor = make_advisor(devices, Thresholds(judge_every_s=0.0))

    def sim_read() -> None:
        clock.advance(1.0)
        history.add(source.read())

    for _ in range(600):  # a full window of history before measuring the advisor
        sim_read()
        advisor.update(history)
    frame = source.read()
    rows: list[tuple[str, float, float]] = []
    rows.append(("simulated source read", *timed(source.read, args.ticks)))
    scratch = History(3600)
    frames = [dataclasses.replace(frame, time=frame.time + i) for i in range(args.ticks)]
    feed = iter(frames)
    rows.append(("history.add", *timed(lambda: scratch.add(next(feed)), args.ticks)))
    rows.append(
        (
            f"advisor, one judgement ({len(RULES)} rules)",
            *timed(lambda: advisor.update(history), args.ticks),
        )
    )
    monitor = make_monitor(devices, Config(), SourceInfo("SIMULATED", SourceKind.SIMULATED))
    for _ in range(300):  # five minutes of history behind the panels
        clock.advance(1.0)
        monitor.ingest(source.read())
    view = ScreenView()
    rows.append(
        (
            "view model (detail view, 160x50)",
            *timed(lambda: view.contents(monitor, Choices(), 1.0, 160, 50), args.ticks),
        )
    )
    rows.append(
        (
            "view model (overview, 160x50)",
            *timed(
                lambda: view.contents(monitor, Choices(overview=True), 1.0, 160, 50), args.ticks
            ),
        )
    )
    costs: list[NvmlCost] = []
    if args.real:
        median, worst, calls = nvml_real(args.ticks)
        rows.append(("NVML source read (real driver)", median, worst))
    else:
        for branch in (535, 570):
            cost = nvml_cost(args.gpus, args.ticks, branch)
            costs.append(cost)
            rows.append((f"NVML source read (fake {cost.label})", cost.median_ms, cost.worst_ms))

    print(f"one tick, {args.gpus} GPUs, {args.ticks} repetitions, Python {sys.version.split()[0]}")
    print(f"{'stage':<34} {'median ms':>10} {'max ms':>9}")
    for name, med, mx in rows:
        print(f"{name:<34} {med:>10.3f} {mx:>9.3f}")
    if args.real:
        print(f"NVML calls per GPU in the last tick: {calls}")
        return 0
    print()
    print(f"NVML calls per GPU per second, steady, {args.gpus} GPUs at 1 s (budget: 12)")
    print("R535: no PCIe byte counters, 20 ms nvmlDeviceGetPcieThroughput on its own threads;")
    print("R570: byte counters in the field batch. Both with GPM (Hopper) and 3 processes.")
    names = sorted({n for c in costs for n in c.by_name})
    print(f"{'native function':<48}" + "".join(f"{c.label:>8}" for c in costs))
    for name in names:
        print(f"{name:<48}" + "".join(f"{c.by_name.get(name, 0.0):>8.2f}" for c in costs))
    print(f"{'total':<48}" + "".join(f"{c.per_gpu_s:>8.2f}" for c in costs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
