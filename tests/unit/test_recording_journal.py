"""The journal beside a recording being written: every tick durable as it is taken.

The writer's every write is watched (``AppendFile``), and the files are rebuilt as they
stood after each write, and halfway through it (a write a crash cut short): at every such
moment the reader takes every tick written whole, the fold a restarted recorder makes
leaves a file that reads the same by itself, and the syncs keep the promise of
``--sync``. A full disk or a file system turned read-only mid-write leaves no half line,
and a hostile journal is read as a hostile block is.
"""

from __future__ import annotations

import dataclasses
import errno
import gzip
import json
import math
import os
import shutil
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gputui.advisor import make_monitor
from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import Finding, Frame, ProcessSample, SourceInfo
from gputui.core.names import SourceKind
from gputui.core.sanitize import clean
from gputui.exporters.durable import AppendFile, JournalFile
from gputui.exporters.recorder import RecordWriter
from gputui.exporters.recovery import fold_journal
from gputui.formats.block_writer import block_line, findings_shown
from gputui.formats.blocks import parse_block
from gputui.formats.journal import TickEncoder, journal_of, read_journal
from gputui.formats.recording import Header, RecordingError, read_recording
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from tests.hostile import FORBIDDEN, SECRET_COMMAND, SECRET_VALUES

START = 1_800_000_000.0
INFO = SourceInfo("SIMULATED", SourceKind.SIMULATED, "mix")
Tick = tuple[Frame, tuple[Finding, ...]]


def simulate(seconds: int, gpus: int, start_s: int = 0) -> list[Tick]:
    """The demo mix's ticks with the findings its live monitor gave, from ``start_s`` on."""
    clock = ManualClock(START)
    source = SimulatedSource(resolve_scenarios("mix", gpus), clock=clock)
    monitor = make_monitor(source.open(), Config(), INFO)
    ticks = []
    for _ in range(start_s + seconds):
        frame = source.read()
        ticks.append((frame, tuple(monitor.ingest(frame))))
        clock.advance(1.0)
    return ticks[start_s:]


TICKS = simulate(14, gpus=2, start_s=300)  # findings stand, and start and end within
DEVICES = SimulatedSource(resolve_scenarios("mix", 2), clock=ManualClock(START)).open()


def header() -> Header:
    return Header(INFO, DEVICES, 1.0, live_findings=True)


def shown(ticks: Any) -> list[Any]:
    return [findings_shown(found) for _, found in ticks]


# -- the journal's lines ----------------------------------------------------------------


def varied(ticks: list[Tick]) -> list[Tick]:
    """Ticks whose GPUs, host and processes come and go, with a reading no GPU gives."""
    out = []
    for k, (frame, found) in enumerate(ticks):
        gpus = frame.gpus[: 1 + k % 2]
        if k == 3:
            gpus = (dataclasses.replace(gpus[0], power_w=float("nan")), *gpus[1:])
        out.append(
            (
                dataclasses.replace(
                    frame,
                    gpus=gpus if k != 5 else (),
                    host=None if k in (2, 6) else frame.host,
                    processes=frame.processes[: (k * 3) % 4],
                ),
                found,
            )
        )
    return out


@pytest.mark.parametrize("kind", ["demo", "varied"])
def test_a_journal_reads_back_what_the_block_line_of_its_ticks_reads(
    tmp_path: Path, kind: str
) -> None:
    ticks = TICKS if kind == "demo" else varied(TICKS)
    encoder = TickEncoder()
    lines = [encoder.line(frame, found) for frame, found in ticks]
    if kind == "demo":  # a tick holds what changed, the first all
        assert len(lines[1]) < len(lines[0]) / 2
    whole, _ = parse_block(json.loads(block_line(ticks, keep_secrets=False)))
    journaled = joined(lines, tmp_path)
    assert [f for f, _ in journaled] == [f for f, _ in whole]
    assert shown(journaled) == shown(whole) == shown(ticks)
    assert journaled[-1][0].gpus[0].power_w == whole[-1][0].gpus[0].power_w


def joined(lines: list[bytes], directory: Path) -> list[Tick]:
    """Journal lines (after a mark) read back as the reader reads them."""
    recording = directory / "run.jsonl"
    recording.write_bytes(b"")
    journal_of(recording).write_bytes(b'{"journal":"00000000","at":0}\n' + b"".join(lines))
    journal = read_journal(recording, "00000000", [])
    assert journal is not None and journal.block is not None
    pairs, _ = parse_block(journal.block)
    return pairs


