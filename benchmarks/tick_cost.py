"""Cost of one tick of each stage for N GPUs: source read, history, advisor, render.

Usage: python benchmarks/tick_cost.py [--gpus 8] [--ticks 300]

The NVML figure here runs the real nvidia-ml-py code and gputui's source over the test
double of libnvidia-ml (tests/nvml_double.py): it measures gputui's and pynvml's Python
overhead and counts NVML calls, not the driver's own time, which only a real GPU shows
(run this on one with --real).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gputui.advisor import make_advisor
from gputui.clocks import ManualClock
from gputui.config import Thresholds
from gputui.sampling.history import History
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from gputui.ui import render


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3, max(samples) * 1e3


def nvml_tick(gpus: int, ticks: int, real: bool) -> tuple[float, float, int]:
    import pytest

    from gputui.sources.nvml import NvmlSource

    monkeypatch = pytest.MonkeyPatch()
    try:
        if not real:
            from tests.nvml_double import FakeGpu, FakeNvmlLib, install

            install(monkeypatch, FakeNvmlLib([FakeGpu(gpm=True) for _ in range(gpus)]))
        source = NvmlSource(host=None)
        source.open()
        median, worst = timed(source.read, ticks)
        calls = max(source.last_calls.values()) if source.last_calls else 0
        source.close()
        return median, worst, calls
    finally:
        monkeypatch.undo()


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
        ("advisor, one judgement (19 rules)", *timed(lambda: advisor.update(history), args.ticks))
    )
    palette = render.Palette()
    findings = advisor.findings

    def draw() -> None:
        render.gpu_list(frame, devices, findings, 0, 54, 16, palette)
        render.detail_lines(frame, devices[0], history, 60, 60, 100, 17, palette)
        render.process_lines(frame.processes_on(0), (), "gpu_memory", 78, 30, palette)
        render.advisor_lines(findings, 0, frame.time, False, 78, 30, palette)

    rows.append(("render lines (detail view)", *timed(draw, args.ticks)))
    rows.append(
        (
            "render lines (overview)",
            *timed(
                lambda: render.overview_lines(
                    frame, devices, findings, history, 0, 158, 46, palette
                ),
                args.ticks,
            ),
        )
    )
    median, worst, calls = nvml_tick(args.gpus, args.ticks, args.real)
    label = "NVML source read (real driver)" if args.real else "NVML source read (fake lib)"
    rows.append((label, median, worst))

    print(f"one tick, {args.gpus} GPUs, {args.ticks} repetitions, Python {sys.version.split()[0]}")
    print(f"{'stage':<34} {'median ms':>10} {'max ms':>9}")
    for name, med, mx in rows:
        print(f"{name:<34} {med:>10.3f} {mx:>9.3f}")
    print(f"NVML calls per GPU per tick: {calls} (one nvmlDeviceGetFieldValues batch included;")
    print("PCIe rates come from its byte counters, so no 20 ms nvmlDeviceGetPcieThroughput window)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
