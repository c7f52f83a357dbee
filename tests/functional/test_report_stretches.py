"""A long recording's report judged in stretches side by side (``exporters/report/
segments``) says exactly what it says judged in one go: the same columns, the same finding
episodes (those that flap and those that reach back included) and process spans, the
same shares of time."""

from __future__ import annotations

import gzip
import json
from itertools import pairwise
from pathlib import Path

import pytest

from gputui import cli
from gputui.core.manual_clock import ManualClock
from gputui.core.model import SourceInfo
from gputui.core.names import SourceKind
from gputui.exporters.recorder import RecordWriter
from gputui.exporters.report import account, segments
from gputui.exporters.report.run import Run
from gputui.formats.recording import Header, Share, stream_recording, stream_size

START = 1_800_000_000.0
HOURS = 3


@pytest.fixture(scope="module")
def long_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three hours of a starved GPU and a thermal one, 1 s ticks: findings that hold
    for hours, that come and go, and that say their condition began far back."""
    from gputui.sources.simulated import SimulatedSource

    path = tmp_path_factory.mktemp("long") / "run.jsonl.gz"
    clock = ManualClock(START)
    source = SimulatedSource(("starved", "thermal"), clock=clock)
    devices = source.open()
    writer = RecordWriter(path, Header(SourceInfo("SIMULATED", SourceKind.SIMULATED), devices, 1.0))
    for _ in range(HOURS * 3600):
        writer.write(source.read())
        clock.advance(1.0)
    writer.close()
    return path


def _lines(path: Path) -> list[bytes]:
    """A gzip recording's lines, to damage a copy of."""
    with gzip.open(path) as f:
        return f.read().split(b"\n")


def _border(path: Path, share: Share) -> float:
    """When a share begins, as its reader finds it."""
    from gputui.formats.recording import Border

    stream = stream_recording(path, [], share=share, columns=True)
    return next(item.time for item in stream if isinstance(item, Border))


def _story(run: Run) -> tuple[object, ...]:
    episodes = sorted((e.key[0].value, e.key[1], e.since, e.until, e.open) for e in run.episodes)
    spans = sorted((s.gpu, s.pid, s.name, s.start, s.end) for s in run.spans)
    return (list(run.times), episodes, spans, run.notices)


