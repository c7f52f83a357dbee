"""``gputui report`` over a long run: what each stage costs a tick, and what a week of
8 GPUs at 1 s costs in time and in page size.

Usage: python benchmarks/report_week.py [--gpus 8] [--minutes 20] [--days 7]

1. Records ``--minutes`` of the simulated default mix (1 s ticks, a manual clock) to a
   gzip recording, then times the report's stages on it: reading the file (decode and
   checks), the run in columns with the advisor over every frame (``Collector``), the
   accounting, and the HTML page; per tick, and extrapolated to ``--days``.
2. Builds a run of ``--days`` from those columns repeated (no advisor: its findings and
   process spans shifted along) and times the accounting and the page on it, and prints
   the page's size: the size a week's report really has.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from array import array
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gputui.core.manual_clock import ManualClock
from gputui.core.model import SourceInfo
from gputui.core.names import Metric, SourceKind
from gputui.exporters.recorder import RecordWriter
from gputui.exporters.report import Collector, Run, account, report_text
from gputui.exporters.report.run import Track
from gputui.formats.recording import Header, Tick, stream_recording
from gputui.sources.simulated import SimulatedSource, resolve_scenarios

START = 1_800_000_000.0


def record(path: Path, gpus: int, ticks: int) -> None:
    clock = ManualClock(START)
    source = SimulatedSource(resolve_scenarios("mix", gpus), clock=clock)
    devices = source.open()
    writer = RecordWriter(path, Header(SourceInfo("SIMULATED", SourceKind.SIMULATED), devices, 1.0))
    for _ in range(ticks):
        writer.write(source.read(), ())
        clock.advance(1.0)
    writer.close()


def stages(path: Path) -> tuple[Run, dict[str, float]]:
    """The report's stages on a recording, in seconds each."""
    took: dict[str, float] = {}
    t0 = time.perf_counter()
    items = list(stream_recording(path, []))
    took["read the file"] = time.perf_counter() - t0
    header = items[0]
    assert isinstance(header, Header)
    t0 = time.perf_counter()
    collector = Collector(header.devices, header.source, header.interval_s, origin="bench")
    for item in items[1:]:
        if isinstance(item, Tick):
            collector.add(item.frame)
    run = collector.finish()
    took["columns and the advisor"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    account(run)
    took["accounting"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    report_text(run, "html")
    took["the page (accounting again)"] = time.perf_counter() - t0
    return run, took


def repeated(run: Run, times: int) -> Run:
    """The run's columns ``times`` over, one after the other, its stories shifted along."""
    span = run.end - run.start + run.interval_s
    clock = array("d")
    for k in range(times):
        clock.extend(t + k * span for t in run.times)
    tracks = {}
    for index, track in run.tracks.items():
        values: dict[Metric, Sequence[float]] = {
            m: array("f", list(v) * times) for m, v in track.values.items()
        }
        tracks[index] = Track(track.device, values, array("q", list(track.reasons) * times))
    shift = [k * span for k in range(times)]
    episodes = [
        dataclasses.replace(e, since=e.since + s, until=e.until + s)
        for s in shift
        for e in run.episodes
    ]
    spans = [
        dataclasses.replace(p, start=p.start + s, end=p.end + s) for s in shift for p in run.spans
    ]
    return dataclasses.replace(run, times=clock, tracks=tracks, episodes=episodes, spans=spans)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--days", type=float, default=7.0)
    args = parser.parse_args()
    ticks = int(args.minutes * 60)
    week_ticks = int(args.days * 86400)
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "run.jsonl.gz"
        record(path, args.gpus, ticks)
        size = path.stat().st_size
        run, took = stages(path)
    print(f"{ticks:,} ticks of {args.gpus} GPUs, the recording {size / 1e6:.1f} MB gzip")
    print(f"{'stage':<26}{'ms a tick':>10}{f'{args.days:g} days, s':>16}")
    for stage, seconds in took.items():
        per = seconds / ticks
        print(f"{stage:<26}{per * 1e3:>10.3f}{per * week_ticks:>16,.0f}")
    total = sum(took.values()) / ticks
    print(f"{'all':<26}{total * 1e3:>10.3f}{total * week_ticks:>16,.0f}")
    long_run = repeated(run, max(1, round(week_ticks / ticks)))
    t0 = time.perf_counter()
    page = report_text(long_run, "html")
    took_page = time.perf_counter() - t0
    print(
        f"{len(long_run.times):,} ticks repeated ({args.days:g} days): accounting and page "
        f"{took_page:.1f} s, the page {len(page.encode()) / 1e6:.2f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
