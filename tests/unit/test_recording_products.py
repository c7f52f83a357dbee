"""What a recording may expand to (issue 52): a 12 KB file made `report` take 1.76 GB and
`replay` 3.17 GB, because a block bounded its ticks, GPUs and processes each and never
their product. A block is now refused past its values (ticks x slots x fields) or its
width (a tick's slots x fields), counted from its shape before anything is allocated; a
journal is held to the same as its ticks are joined; a reading stops, with a notice, where
the blocks it kept reach its budget; and the writers cut their blocks to fit."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gputui.core.config import MAX_BLOCK_TICKS
from gputui.core.manual_clock import ManualClock
from gputui.core.model import SourceInfo
from gputui.core.names import SourceKind
from gputui.exporters.recorder import RecordWriter
from gputui.exporters.report import segments
from gputui.exporters.report.recorded import ONLY
from gputui.exporters.report.segments import judge_recording
from gputui.formats import recording
from gputui.formats.cells import (
    GPU_FIELDS,
    MAX_BLOCK_CELLS,
    MAX_BLOCK_WIDTH,
    PROCESS_FIELDS,
    block_cells,
    cells,
)
from gputui.formats.journal import MAX_JOURNAL_BYTES, MAX_LINE_BYTES, journal_of
from gputui.formats.recording import Header, RecordingError, read_recording, stream_recording
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from tests import block_shapes
from tests.block_shapes import block
from tests.hostile import peak_below


def _report_read(path: Path) -> None:
    """The report's reading of a file (columns, the fields it shows)."""
    for _ in stream_recording(path, [], columns=True, only=ONLY, findings=False):
        pass


READERS: dict[str, Callable[[Path], Any]] = {
    "replay": read_recording,
    "report": _report_read,
    "report (every field)": lambda path: list(stream_recording(path, [], columns=True)),
}