def test_stretches_judged_side_by_side_tell_the_story_of_the_run_judged_in_one_go(
    long_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segments, "MIN_STRETCH_BYTES", stream_size(long_run) // 3)
    stretches = segments.plan(long_run, 2)
    # the second stretch starts well past a warm-up's length: it does not read the first
    assert len(stretches) == 2 and _border(long_run, stretches[1].share) - START > segments.WARMUP_S
    whole = segments.judge_recording(long_run, 10**6, processes=1)
    split = segments.judge_recording(long_run, 10**6, processes=2)
    assert whole is not None and split is not None
    assert _story(split) == _story(whole)
    assert len(whole.episodes) >= 4  # not a story without findings
    for index, track in whole.tracks.items():
        for metric, column in track.values.items():
            assert list(split.tracks[index].values[metric]) == list(column)
        assert list(split.tracks[index].reasons) == list(track.reasons)
    a, b = account(whole), account(split)
    assert a == b


def test_a_short_run_an_older_version_or_one_process_is_judged_in_one_go(
    long_run: Path, tmp_path: Path
) -> None:
    assert len(segments.plan(long_run, 2)) == 1  # three hours of 2 GPUs: too short to cut
    assert len(segments.plan(long_run, 1)) == 1
    old = tmp_path / "v2.jsonl"
    old.write_text(
        json.dumps(
            {
                "schema": "gputui.record",
                "version": 2,
                "source": {"label": "x", "kind": "simulated"},
                "devices": [],
                "interval_s": 1.0,
            }
        )
        + "\n"
    )
    assert len(segments.plan(old, 4)) == 1


def test_a_damaged_block_in_a_later_stretch_fails_the_report_naming_its_line(
    long_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = _lines(long_run)
    damaged = len(lines) - 20  # in the second stretch
    lines[damaged] = lines[damaged].replace(b'"data":"', b'"data":"!', 1)
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n".join(lines))
    err = _report_fails_in_stretches(path, long_run, monkeypatch, capsys)
    assert f"run.jsonl:{damaged + 1}: not a block of ticks" in err


def _report_fails_in_stretches(
    path: Path, long_run: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    """What ``gputui report`` of a damaged copy of the long run, cut in two, says."""
    monkeypatch.setattr(segments, "MIN_STRETCH_BYTES", stream_size(long_run) // 3)
    assert len(segments.plan(path, 2)) == 2
    monkeypatch.setattr(segments, "workers", lambda: 2)
    assert cli.main(["report", str(path), "-o", str(path.with_suffix(".html"))]) == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_stretches_that_read_more_than_a_report_reads_give_way_to_one_reading(
    long_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a reading from the start knows where a report stops (``max_ticks``): the
    stretches, each short of it, read more in all, and the file is read again in one go."""
    monkeypatch.setattr(segments, "MIN_STRETCH_BYTES", stream_size(long_run) // 3)
    cap = HOURS * 3600 - 600
    whole = segments.judge_recording(long_run, cap, processes=1)
    split = segments.judge_recording(long_run, cap, processes=2)
    assert whole is not None and split is not None
    assert len(whole.times) == cap and any("more than" in n for n in whole.notices)
    assert _story(split) == _story(whole)


def test_a_line_no_block_before_a_later_stretch_is_named_by_the_reading_in_one_go(
    long_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = _lines(long_run)
    lines[5] = b'{"frame": "not a block"}'  # in the first stretch, passed over by the second
    path = tmp_path / "run.jsonl.gz"
    path.write_bytes(gzip.compress(b"\n".join(lines)))
    err = _report_fails_in_stretches(path, long_run, monkeypatch, capsys)
    assert "run.jsonl.gz:6: not a block of ticks" in err


def test_a_streams_size_is_what_its_lines_hold(long_run: Path, tmp_path: Path) -> None:
    with gzip.open(long_run) as f:
        held = len(f.read())
    assert stream_size(long_run) == held
    plain = tmp_path / "run.jsonl"
    plain.write_bytes(gzip.decompress(long_run.read_bytes()))
    assert stream_size(plain) == held


@pytest.mark.parametrize("count", [2, 3, 5, 8])
def test_the_cuts_give_each_process_as_much_to_do(count: int) -> None:
    size = 10**9
    at = [0, *segments.cuts(size, count), size]
    assert at == sorted(at) and len(set(at)) == count + 1
    loads = [segments.SKIP_COST * a + (b - a) for a, b in pairwise(at)]
    assert max(loads) - min(loads) < 1e-6 * size


def test_a_recording_cut_short_tells_split_what_it_tells_whole(
    long_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gzip stream cut short (a recorder killed, or still writing) has no trailer to
    say its size: the shares are cut by a guess, and the last one still ends the run."""
    monkeypatch.setattr(segments, "MIN_STRETCH_BYTES", stream_size(long_run) // 3)
    packed = long_run.read_bytes()
    for keep in (0.5, 0.8, 0.95):
        cut = tmp_path / f"cut{keep}.jsonl.gz"
        cut.write_bytes(packed[: int(len(packed) * keep)])
        assert stream_size(cut) < 2 * stream_size(long_run)
        whole = segments.judge_recording(cut, 10**6, processes=1)
        split = segments.judge_recording(cut, 10**6, processes=2)
        assert whole is not None and split is not None
        assert _story(split) == _story(whole), keep


def test_what_lies_past_a_reports_last_tick_fails_no_stretch(
    long_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A damaged line the reading in one go never reaches (past ``max_ticks``) fails no
    report read in stretches either."""

    monkeypatch.setattr(segments, "MIN_STRETCH_BYTES", stream_size(long_run) // 3)
    lines = _lines(long_run)
    lines[130] = lines[130][:-3] + b"@@@"  # past the first 3000 ticks, in the 2nd stretch
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n".join(lines))
    whole = segments.judge_recording(path, 3000, processes=1)
    split = segments.judge_recording(path, 3000, processes=2)
    assert whole is not None and split is not None and len(whole.times) == 3000
    assert _story(split) == _story(whole)


def test_a_damaged_line_where_a_stretch_ends_fails_the_report(
    long_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last line before a cut is no file's last line: damaged, it is an error, as
    in a reading in one go, whatever the warm-up reaches back to."""

    from gputui.formats.recording import RecordingError

    lines = _lines(long_run)
    lines[60] = lines[60][:-3] + b"@@@"
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n".join(lines))
    border = sum(len(line) + 1 for line in lines[:61])
    monkeypatch.setattr(segments, "MIN_STRETCH_BYTES", 1)
    monkeypatch.setattr(segments, "WARMUP_S", 0.0)
    monkeypatch.setattr(segments, "cuts", lambda size, count: [border])
    with pytest.raises(RecordingError, match=r"run.jsonl:61: damaged line"):
        segments.judge_recording(path, 10**6, processes=1)
    with pytest.raises(RecordingError, match=r"run.jsonl:61: damaged line"):
        segments.judge_recording(path, 10**6, processes=2)


def test_the_stretches_counts_of_findings_not_understood_are_one_notice() -> None:
    notices = segments._summed(
        [
            "run.jsonl: 3 recorded finding(s) not understood, skipped",
            "a cut last line",
            "5 recorded finding(s) not understood, skipped",
            "run.jsonl: 4 recorded finding(s) not understood, skipped",
            "a cut last line",
            "5 recorded finding(s) not understood, skipped",
        ]
    )
    assert notices == [
        "run.jsonl: 7 recorded finding(s) not understood, skipped",
        "a cut last line",
        "10 recorded finding(s) not understood, skipped",
    ]