def test_the_journal_masks_command_lines_as_a_block_does(tmp_path: Path) -> None:
    process = ProcessSample(pid=7, gpu_index=0, name="x", command=SECRET_COMMAND)
    ticks = [(dataclasses.replace(f, processes=(process,)), found) for f, found in TICKS[:3]]
    writer = RecordWriter(tmp_path / "run.jsonl", header())
    for frame, found in ticks:
        writer.write(frame, found)
    text = journal_of(tmp_path / "run.jsonl").read_text()
    assert "python train.py" in text and not any(s in text for s in SECRET_VALUES)
    back = read_recording(tmp_path / "run.jsonl").ticks
    assert back[0].frame.processes[0].command != SECRET_COMMAND
    writer.close()


# -- every moment of a recording ------------------------------------------------------


@dataclasses.dataclass
class Event:
    """One thing the writer did to a file, or ``tick`` done: ``write`` returned."""

    kind: str  # append, truncate, sync, unlink, tick
    path: str = ""
    at: int = 0
    data: bytes = b""


def watched(monkeypatch: pytest.MonkeyPatch) -> list[Event]:
    """Every append, cut, sync and removal the writer makes, in order."""
    log: list[Event] = []
    append, truncate, sync = AppendFile.append, AppendFile.truncate, AppendFile.sync
    remove = JournalFile.remove

    def on_append(self: AppendFile, data: bytes) -> None:
        log.append(Event("append", str(self.path), self.size, data))
        append(self, data)

    def on_truncate(self: AppendFile, size: int) -> None:
        log.append(Event("truncate", str(self.path), size))
        truncate(self, size)

    def on_sync(self: AppendFile) -> None:
        log.append(Event("sync", str(self.path)))
        sync(self)

    def on_remove(self: JournalFile) -> None:
        log.append(Event("unlink", str(self.path)))
        remove(self)

    monkeypatch.setattr(AppendFile, "append", on_append)
    monkeypatch.setattr(AppendFile, "truncate", on_truncate)
    monkeypatch.setattr(AppendFile, "sync", on_sync)
    monkeypatch.setattr(JournalFile, "remove", on_remove)
    return log


def record(path: Path, ticks: list[Tick], log: list[Event], **options: Any) -> None:
    writer = RecordWriter(path, header(), block_ticks=4, **options)
    for frame, found in ticks:
        writer.write(frame, found)
        log.append(Event("tick"))
    writer.close()


