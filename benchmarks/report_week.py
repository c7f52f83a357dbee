"""``gputui report`` over a real long recording: a week of 8 GPUs at 1 s, read from the file
as ``gputui report`` reads it, each stage timed, and the page's size.

Usage: python benchmarks/report_week.py [--gpus 8] [--days 7] [--chunk-minutes 360]
                                        [--plain] [--file RUN.jsonl[.gz]] [--keep PATH]
                                        [--processes N]

1. Unless ``--file`` names a recording, writes one: ``--chunk-minutes`` of the simulated
   default mix (1 s ticks, a manual clock) recorded by the real recorder in the format
   ``gputui record`` writes (version 3: blocks of a minute's ticks), then repeated block by
   block, each block's time (``t0``) moved on, until the file holds ``--days`` of ticks
   (gzip unless ``--plain``). The simulator's counters start again at each repeat.
2. Makes the report as ``gputui report`` makes it: ``judge_recording`` (the run cut in
   stretches judged side by side, one process a CPU, ``--processes`` to choose), then
   ``report_text``; prints each stage, the total, the CPU time of this process and its
   children (the machine may be shared), and the page's size. With ``--processes 1`` the
   one process's stages are timed apart: reading the file (decode and checks), the columns
   and the advisor.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gputui.cli.report import REPORT_MAX_TICKS
from gputui.exporters.report import recording_collector, report_text
from gputui.exporters.report.recorded import ONLY, recorded_collector
from gputui.exporters.report.run import RunBuilder
from gputui.exporters.report.segments import judge_recording, workers
from gputui.formats.blocks import Block
from gputui.formats.recording import Border, Header, Tick, read_header, stream_recording
from tests.live_recording import START, record_live


def write_long(path: Path, gpus: int, chunk: int, total: int, plain: bool) -> None:
    """A recording of ``total`` ticks: ``chunk`` simulated ones, repeated, times moved on."""
    with tempfile.TemporaryDirectory() as work:
        part = Path(work) / "chunk.jsonl"
        record_live(part, chunk, gpus)  # what gputui record writes
        lines = part.read_bytes().splitlines(keepends=True)
    with open(path, "wb") as raw:
        if plain:
            _repeat(raw, lines, total)
        else:
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as packed:
                _repeat(packed, lines, total)


def _repeat(out: BinaryIO | gzip.GzipFile, lines: list[bytes], total: int) -> None:
    header, blocks = lines[0], lines[1:]
    out.write(header)
    written = 0
    while written < total:
        for block in blocks:
            data = json.loads(block)
            shift = START + written - data["t0"]
            data["t0"] = START + written
            for _tick, found in data["findings"]:
                for finding in found or ():
                    finding["since"] += shift
                    finding["updated"] += shift
            out.write(json.dumps(data, separators=(",", ":")).encode() + b"\n")
            written += data["block"]
            if written >= total:
                return


def timed(
    items: Iterator[Header | Tick | Block | Border], took: dict[str, float]
) -> Iterator[Header | Tick | Block | Border]:
    """The stream, the time spent getting each item added to ``took["read the file"]``."""
    while True:
        t0 = time.perf_counter()
        item = next(items, None)
        took["read the file"] += time.perf_counter() - t0
        if item is None:
            return
        yield item


def report(
    path: Path, processes: int, rejudge: bool = False
) -> tuple[int, int, int, dict[str, float]]:
    """The report of a recording as ``gputui report`` makes it: ticks, GPUs, page bytes and
    the stages' seconds."""
    if processes > 1:
        t0 = time.perf_counter()
        run = judge_recording(path, REPORT_MAX_TICKS, processes, rejudge)
        assert run is not None
        took = {f"read and judge, {processes} processes": time.perf_counter() - t0}
        t0 = time.perf_counter()
        page = report_text(run, "html")
        took["accounting and the page"] = time.perf_counter() - t0
        return len(run.times), len(run.devices), len(page.encode()), took
    recorded = not rejudge and read_header(path).findings_judged_here()
    stage = "columns and the recorded findings" if recorded else "columns and the advisor"
    took = {"read the file": 0.0, stage: 0.0}
    notices: list[str] = []
    stream = timed(
        stream_recording(
            path,
            notices,
            max_ticks=REPORT_MAX_TICKS,
            findings=recorded,
            columns=True,
            only=ONLY if recorded else None,
        ),
        took,
    )
    header = next(stream)
    assert isinstance(header, Header)
    make = recorded_collector if recorded else recording_collector
    collector: RunBuilder = make(header, path.name)
    for tick in stream:
        t0 = time.perf_counter()
        if isinstance(tick, Block):
            collector.add_block(tick)
        elif isinstance(tick, Tick):
            collector.add_tick(tick)
        took[stage] += time.perf_counter() - t0
    t0 = time.perf_counter()
    run = collector.finish(notices)
    took[stage] += time.perf_counter() - t0
    t0 = time.perf_counter()
    page = report_text(run, "html")
    took["accounting and the page"] = time.perf_counter() - t0
    return len(run.times), len(run.devices), len(page.encode()), took


def _cpu() -> float:
    """CPU seconds of this process and its finished children."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--chunk-minutes", type=float, default=360.0)
    parser.add_argument("--plain", action="store_true", help="write .jsonl, not .jsonl.gz")
    parser.add_argument("--file", type=Path, help="report this recording instead")
    parser.add_argument("--keep", type=Path, help="write the recording here and keep it")
    parser.add_argument("--processes", type=int, default=workers(), help="as gputui report")
    parser.add_argument("--rejudge", action="store_true", help="as gputui report --rejudge")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        path = args.file
        if path is None:
            name = "run.jsonl" if args.plain else "run.jsonl.gz"
            path = args.keep or Path(work) / name
            t0 = time.perf_counter()
            ticks = int(args.days * 86400)
            write_long(path, args.gpus, int(args.chunk_minutes * 60), ticks, args.plain)
            print(f"wrote {path.name}: {ticks:,} ticks in {time.perf_counter() - t0:.0f} s")
        size = path.stat().st_size
        cpu = _cpu()
        ticks, gpus, page, took = report(path, args.processes, args.rejudge)
        cpu = _cpu() - cpu
    print(f"{path.name}: {ticks:,} ticks of {gpus} GPUs, {size / 1e6:,.0f} MB")
    print(f"{'stage':<26}{'s':>10}{'ms a tick':>12}")
    for stage, seconds in took.items():
        print(f"{stage:<26}{seconds:>10.1f}{seconds / ticks * 1e3:>12.3f}")
    total = sum(took.values())
    print(f"{'all':<26}{total:>10.1f}{total / ticks * 1e3:>12.3f}")
    print(f"CPU time of the report: {cpu:.1f} s (the machine may be shared: wall time is more)")
    print(f"processes: {args.processes}")
    print(f"the page: {page / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
