"""Record and replay: the same frames and findings back; damaged files named by line."""

from __future__ import annotations

import gzip
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gputui.advisor import make_advisor, make_monitor
from gputui.cli import EXIT_NO_SOURCE, main
from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import SourceInfo
from gputui.core.names import SourceKind
from gputui.exporters.recorder import RecordWriter, rotated_name
from gputui.formats.block_writer import findings_shown
from gputui.formats.recording import Header, Recording, RecordingError, read_recording
from gputui.launch import make_replay_app
from gputui.sampling.history import History
from gputui.sampling.monitor import Monitor
from gputui.sampling.runlog import RunLog
from gputui.sources.recorded import ReplayEnded, ReplaySource
from gputui.sources.simulated import SimulatedSource, resolve_scenarios


def record_demo(
    path: Path, seconds: int = 90, scenario: str = "mix", gpus: int = 4, version: int = 3
) -> Monitor:
    clock = ManualClock(1_800_000_000.0)
    source = SimulatedSource(resolve_scenarios(scenario, gpus), clock=clock)
    devices = source.open()
    monitor = make_monitor(
        devices, Config(), SourceInfo("SIMULATED", SourceKind.SIMULATED, scenario)
    )
    writer = RecordWriter(path, Header(monitor.source, devices, 1.0), version=version)
    for _ in range(seconds):
        frame = source.read()
        writer.write(frame, monitor.ingest(frame))
        clock.advance(1.0)
    writer.close()
    return monitor


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_round_trip_gives_the_same_frames_and_findings(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    live = record_demo(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    recording = read_recording(path)
    assert recording.notices == ()
    assert recording.header.devices == live.devices
    assert len(recording.ticks) == 90
    assert recording.ticks[-1].frame == live.latest
    # the advisor on the replayed frames finds what it found live, tick by tick: which
    # findings stood (exact at every tick; their words where they change and at the end of
    # each block), and the episodes they make are the live ones to the last word
    advisor = make_advisor(recording.header.devices)
    history = History(3600)
    log = RunLog(None)
    for k, tick in enumerate(recording.ticks):
        history.add(tick.frame)
        judged = advisor.update(history)
        assert findings_shown(judged) == findings_shown(tick.findings)
        if k % 60 == 59 or k == len(recording.ticks) - 1:
            assert judged == tick.findings
        log.add(tick.frame, tick.findings)
    log.finish()
    live.runlog.finish()
    assert log.episodes == live.runlog.episodes
    assert {f.rule for f in recording.ticks[-1].findings} >= {"thermal-throttle", "vram-pressure"}


def replay_of(recording: Recording) -> ReplaySource:
    frames = [tick.frame for tick in recording.ticks]
    return ReplaySource(frames, recording.header.devices, recording.header.interval_s)


def test_replay_source_reads_in_order_and_seeks(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_demo(path, seconds=20)
    source = replay_of(read_recording(path))
    first = source.read()
    assert source.read().time == first.time + 1
    shown = source.seek(first.time + 10)  # up to and with the frame of that moment
    assert len(shown) == 11 and shown[-1].time == first.time + 10
    assert source.read().time == first.time + 11
    source.seek(first.time + 100)
    with pytest.raises(ReplayEnded):
        source.read()


def test_truncated_last_line_is_skipped_with_a_notice(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_demo(path, seconds=5, version=2)  # one tick a line (version 3: test_recording_blocks)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])  # cut inside the last line
    recording = read_recording(path)
    assert len(recording.ticks) == 4
    assert recording.notices and ":6:" in recording.notices[0]


def test_a_gzip_recording_cut_short_says_so(tmp_path: Path) -> None:
    """A copy cut in transit (or a recorder killed) ends the compressed stream early: the
    ticks before the cut are read, and the reader says where it stopped, as it does for a
    plain file's cut last line, instead of a shorter run with no word."""
    path = tmp_path / "run.jsonl.gz"
    record_demo(path, seconds=20, version=2)
    data = path.read_bytes()
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    whole, short = read_recording(path), read_recording(cut)
    assert not whole.notices and 0 < len(short.ticks) < len(whole.ticks)
    assert any("the compressed stream ends early" in n for n in short.notices), short.notices


def test_damaged_line_in_the_middle_is_named(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_demo(path, seconds=5, version=2)
    lines = path.read_bytes().split(b"\n")
    lines[3] = b"{garbage"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(RecordingError, match=r"run.jsonl:4: damaged line"):
        read_recording(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty"),
        (b"\x00\x01\x02\xff\xfe binary", ":1: not a gputui recording"),
        (b'{"hello": "world"}\n', ":1: not a gputui recording"),
        (b'{"schema": "gputui.record", "version": 7}\n', "version 7"),
    ],
    ids=["empty", "binary", "foreign", "wrong-version"],
)
def test_unreadable_files_give_a_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(RecordingError, match=message):
        read_recording(path)


def test_replay_command_refuses_a_foreign_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    assert main(["replay", str(path)]) == EXIT_NO_SOURCE
    assert "notes.txt:1: not a gputui recording" in capsys.readouterr().err


def test_rotation_keeps_the_newest_files(tmp_path: Path) -> None:
    clock = ManualClock(1e9)
    source = SimulatedSource(resolve_scenarios("healthy", 2), clock=clock)
    devices = source.open()
    path = tmp_path / "run.jsonl"
    writer = RecordWriter(
        path,
        Header(SourceInfo("SIMULATED", SourceKind.SIMULATED), devices, 1.0),
        max_bytes=20_000,
        keep=2,
    )
    for _ in range(60):
        writer.write(source.read())
        clock.advance(1.0)
    writer.close()
    assert writer.ticks == 60  # across the rotations, the oldest files gone included
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["run.1.jsonl", "run.2.jsonl", "run.jsonl"]
    for p in tmp_path.iterdir():  # every file stands alone, with its own header
        recording = read_recording(p)
        # the current file may have just started: only the rotated ones must hold ticks
        assert recording.ticks or p.name == "run.jsonl"
    assert rotated_name(Path("a/run.jsonl.gz"), 3) == Path("a/run.3.jsonl.gz")


def test_recorder_killed_mid_run_leaves_a_readable_file(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl.gz"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gputui",
            "record",
            "--demo",
            "--gpus",
            "2",
            "--interval",
            "0.25",
            "-o",
            str(path),
        ],
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            time.sleep(0.25)
            if path.exists() and path.stat().st_size > 3000:
                break
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    recording = read_recording(path)
    assert len(recording.ticks) >= 2
    with gzip.open(path, "rb") as handle:  # plain gzip readers get the same lines
        try:
            first = handle.readline()
        except EOFError:
            pytest.fail("the first line must be readable")
    assert json.loads(first)["schema"] == "gputui.record"


async def test_replay_in_the_app_shows_the_recorded_findings(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    live = record_demo(path, seconds=120)
    app = make_replay_app(read_recording(path), speed=20)
    assert app.replay is not None
    async with app.run_test(size=(120, 40)) as pilot:
        while not app.replay.at_end:
            await pilot.pause(0.1)
        await pilot.pause(0.3)
        assert app.paused  # the end of the recording pauses the replay
        assert {f.key for f in app.monitor.findings} == {f.key for f in live.findings}
        await pilot.press("left_square_bracket")  # back one minute
        await pilot.pause()
        latest = app.monitor.latest
        assert latest is not None and latest.time == pytest.approx(live.latest.time - 60, abs=1)  # type: ignore[union-attr]
        before = latest.time
        await pilot.press("full_stop")
        assert app.monitor.latest.time == before + 1  # type: ignore[union-attr]
        await pilot.press("greater_than_sign")
        assert app.replay.speed == 40.0


def test_start_as_seconds_or_clock_time() -> None:
    from gputui.cli.commands import _start_offset

    first = time.mktime((2026, 12, 2, 14, 0, 0, 0, 0, -1))
    last = first + 3600
    assert _start_offset("90", first, last) == 90
    assert _start_offset("5m", first, last) == 300
    assert _start_offset("14:05", first, last) == 300
    assert _start_offset("14:05:30", first, last) == 330
    assert _start_offset("13:00", first, last) == 23 * 3600  # before the start: the next day
    # a negative one counts back from the last frame, as report --since=-8h from now
    assert _start_offset("-5", first, last) == 3595
    assert _start_offset("-5m", first, last) == 3300
    assert _start_offset("-0", first, last) == 3600
    assert _start_offset("-2h", first, last) == -3600  # before the first frame
    for wrong in ("25:00", "-14:05", "5x", "-inf"):
        with pytest.raises(ValueError):
            _start_offset(wrong, first, last)


def _replayed(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> tuple[int, dict[str, object]]:
    """``gputui replay`` as on a terminal, the app it would run taken instead of run."""
    import gputui.launch

    made: dict[str, object] = {}

    def make(recording: Recording, **options: object) -> str:
        made.update(options, recording=recording)
        return "app"

    monkeypatch.setattr("gputui.cli.commands.terminal_missing", lambda: None)
    monkeypatch.setattr(gputui.launch, "make_replay_app", make)
    monkeypatch.setattr(gputui.launch, "run_owned", lambda app: 0)
    return main(["replay", *argv]), made


@pytest.mark.parametrize(
    ("start", "offset"),
    [(["--start", "-5"], 84.0), (["--start=-1m"], 29.0), (["--start=-0"], 89.0)],
)
def test_a_negative_start_counts_back_from_the_end_of_the_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: list[str], offset: float
) -> None:
    path = tmp_path / "run.jsonl"
    record_demo(path)  # 90 frames, one a second: its last 89 s after its first
    status, made = _replayed(monkeypatch, [str(path), *start])
    assert status == 0 and made["start_s"] == offset


def test_a_start_back_past_the_first_frame_says_so_and_starts_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.jsonl"
    record_demo(path)
    status, made = _replayed(monkeypatch, [str(path), "--start=-10m"])
    said = "--start -10m reaches back past the recording's first frame (it is 1 min 29 s long)"
    assert status == 0 and made["start_s"] == 0.0
    assert said in capsys.readouterr().err
    assert any(said in n for n in made["notices"])  # type: ignore[attr-defined]
