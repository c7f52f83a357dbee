"""Resident memory of the data layer over 24 h of simulated ticks at 1 s.

Usage: python benchmarks/memory_day.py [--gpus 8] [--hours 24]

Feeds a day of frames from the simulated default mix through the same Monitor the app
uses (history + advisor; the advisor on every 10th tick to keep the run short) on a manual
clock, and prints RSS at the start, when the 1 h history is full, and hourly after.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gputui.advisor import make_monitor
from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import SourceInfo
from gputui.core.names import SourceKind
from gputui.sources.simulated import SimulatedSource, resolve_scenarios


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--hours", type=float, default=24.0)
    args = parser.parse_args()
    me = psutil.Process()
    clock = ManualClock(1_800_000_000.0)
    source = SimulatedSource(resolve_scenarios("mix", args.gpus), clock=clock)
    monitor = make_monitor(source.open(), Config(), SourceInfo("SIMULATED", SourceKind.SIMULATED))

    def row(hour: int) -> None:
        rss = me.memory_info().rss / 2**20
        held = monitor.history.memory_bytes() / 2**20
        print(f"{hour:>5} {rss:>8.1f} {held:>11.2f}", flush=True)

    print(f"{'hour':>5} {'RSS MB':>8} {'history MB':>11}")
    row(0)
    ticks = int(args.hours * 3600)
    for i in range(1, ticks + 1):
        monitor.ingest(source.read(), advise=i % 10 == 0)
        clock.advance(1.0)
        if i % 3600 == 0:
            row(i // 3600)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
