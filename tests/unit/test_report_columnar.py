"""A recording's blocks taken in columns (``exporters/report/columnar``) leave the report's
monitor, advisor, run log and columns exactly as taking their frames one by one does: on
every demo scenario, over history rings that wrap, and on blocks that are not plain (a GPU
lost, missing, moved to another slot, an Xid), which go frame by frame."""

from __future__ import annotations

import dataclasses
import json
import random
from array import array
from pathlib import Path
from typing import Any

import pytest

from gputui.core.manual_clock import ManualClock
from gputui.core.model import Frame, GpuSample, HostSample, ProcessSample, SourceInfo, XidEvent
from gputui.core.names import HostMetric, Metric, SourceKind
from gputui.exporters.recorder import RecordWriter
from gputui.exporters.report.columnar import columns_of
from gputui.exporters.report.run import Collector, recording_collector
from gputui.formats.block_writer import block_line
from gputui.formats.blocks import Block, parse_columns
from gputui.formats.recording import Header, Tick, stream_recording
from gputui.sampling.history import History
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from gputui.sources.simulated.scenarios import SCENARIOS

START = 1_800_000_000.0


def _record(path: Path, scenario: str, gpus: int, ticks: int) -> Path:
    clock = ManualClock(START)
    source = SimulatedSource(resolve_scenarios(scenario, gpus), clock=clock)
    header = Header(SourceInfo("SIMULATED", SourceKind.SIMULATED), source.open(), 1.0)
    writer = RecordWriter(path, header)
    for _ in range(ticks):
        writer.write(source.read())
        clock.advance(1.0)
    writer.close()
    return path


def _collect(path: Path, columns: bool, capacity: int | None, record_from: float | None) -> Any:
    stream = stream_recording(path, [], findings=False, columns=columns)
    header = next(stream)
    assert isinstance(header, Header)
    collector = recording_collector(header, path.name, record_from=record_from)
    if capacity is not None:
        collector.monitor.history = History(capacity)
    for item in stream:
        if isinstance(item, Block):
            collector.add_block(item)
        elif isinstance(item, Tick):
            collector.add(item.frame)
    return collector


def _bits(values: Any) -> bytes:
    """A column as bytes: NaN equals NaN, and 0.0 is not -0.0."""
    return array("d", values).tobytes()


def _history(h: History) -> tuple[object, ...]:
    gpus = h.gpu_indices
    return (
        _bits(h.times()),
        gpus,
        [_bits(h.series(g, m)) for g in gpus for m in Metric],
        [h.reasons(g) for g in gpus],
        [_bits(h.host_series(m)) for m in HostMetric],
        [h.last_seen(g) for g in gpus],
        [h.xids(g) for g in gpus],
        h.latest,
    )


def _state(c: Collector) -> tuple[object, ...]:
    m = c.monitor
    advisor: Any = m.advisor
    log = m.runlog
    run = c.finish()
    return (
        _history(m.history),
        advisor.findings,
        advisor.judged_at,
        {i: list(d) for i, d in advisor._driver_samples.items()},
        {p: list(d) for p, d in advisor._process_cpu.items()},
        [(e.finding, e.since, e.until, e.open) for e in log.episodes],
        [dataclasses.astuple(s) for s in log.spans],
        log.dropped,
        _bits(run.times),
        {
            i: ([_bits(v) for v in t.values.values()], list(t.reasons))
            for i, t in run.tracks.items()
        },
        [(e.finding, e.since, e.until) for e in run.episodes],
        [dataclasses.astuple(s) for s in run.spans],
        run.notices,
    )


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_scenarios_blocks_in_columns_leave_what_its_frames_leave(
    tmp_path: Path, scenario: str
) -> None:
    path = _record(tmp_path / "run.jsonl.gz", scenario, 2, 420)
    for capacity in (None, 97):  # the monitor's own rings; rings that wrap mid-block
        columns = _collect(path, True, capacity, None)
        frames = _collect(path, False, capacity, None)
        assert _state(columns) == _state(frames)