#: (ticks, GPUs, processes, fields a slot sets): the attack's shape and its kin
BOMBS = {
    "3,600 ticks of 1,024 GPUs (the 12 KB file)": (3600, 1024, 0, 1),
    "3,600 ticks of 2,000 processes": (3600, 1, 2000, 2),
    "one tick of 1,024 GPUs and 4,096 processes": (1, 1024, 4096, 2),
    "one tick of 700 GPUs": (1, 700, 0, 1),
    "600 ticks of 64 GPUs, every field": (600, 64, 0, 60),
    "a block just past its values": (MAX_BLOCK_CELLS // cells(1, 10, 0) + 1, 10, 0, 1),
}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("case", list(BOMBS))
def test_a_block_whose_product_is_past_its_bound_is_refused_before_it_is_allocated(
    tmp_path: Path, case: str, reader: str
) -> None:
    path = block_shapes.write(tmp_path / "run.jsonl", [block(*BOMBS[case])])
    assert len(gzip.compress(path.read_bytes())) < 64_000  # a few kilobytes claim it all
    with peak_below(), pytest.raises(RecordingError, match=r"run.jsonl:2: .* values"):
        READERS[reader](path)


@pytest.mark.parametrize("reader", ["replay", "report"])
def test_a_block_at_its_bounds_reads_within_the_memory_bound(tmp_path: Path, reader: str) -> None:
    gpus = (MAX_BLOCK_WIDTH - cells(1, 0, 0)) // GPU_FIELDS
    processes = (MAX_BLOCK_WIDTH - cells(1, 8, 0)) // PROCESS_FIELDS
    shapes = [
        (MAX_BLOCK_CELLS // cells(1, 10, 0), 10, 0, 60),  # every field of 10 GPUs, long
        (1, gpus, 0, 60),  # the widest tick of GPUs
        (MAX_BLOCK_CELLS // MAX_BLOCK_WIDTH, gpus, 0, 60),  # and as many ticks as fit
        (MAX_BLOCK_CELLS // MAX_BLOCK_WIDTH, 8, processes, 60),  # a node of processes
    ]
    for ticks, gpus, processes, fields in shapes:
        assert cells(1, gpus, processes) <= MAX_BLOCK_WIDTH
        assert cells(ticks, gpus, processes) <= MAX_BLOCK_CELLS
        path = block_shapes.write(tmp_path / "run.jsonl", [block(ticks, gpus, processes, fields)])
        with peak_below():
            READERS[reader](path)


def test_many_blocks_each_within_bounds_stop_at_the_readings_budget_with_a_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the budget of a reading (``MAX_READ_CELLS``, 67 million values for a replay;
    here made small), the rest of the file is left out with a notice, as past its ticks."""
    each = block(100, 20, 0, 1)
    size = cells(100, 20, 0)
    blocks = [{**each, "t0": block_shapes.START + 100 * n} for n in range(6)]
    path = block_shapes.write(tmp_path / "run.jsonl", blocks)
    monkeypatch.setattr(recording, "MAX_READ_CELLS", 3 * size)
    back = read_recording(path)
    assert len(back.ticks) == 300
    assert any(f"more than {3 * size:,} values" in n for n in back.notices), back.notices
    monkeypatch.setattr(segments, "MIN_STRETCH_BYTES", 1000)  # side by side, this short
    for processes in (1, 2):  # in stretches, each with its share, or in one go
        run = judge_recording(path, 10**6, processes=processes, max_cells=2 * size)
        assert run is not None and len(run.times) == 200
        assert any(f"more than {2 * size:,} values" in n for n in run.notices), run.notices


def _journal_attack(path: Path, processes: int, ticks: int) -> None:
    """A killed recorder's journal rewritten: its first tick claims ``processes`` process
    slots, then ``ticks`` lines of a few bytes each follow."""
    info = SourceInfo("SIMULATED", SourceKind.SIMULATED)
    clock = ManualClock(block_shapes.START)
    source = SimulatedSource(resolve_scenarios("mix", 2), clock=clock)
    writer = RecordWriter(path, Header(info, source.open(), 1.0), block_ticks=4)
    for _ in range(6):
        writer.write(source.read())
        clock.advance(1.0)
    journal = journal_of(path)
    mark, first, *_ = journal.read_bytes().splitlines(keepends=True)
    tick = json.loads(first)
    tick["shape"]["processes"] = processes
    tick["processes"] = {str(j): {"pid": 5000 + j, "gpu_index": 0} for j in range(processes)}
    time = tick["time"]
    lines = [mark, json.dumps(tick).encode() + b"\n"]
    lines += [b'{"tick":%d,"time":%r}\n' % (k, time + k) for k in range(1, ticks)]
    journal.write_bytes(b"".join(lines))


def test_a_journal_is_joined_only_as_far_as_a_block_may_expand(tmp_path: Path) -> None:
    """A journal's ticks are joined into a block: a first tick of 1,000 processes and
    3,599 lines of a few bytes would have been 3,600 ticks of them. The joining stops at
    the tick that would pass the block's bound, with a notice; the ticks before it read."""
    path = tmp_path / "run.jsonl"
    _journal_attack(path, 1000, 3600)
    with peak_below():
        back = read_recording(path)
    kept = MAX_BLOCK_CELLS // cells(1, 2, 1000)
    assert len(back.ticks) == 4 + kept
    assert len(back.ticks[-1].frame.processes) == 1000
    assert any("a damaged tick" in n and "values" in n for n in back.notices), back.notices


def test_a_journal_tick_wider_than_a_block_may_hold_ends_the_journal_there(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    _journal_attack(path, 4000, 10)
    with peak_below():
        back = read_recording(path)
    assert len(back.ticks) == 4  # the blocks' ticks; the journal's first is too wide
    assert any("journal:2: a damaged tick" in n and "a tick" in n for n in back.notices)


def test_the_recorder_cuts_its_blocks_to_what_a_reader_takes(tmp_path: Path) -> None:
    """40 GPUs for 300 s in one block of --block 300 would be 300 x 2,055 values; the
    writer closes a block before it would pass the bound, and every tick reads back."""
    clock = ManualClock(block_shapes.START)
    source = SimulatedSource(resolve_scenarios("mix", 40), clock=clock)
    info = SourceInfo("SIMULATED", SourceKind.SIMULATED)
    path = tmp_path / "run.jsonl"
    writer = RecordWriter(path, Header(info, source.open(), 1.0), block_ticks=300)
    frames = []
    for _ in range(300):
        frames.append(source.read())
        writer.write(frames[-1])
        clock.advance(1.0)
    writer.close()
    assert block_cells(frames) > MAX_BLOCK_CELLS
    lines = path.read_bytes().splitlines()[1:]
    assert len(lines) > 1
    for line in lines:
        data = json.loads(line)
        assert cells(data["block"], 40, max(c for _, c in data["shape"]["processes"])) <= (
            MAX_BLOCK_CELLS
        )
    assert [t.frame for t in read_recording(path).ticks] == frames


@pytest.mark.parametrize("junk", [b"[]", b"{}", b'""', b"0"])
def test_a_line_of_bare_json_structure_is_refused_before_it_is_parsed(
    tmp_path: Path, junk: bytes
) -> None:
    """A 1 MB line of ``[[],[],...]`` parses into 40 MB of Python objects, a 16 MiB one
    (the line bound) into 600 MB: a line's values are counted in its bytes first."""
    line = b'{"block":1,"t0":1.8e9,"x":[' + b",".join([junk] * 300_000) + b"]}\n"
    path = tmp_path / "run.jsonl"
    path.write_bytes(block_shapes.HEADER + line)
    for reader in READERS.values():
        with peak_below(8 * 1024 * 1024), pytest.raises(RecordingError, match=r":2: .* JSON"):
            reader(path)


#: a tick's line that sets some of itself and then is refused: each is checked whole first
REFUSED_LATE: dict[str, dict[str, Any]] = {
    "wider than a block": {"shape": {"processes": 5000}},
    "a slot past its bound": {"processes": {"0": {"pid": 1000}, "70000": {"pid": 9}}},
    "a field's name too long": {"processes": {"0": {"pid": 1000}, "1": {"x" * 65: 1}}},
    "findings out of order": {"shape": {"processes": 1}, "findings": [[0, []]]},
}


@pytest.mark.parametrize("form", sorted(REFUSED_LATE))
def test_a_journal_tick_refused_leaves_the_ticks_before_it_standing(
    tmp_path: Path, form: str
) -> None:
    """A tick refused after part of it was joined (its shape, a first slot) left that part
    in the block, which was then refused whole: no tick of the journal read. The tick is
    checked whole before any of it is joined; the three before it stand."""
    lines = block_shapes.journal_ticks(6, 2, 2, fields=8)
    tick = {"tick": 3, "time": block_shapes.START + 3, **REFUSED_LATE[form]}
    lines[3] = json.dumps(tick).encode() + b"\n"
    path = block_shapes.write_journaled(tmp_path / "run.jsonl", lines)
    back = read_recording(path)
    assert len(back.ticks) == 3, back.notices
    assert any("journal:5: a damaged tick" in n for n in back.notices), back.notices


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_journal_is_read_a_line_at_a_time_within_the_memory_bound(
    tmp_path: Path, gzipped: bool
) -> None:
    """A journal of 64 MiB (its bound; gzip: 83 KB that inflate to it) was read whole and
    split into lines: 135 MB, twice the file. Its lines are read as they come, a line past
    16 MiB skipped unheld: what it costs is a line, whatever the file holds after."""
    lines = block_shapes.journal_ticks(MAX_BLOCK_TICKS + 1, 1, 0)
    size = len(block_shapes.JOURNALED_HEADER) + sum(map(len, lines)) + 64
    lines.append(b" " * (MAX_JOURNAL_BYTES - size) + b"\n")  # the rest of the bound
    path = block_shapes.write_journaled(tmp_path / "run.jsonl", lines, gzipped)
    with peak_below(32 * 1024 * 1024):
        back = read_recording(path)
    assert len(back.ticks) == MAX_BLOCK_TICKS
    assert any(f"more than {MAX_BLOCK_TICKS:,} ticks" in n for n in back.notices)
    lines[-1] = b"{" * (MAX_LINE_BYTES + 10) + b"\n"  # a line past its bound, then ticks
    path = block_shapes.write_journaled(tmp_path / "run.jsonl", [lines[0], lines[-1], *lines[1:9]])
    with peak_below(32 * 1024 * 1024):
        back = read_recording(path)
    assert len(back.ticks) == 1
    assert any("journal:3: a damaged tick" in n and "16 MiB" in n for n in back.notices)