def moments(log: list[Event]) -> Iterator[tuple[int, dict[str, bytes]]]:
    """The files as they stood after each write and partway through it, with how many
    ticks were written whole by then."""
    files: dict[str, bytearray] = {}
    done = 0
    for event in log:
        if event.kind == "tick":
            done += 1
            continue
        if event.kind == "append":
            body = files.setdefault(event.path, bytearray())
            assert len(body) == event.at
            for cut in sorted({0, 1, len(event.data) // 2, len(event.data) - 1}):
                if 0 <= cut < len(event.data):
                    yield done, {**_frozen(files), event.path: bytes(body + event.data[:cut])}
            body += event.data
        elif event.kind == "truncate":
            del files[event.path][event.at :]
        elif event.kind == "unlink":
            del files[event.path]
        yield done, _frozen(files)


def _frozen(files: dict[str, bytearray]) -> dict[str, bytes]:
    return {path: bytes(body) for path, body in files.items()}


def laid_out(state: dict[str, bytes], where: Path) -> Path:
    """``state``'s files, in a directory of their own: the recording's path."""
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir()
    for path, body in state.items():
        (where / Path(path).name).write_bytes(body)
        os.chmod(where / Path(path).name, 0o600)
    return where / next(Path(p).name for p in state if not p.endswith(".journal"))


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_at_every_moment_every_tick_written_whole_reads_back_and_folds_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    log = watched(monkeypatch)
    record(tmp_path / name, TICKS, log)
    monkeypatch.undo()
    count = 0
    for done, state in moments(log):
        count += 1
        path = laid_out(state, tmp_path / "moment")
        try:
            back = read_recording(path)
        except RecordingError:
            assert done == 0  # killed before its header was whole: no tick lost
            continue
        assert done <= len(back.ticks) <= done + 1, (done, back.notices)
        assert [t.frame for t in back.ticks] == [f for f, _ in TICKS[: len(back.ticks)]]
        assert shown((t.frame, t.findings) for t in back.ticks) == shown(TICKS[: len(back.ticks)])
        assert not any("damaged" in n for n in back.notices), back.notices
        folded = fold_journal(path)  # what a restarted recorder does first
        assert not journal_of(path).exists()
        alone = read_recording(path)
        assert [t.frame for t in alone.ticks] == [t.frame for t in back.ticks]
        if name.endswith(".gz") and any("taken from its journal" in n for n in folded):
            with gzip.open(path) as whole:  # a whole gzip member: its end and CRC read
                assert whole.read().count(b"\n") >= 2
    assert count > 4 * len(TICKS)


@pytest.mark.parametrize("sync_s", [0.0, 5.0])
def test_no_more_than_sync_seconds_of_ticks_are_ever_unsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sync_s: float
) -> None:
    """A power cut loses what was not synced: at most ``--sync`` seconds of ticks; and a
    block is written only once the journal holding its ticks is on the disk, and the
    journal starts again only once the block is."""
    log = watched(monkeypatch)
    record(tmp_path / "run.jsonl", TICKS, log, sync_s=sync_s)
    written = synced = -1  # the last tick written whole, the last one synced
    journaled = False  # the tick being written is in the journal
    order = []
    for event in log:
        if event.kind == "tick":
            written += 1
            journaled = False
            assert synced >= 0 and TICKS[written][0].time - TICKS[synced][0].time <= sync_s
            continue
        if event.kind == "append" and event.data.startswith(b'{"tick"'):
            journaled = True
        elif event.kind == "sync":
            synced = written + 1 if journaled else synced
        block = event.data.startswith(b'{"block"')
        order.append((event.kind, "block" if block else Path(event.path).suffix))
    blocks = [n for n, e in enumerate(order) if e == ("append", "block")]
    assert len(blocks) == 4
    for n in blocks:
        assert order[n - 1] == ("sync", ".journal")  # the journal, before the block
    for n, done in enumerate(order):
        if done == ("truncate", ".journal"):
            assert order[n - 1] == ("sync", ".jsonl")  # the block, before the journal restarts


# -- a full disk, a read-only file system ---------------------------------------------


def failing(monkeypatch: pytest.MonkeyPatch, target: str, after: float, code: int) -> list[float]:
    """``os.pwrite`` to ``target`` (a file name's end) writes half of what it is given and
    fails with ``code`` once ``after`` bytes went to it; the bytes sent, in a list."""
    pwrite = os.pwrite
    sent = [0.0]

    def limited(fd: int, data: Any, offset: int) -> int:
        if not os.readlink(f"/proc/self/fd/{fd}").endswith(target):
            return pwrite(fd, data, offset)
        if sent[0] + len(data) <= after:
            sent[0] += len(data)
            return pwrite(fd, data, offset)
        if sent[0] < after:  # a write that runs into the end of the room: half of it
            sent[0] = after
            return pwrite(fd, bytes(data)[: len(data) // 2], offset)
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "pwrite", limited)
    return sent


@pytest.mark.parametrize(
    ("name", "target", "code"),
    [
        ("run.jsonl", ".journal", errno.ENOSPC),
        ("run.jsonl.gz", ".journal", errno.ENOSPC),
        ("run.jsonl", "run.jsonl", errno.EROFS),
        ("run.jsonl.gz", "run.jsonl.gz", errno.ENOSPC),
    ],
)
def test_a_write_that_fails_leaves_every_tick_before_it_and_no_half_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, target: str, code: int
) -> None:
    path = tmp_path / name
    whole = failing(monkeypatch, target, math.inf, code)
    record(tmp_path / f"whole-{name}", TICKS, [])
    failing(monkeypatch, target, whole[0] * 0.6, code)  # the room runs out past half the run
    writer = RecordWriter(path, header(), block_ticks=4)
    with pytest.raises(OSError) as raised:
        for frame, found in TICKS:
            writer.write(frame, found)
    assert raised.value.errno == code and raised.value.filename.endswith(target)
    writer.close()  # writes nothing more: no gzip end after a cut stream
    monkeypatch.undo()
    with pytest.raises(ValueError, match="stopped"):
        writer.write(*TICKS[-1])
    back = read_recording(path)
    assert back.ticks and back.ticks[-1].frame.time == writer.held_until
    assert [t.frame for t in back.ticks] == [f for f, _ in TICKS[: len(back.ticks)]]
    assert not any("cut short" in n or "damaged" in n for n in back.notices), back.notices
    journal = journal_of(path).read_bytes()
    if name.endswith(".gz"):  # a gzip recording's journal is a gzip stream, flushed whole
        journal = zlib.decompressobj(wbits=31).decompress(journal)
    assert journal.endswith(b"\n")


# -- hostile and foreign journals ------------------------------------------------------


def killed(path: Path, ticks: int = 6) -> RecordWriter:
    """A recording whose writer stops mid-block, as a killed one does."""
    writer = RecordWriter(path, header(), block_ticks=4)
    for frame, found in TICKS[:ticks]:
        writer.write(frame, found)
    return writer


def rewritten(path: Path, change: Callable[[list[bytes]], list[bytes]]) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(change(lines)))