def test_a_stretch_that_begins_inside_a_block_is_the_same_in_columns(tmp_path: Path) -> None:
    path = _record(tmp_path / "run.jsonl.gz", "thermal", 2, 300)
    for start in (START + 150.0, START + 155.5, START + 120.0):  # in a block, between, at one
        assert _state(_collect(path, True, None, start)) == _state(
            _collect(path, False, None, start)
        )


def _frames(rng: random.Random, ticks: int) -> list[Frame]:
    """Frames with readings missing (None), a host sometimes absent, two GPUs and their
    processes: values a history must keep exactly (float32 rounding, NaN, 0 and -0)."""
    out = []
    for k in range(ticks):
        gpus = tuple(
            GpuSample(
                index,
                util_gpu=rng.choice([None, 0.0, -0.0, 37.3, 100.0, rng.uniform(0, 100)]),
                temp_c=rng.choice([None, rng.uniform(20, 95)]),
                mem_used=rng.choice([None, rng.randrange(0, 80 * 2**30)]),
                mem_total=80 * 2**30,
                clock_reasons=rng.choice([None, 0, 4, 32 | 64]),
                util_samples=tuple(rng.uniform(0, 100) for _ in range(rng.randrange(3))),
            )
            for index in (0, 3)
        )
        host = None if rng.random() < 0.2 else HostSample(cpu_percent=rng.uniform(0, 100))
        procs = (ProcessSample(100 + k % 3, 0, name="train", cpu_percent=rng.uniform(0, 200)),)
        out.append(Frame(START + k, gpus, host, procs))
    return out


def _block(frames: list[Frame]) -> Block:
    line = block_line([(f, ()) for f in frames], keep_secrets=True)
    return parse_columns(json.loads(line), findings=False)[0]


def test_history_filled_in_columns_equals_one_frame_at_a_time_over_wrapping_rings() -> None:
    rng = random.Random(29)
    for capacity in (1, 7, 64, 200):
        one, bulk = History(capacity), History(capacity)
        frames = _frames(rng, 150)
        for start in range(0, len(frames), 60):
            chunk = frames[start : start + 60]
            block = _block(chunk)
            columns = columns_of(block)
            assert columns is not None
            k = 0
            while k < len(chunk):  # uneven runs, as judgements cut them
                end = min(len(chunk), k + rng.randrange(1, 9))
                for frame in chunk[k:end]:
                    one.add(frame)
                bulk.add_columns(block.times[k:end], columns.gpus, columns.host, chunk[end - 1], k)
                assert _history(bulk) == _history(one)
                k = end


def test_blocks_that_are_not_plain_go_frame_by_frame_and_say_the_same(tmp_path: Path) -> None:
    frames = _frames(random.Random(3), 60)
    lost = [dataclasses.replace(f, gpus=(f.gpus[0], GpuSample(3, lost=True))) for f in frames]
    missing = [
        dataclasses.replace(f, gpus=f.gpus[:1]) if k % 7 == 3 else f for k, f in enumerate(frames)
    ]
    moved = [
        dataclasses.replace(f, gpus=f.gpus[::-1]) if k > 30 else f for k, f in enumerate(frames)
    ]
    xid = [
        dataclasses.replace(
            f, gpus=(dataclasses.replace(f.gpus[0], xid_events=(XidEvent(79, f.time),)), f.gpus[1])
        )
        if k == 20
        else f
        for k, f in enumerate(frames)
    ]
    for odd in (lost, missing, moved, xid):
        assert columns_of(_block(odd)) is None
    assert columns_of(_block(frames)) is not None
    devices = SimulatedSource(resolve_scenarios("thermal", 4), clock=ManualClock(START)).open()
    header = Header(SourceInfo("SIMULATED", SourceKind.SIMULATED), devices[:1] + devices[3:], 1.0)
    for run in (frames, lost, missing, moved, xid):
        by_block, by_frame = recording_collector(header, "x"), recording_collector(header, "x")
        for start in range(0, 60, 20):
            by_block.add_block(_block(run[start : start + 20]))
        for frame in _block(run).pairs():
            by_frame.add(frame[0])
        assert _state(by_block) == _state(by_frame)
