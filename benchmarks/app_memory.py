"""The app's own resident memory over hours of ticks: history, advisor and the screen.

Usage: python benchmarks/app_memory.py [--gpus 8] [--hours 24] [--size 160x50]

Runs the real app headless (Textual's pilot) at the given size on a simulated source and
a manual clock, feeds one frame per simulated second as fast as the machine draws them,
and prints resident memory once per simulated hour. The history holds one hour, so from
the second hour on the figure must stay flat: anything that grows is a leak (render
caches, findings, strips). Every tick is drawn, as in a terminal: hours of ticks take
minutes of CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time

import psutil

from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.launch import make_app
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from gputui.ui.messages import FrameReady


async def run(gpus: int, hours: float, width: int, height: int) -> None:
    clock = ManualClock(1_800_000_000.0)
    source = SimulatedSource(resolve_scenarios(None, gpus), clock=clock)
    app = make_app(source, source.open(), Config(), live=False)
    proc = psutil.Process()
    async with app.run_test(size=(width, height)) as pilot:
        await pilot.pause()
        gc.collect()
        print(f"start: RSS {proc.memory_info().rss / 2**20:.1f} MB", flush=True)
        started = time.perf_counter()
        ticks = int(hours * 3600)
        for tick in range(1, ticks + 1):
            clock.advance(1.0)
            app.post_message(FrameReady(source.read()))
            if tick % 10 == 0:  # let the screen catch up, as a 1 s refresh would
                await pilot.pause()
            if tick % 3600 == 0:
                await pilot.pause()
                print(
                    f"hour {tick // 3600:>3}: RSS {proc.memory_info().rss / 2**20:.1f} MB, "
                    f"findings {len(app.monitor.findings)}, "
                    f"{time.perf_counter() - started:.0f} s so far",
                    flush=True,
                )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--size", default="160x50")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    asyncio.run(run(args.gpus, args.hours, width, height))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