def test_a_journal_cut_inside_its_last_tick_says_so_and_keeps_the_ticks_before(
    tmp_path: Path,
) -> None:
    killed(tmp_path / "run.jsonl")
    rewritten(journal_of(tmp_path / "run.jsonl"), lambda lines: [*lines[:-1], lines[-1][:50]])
    back = read_recording(tmp_path / "run.jsonl")
    assert len(back.ticks) == 5
    assert any("run.jsonl.journal:3: its last tick, after the tick of" in n for n in back.notices)


def test_a_damaged_tick_ends_the_journal_there_with_a_notice(tmp_path: Path) -> None:
    killed(tmp_path / "run.jsonl", ticks=7)
    rewritten(journal_of(tmp_path / "run.jsonl"), lambda ls: [*ls[:2], b"{garbage\n", *ls[3:]])
    back = read_recording(tmp_path / "run.jsonl")
    assert len(back.ticks) == 5
    assert any("journal:3: a damaged tick" in n for n in back.notices), back.notices


def test_a_journal_of_another_recording_a_link_or_a_strangers_is_not_read(
    tmp_path: Path,
) -> None:
    killed(tmp_path / "run.jsonl")
    journal = journal_of(tmp_path / "run.jsonl")
    other = tmp_path / "other.jsonl"
    killed(other)
    shutil.copy(journal_of(other), journal)  # another run's, in the place of this one's
    assert len(read_recording(tmp_path / "run.jsonl").ticks) == 4
    journal.unlink()
    journal.symlink_to(journal_of(other))
    back = read_recording(tmp_path / "run.jsonl")
    assert len(back.ticks) == 4 and any("not a plain file" in n for n in back.notices)


def test_a_journals_texts_are_cleaned_as_a_blocks_are(tmp_path: Path) -> None:
    killed(tmp_path / "run.jsonl")

    def hostile(lines: list[bytes]) -> list[bytes]:
        tick = json.loads(lines[1])
        tick["gpus"]["0"]["fabric_state"] = "a\x1b[31mred\u202e"
        return [lines[0], json.dumps(tick).encode() + b"\n", *lines[2:]]

    rewritten(journal_of(tmp_path / "run.jsonl"), hostile)
    state = read_recording(tmp_path / "run.jsonl").ticks[4].frame.gpus[0].fabric_state
    assert state == clean("a\x1b[31mred\u202e") and not any(c in state for c in FORBIDDEN)


def test_a_journal_begun_past_what_was_read_is_left_for_a_later_reading(
    tmp_path: Path,
) -> None:
    killed(tmp_path / "run.jsonl")

    def later(lines: list[bytes]) -> list[bytes]:
        mark = json.loads(lines[0])
        mark["at"] += 10_000  # a block written after the reader read the file
        return [json.dumps(mark).encode() + b"\n", *lines[1:]]

    rewritten(journal_of(tmp_path / "run.jsonl"), later)
    back = read_recording(tmp_path / "run.jsonl")
    assert len(back.ticks) == 4 and any("written to while" in n for n in back.notices)


def test_an_exception_a_signal_raises_mid_write_leaves_no_half_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second Ctrl+C raises in the middle of a write: it is cut off again, the writer
    stops (a gzip stream past a lost line cannot go on), the journal keeps every tick."""
    path = tmp_path / "run.jsonl.gz"
    writer = RecordWriter(path, header(), block_ticks=4)
    for frame, found in TICKS[:6]:
        writer.write(frame, found)
    pwrite = os.pwrite

    def interrupted(fd: int, data: Any, offset: int) -> int:
        pwrite(fd, bytes(data)[: len(data) // 2], offset)
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "pwrite", interrupted)
    with pytest.raises(KeyboardInterrupt):
        writer.write(*TICKS[6])
    monkeypatch.undo()
    assert writer.failed
    writer.close()
    back = read_recording(path)
    assert [t.frame for t in back.ticks] == [f for f, _ in TICKS[:6]]
    assert not any("cut short" in n or "damaged" in n for n in back.notices)
