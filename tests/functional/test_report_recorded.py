"""A report of a file `gputui record` wrote with this release takes the findings its own
advisor judged live (``exporters/report/recorded``): the episodes are the live screen's to
the last word, in one go or in stretches side by side; a file of another release, one
whose writer passed findings of its own, or ``--rejudge`` is judged again."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gputui import __version__, cli
from gputui.core.config import Thresholds
from gputui.core.manual_clock import ManualClock
from gputui.core.model import Finding, SourceInfo
from gputui.core.names import RuleId, Severity, SourceKind
from gputui.exporters.recorder import RecordWriter
from gputui.exporters.report import account, segments
from gputui.exporters.report.run import REPORT_JUDGE_EVERY_S, Run
from gputui.formats.recording import Header, read_header, stream_size
from gputui.sampling.monitor import Monitor
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from tests.live_recording import record_live

MINUTES = 50


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Monitor]:
    path = tmp_path_factory.mktemp("recorded") / "run.jsonl.gz"
    return path, record_live(path, MINUTES * 60)


def _spans(run: Run) -> list[tuple[object, ...]]:
    return sorted((s.gpu, s.pid, s.name, s.start, s.end) for s in run.spans)


def test_the_report_tells_the_episodes_the_live_screen_showed_to_the_last_word(
    recorded: tuple[Path, Monitor],
) -> None:
    path, live = recorded
    header = read_header(path)
    assert header.live_findings and header.gputui_version == __version__
    assert header.findings_judged_here()
    run = segments.judge_recording(path, 10**6, processes=1)
    assert run is not None and run.judged_live
    assert run.thresholds == Thresholds()  # the live screen's, judged every 2 s
    assert len(live.runlog.episodes) >= 6  # not a story without findings
    assert run.episodes == live.runlog.episodes
    assert _spans(run) == sorted((s.gpu, s.pid, s.name, s.start, s.end) for s in live.runlog.spans)
    # the readings are the ones the advisor run again would chart and account
    again = segments.judge_recording(path, 10**6, processes=1, rejudge=True)
    assert again is not None and not again.judged_live
    assert again.thresholds.judge_every_s == REPORT_JUDGE_EVERY_S
    assert list(again.times) == list(run.times)
    for index, track in run.tracks.items():
        for metric, column in track.values.items():
            assert list(again.tracks[index].values[metric]) == pytest.approx(
                list(column), nan_ok=True
            )
        assert list(again.tracks[index].reasons) == list(track.reasons)


def test_stretches_side_by_side_join_into_the_run_read_in_one_go(
    recorded: tuple[Path, Monitor], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _live = recorded
    monkeypatch.setattr(segments, "MIN_STRETCH_BYTES", stream_size(path) // 4)
    assert len(segments.plan(path, 3)) == 3
    whole = segments.judge_recording(path, 10**6, processes=1)
    split = segments.judge_recording(path, 10**6, processes=3)
    assert whole is not None and split is not None and split.judged_live
    assert list(split.times) == list(whole.times)
    assert split.episodes == whole.episodes
    assert _spans(split) == _spans(whole)
    assert account(split) == account(whole)


def _with_header(path: Path, out: Path, **changes: object) -> Path:
    with gzip.open(path) as f:
        lines = f.read().split(b"\n")
    head = json.loads(lines[0])
    head.update(changes)
    lines[0] = json.dumps(head).encode()
    out.write_bytes(b"\n".join(lines))
    return out


def test_another_releases_findings_or_a_writers_own_are_judged_again(
    recorded: tuple[Path, Monitor], tmp_path: Path
) -> None:
    path, _live = recorded
    older = _with_header(path, tmp_path / "older.jsonl", gputui_version="0.0.1")
    assert read_header(older).live_findings and not read_header(older).findings_judged_here()
    unsaid = _with_header(path, tmp_path / "unsaid.jsonl", findings=None)
    assert not read_header(unsaid).live_findings
    hostile = _with_header(path, tmp_path / "hostile.jsonl", gputui_version="\x1b[2J" * 40)
    assert read_header(hostile).gputui_version is None
    for other in (older, unsaid):
        run = segments.judge_recording(other, 10**6, processes=1)
        assert run is not None and not run.judged_live
        assert run.thresholds.judge_every_s == REPORT_JUDGE_EVERY_S


def test_report_rejudge_and_the_page_say_where_the_findings_come_from(
    recorded: tuple[Path, Monitor], tmp_path: Path
) -> None:
    path, _live = recorded
    page = tmp_path / "live.md"
    assert cli.main(["report", str(path), "-o", str(page)]) == 0
    assert "Findings: judged live as the run went (every 4 s)" in page.read_text()
    again = tmp_path / "again.md"
    assert cli.main(["report", str(path), "--rejudge", "-o", str(again)]) == 0
    assert "Findings: judged by this report over the run's readings (every 5 s)" in (
        again.read_text()
    )


def test_gputui_record_says_its_findings_are_the_live_ones(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    args = ["record", "--demo", "--gpus", "1", "--interval", "0.5", "--duration", "1.2"]
    assert cli.main([*args, "-o", str(path)]) == 0
    assert read_header(path).findings_judged_here()


def test_a_slow_recordings_stretches_warm_up_on_the_block_before_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 90 s a tick, blocks lie further apart than the recorded findings' warm-up: a
    stretch still reads the block before its own, and the story is the one-go story."""
    path = tmp_path / "slow.jsonl"
    record_live(path, 400, interval_s=90.0)
    monkeypatch.setattr(segments, "MIN_STRETCH_BYTES", stream_size(path) // 4)
    whole = segments.judge_recording(path, 10**6, processes=1)
    split = segments.judge_recording(path, 10**6, processes=3)
    assert whole is not None and split is not None and whole.episodes
    assert split.episodes == whole.episodes
    assert _spans(split) == _spans(whole)
    assert split.notices == whole.notices


@pytest.mark.parametrize("since", [1e17, -1e17, 1e11])
def test_a_recorded_finding_whose_times_are_no_times_is_skipped_with_a_notice(
    tmp_path: Path, since: float, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 52: a recorded finding's since of 1e17 (a valid float, no time) ended the
    report with exit 70 where it was put on the page's time line. A finding's times are
    checked as a frame's are: one that is no time is not understood, and said."""
    clock = ManualClock(1.8e9)
    source = SimulatedSource(resolve_scenarios("mix", 2), clock=clock)
    info = SourceInfo("SIMULATED", SourceKind.SIMULATED)
    path = tmp_path / "run.jsonl"
    writer = RecordWriter(path, Header(info, source.open(), 1.0, live_findings=True))
    for k in range(40):
        found = Finding(
            RuleId("thermal-throttle"), Severity.WARNING, 0, "hot", (), (), since, 1.8e9
        )
        writer.write(source.read(), (found,) if k > 20 else ())
        clock.advance(1.0)
    writer.close()
    for fmt in ("html", "md"):
        assert cli.main(["report", str(path), "--format", fmt, "-o", str(tmp_path / "r")]) == 0
        err = capsys.readouterr().err
        assert "recorded finding(s) not understood, skipped" in err and "internal" not in err
