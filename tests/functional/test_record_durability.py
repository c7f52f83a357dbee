"""`gputui record` as a real process, ended the ways a long recording ends: SIGKILL at
random moments (the OOM killer, a watchdog), SIGTERM, SIGHUP and Ctrl+C (a service
stopped, a terminal gone), a full disk (a small tmpfs in a mount namespace of its own),
and a restart that finds what the killed one left (docs/record.md, "What a crash loses").

The killed recorders run side by side, 8 simulated GPUs at 1 s ticks and blocks of
``BLOCK`` ticks (``--block``), each killed at its own seeded moment across the first two
block boundaries: every tick up to at most one tick before the kill reads back, the
findings its live advisor gave with them.
"""

from __future__ import annotations

import errno
import gzip
import itertools
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gputui import cli
from gputui.advisor import make_monitor
from gputui.cli.exits import EXIT_CANNOT_WRITE
from gputui.core.config import Config
from gputui.core.units import fmt_time
from gputui.formats.block_writer import findings_shown
from gputui.formats.journal import journal_of
from gputui.formats.recording import Recording, read_recording

TRIALS = 20
BLOCK = 5
INTERVAL_S = 1.0
SEED = 47


def recorder(path: Path, *options: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "gputui", "record", "--demo", "--gpus", "8"]
    return subprocess.Popen(
        [*command, "--block", str(BLOCK), *options, "-o", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def killed_at(paths: list[Path], offsets: list[float]) -> list[float]:
    """A recorder each, started together and SIGKILLed ``offsets`` seconds after its
    recording began (its journal is there: the file's header and the journal's mark
    written, the first tick next); the wall-clock time of each kill."""
    procs = [recorder(path) for path in paths]
    began: list[float | None] = [None] * len(paths)
    kills: list[float | None] = [None] * len(paths)
    deadline = time.monotonic() + 60
    try:
        while None in kills:
            assert time.monotonic() < deadline, "the recorders did not start"
            now = time.monotonic()
            for n, (proc, path) in enumerate(zip(procs, paths, strict=True)):
                if kills[n] is not None:
                    continue
                assert proc.poll() is None, f"recorder {n} ended by itself"
                start = began[n]
                if start is None:
                    if journal_of(path).exists():
                        began[n] = now
                elif now >= start + offsets[n]:
                    kills[n] = time.time()
                    os.kill(proc.pid, signal.SIGKILL)
            time.sleep(0.005)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    return [k for k in kills if k is not None]


def judged_again(recording: Recording) -> list[object]:
    """Each tick's findings as an advisor given the frames read back gives them: the
    recorder's own live monitor judged the same frames the same way."""
    header = recording.header
    monitor = make_monitor(header.devices, Config(interval_s=header.interval_s), header.source)
    return [findings_shown(monitor.ingest(t.frame)) for t in recording.ticks]


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_a_recorder_killed_at_random_moments_loses_at_most_the_tick_it_was_taking(
    tmp_path: Path, name: str
) -> None:
    rng = random.Random(f"{SEED}:{name}")
    offsets = [rng.uniform(0.0, 2.6 * BLOCK * INTERVAL_S) for _ in range(TRIALS)]
    paths = [tmp_path / str(n) / name for n in range(TRIALS)]
    for path in paths:
        path.parent.mkdir()
    kills = killed_at(paths, offsets)
    read, with_findings = [], 0
    for path, offset, kill in zip(paths, offsets, kills, strict=True):
        recording = read_recording(path)
        times = [t.frame.time for t in recording.ticks]
        read.append(len(times))
        assert not any("damaged" in n for n in recording.notices), recording.notices
        if not times:  # killed before its second tick could be taken
            assert offset < 2 * INTERVAL_S
            continue
        # no tick missing between two read back, nor more than the one being taken at the end
        assert all(b - a < 1.9 * INTERVAL_S for a, b in itertools.pairwise(times)), times
        assert kill - times[-1] < 2 * INTERVAL_S, (offset, kill - times[-1], recording.notices)
        found = [findings_shown(t.findings) for t in recording.ticks]
        assert found == judged_again(recording)
        with_findings += any(found)
    assert max(read) > 2 * BLOCK  # the kills reach past two block boundaries
    assert with_findings  # and past the first findings


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stop_signal_closes_the_block_syncs_and_exits_0(tmp_path: Path, stop: int) -> None:
    path = tmp_path / "run.jsonl.gz"
    proc = recorder(path)
    try:
        deadline = time.monotonic() + 30
        while not journal_of(path).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(2.5 * INTERVAL_S)
        proc.send_signal(stop)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not journal_of(path).exists()
    recording = read_recording(path)
    assert len(recording.ticks) >= 2 and recording.notices == ()
    with gzip.open(path) as whole:  # a whole gzip member: its end and its CRC
        assert whole.read().count(b"\n") == 2


def test_a_restarted_recorder_folds_the_killed_ones_journal_in_and_rotates_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.jsonl.gz"
    killed_at([path], [1.5 * BLOCK * INTERVAL_S])
    before = read_recording(path)
    assert journal_of(path).exists() and len(before.ticks) > BLOCK
    args = ["record", "--demo", "--gpus", "8", "--rotate-mb", "100", "--keep", "3"]
    assert cli.main([*args, "--duration", "1", "-o", str(path)]) == 0
    err = capsys.readouterr().err
    assert "taken from its journal into it" in err and "held an earlier recording" in err
    older = tmp_path / "run.1.jsonl.gz"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.1.jsonl.gz", "run.jsonl.gz"]
    alone = read_recording(older)  # whole by itself, a copy of it included
    assert [t.frame for t in alone.ticks] == [t.frame for t in before.ticks]
    assert alone.notices == ()
    with gzip.open(older) as whole:
        assert whole.read().endswith(b"\n")
    assert read_recording(path).ticks


def test_a_killed_recordings_report_holds_its_last_ticks(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    killed_at([path], [1.4 * BLOCK * INTERVAL_S])
    ticks = read_recording(path).ticks
    out = tmp_path / "run.md"
    assert cli.main(["report", str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert "read from its journal run.jsonl.journal" in text
    assert fmt_time(ticks[-1].frame.time)[-8:-3] in text  # the run's end: its last tick


# -- a full disk ---------------------------------------------------------------------------


def _cannot(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI runs as root and must be able to: {reason}")
    pytest.skip(reason)


@pytest.mark.parametrize(("name", "size"), [("run.jsonl", "384k"), ("run.jsonl.gz", "160k")])
def test_a_full_disk_ends_the_recording_saying_up_to_when_the_file_holds(
    tmp_path: Path, name: str, size: str
) -> None:
    """A tmpfs of ``size`` in a mount namespace of the recorder's own fills up: exit 1, a
    sentence naming the file and its last tick, no traceback, and the files (copied out
    before the namespace goes) read back to that tick, no half line among them."""
    small, out = tmp_path / "small", tmp_path / "out"
    small.mkdir()
    out.mkdir()
    record = (
        f"{sys.executable} -m gputui record --demo --gpus 32 --interval 0.25 --block 4 "
        f"-o {small / name}"
    )
    script = (
        f"mount -t tmpfs -o size={size} tmpfs {small} || exit 97\n"
        f"{record} 2> {out / 'stderr'}\n"
        f"echo $? > {out / 'status'}\n"
        f"cp -a {small}/. {out}/\n"
    )
    as_root = ["--mount"] if os.geteuid() == 0 else ["--user", "--map-root-user", "--mount"]
    try:
        done = subprocess.run(
            ["unshare", *as_root, "--propagation", "private", "sh", "-c", script],
            capture_output=True,
            timeout=120,
        )
    except FileNotFoundError:
        _cannot("run unshare (util-linux)")
    if done.returncode == 97 or not (out / "status").exists():
        _cannot(f"mount a tmpfs in a new mount namespace ({done.stderr.decode()!r})")
    err = (out / "stderr").read_text()
    assert int((out / "status").read_text()) == EXIT_CANNOT_WRITE, err
    assert "No space left on device" in err and "Traceback" not in err
    recording = read_recording(out / name)
    last = fmt_time(recording.ticks[-1].frame.time)
    assert f"{small / name} holds every tick up to {last}" in err
    assert not any("cut short" in n or "damaged" in n for n in recording.notices)


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_a_disk_full_before_the_header_leaves_no_file_the_next_record_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """Issue 52: `record` on a full disk left a 0-byte file, and the next `record -o` to
    the same name refused it as an earlier recording. A file whose header cannot be
    written is taken back, its journal too; the next recording there simply starts."""
    path = tmp_path / name
    pwrite = os.pwrite

    def full(fd: int, data: Any, offset: int) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(name):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return pwrite(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", full)
    argv = ["record", "--demo", "--duration", "1", "--interval", "0.25", "-o", str(path)]
    assert cli.main(argv) == EXIT_CANNOT_WRITE
    err = capsys.readouterr().err
    assert "No space left on device" in err and "Traceback" not in err
    assert not path.exists() and not journal_of(path).exists()
    monkeypatch.undo()  # room again
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert read_recording(path).ticks


def test_an_earlier_recording_that_cannot_be_rotated_away_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.jsonl"
    assert cli.main(["record", "--demo", "--duration", "1", "-o", str(path)]) == 0
    (tmp_path / "run.1.jsonl").mkdir()
    args = ["record", "--demo", "--rotate-mb", "10", "--duration", "1", "-o", str(path)]
    assert cli.main(args) == EXIT_CANNOT_WRITE
    err = capsys.readouterr().err
    assert f"{tmp_path / 'run.1.jsonl'} is a directory: not rotated" in err
    assert read_recording(path).ticks  # left as it was
