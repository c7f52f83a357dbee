"""Snapshot: JSON that round-trips through its documented schema; Markdown; atomic files."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import re
import stat
from pathlib import Path

import pytest

from gputui.core.manual_clock import ManualClock
from gputui.core.model import (
    DeviceInfo,
    GpuSample,
    HostSample,
    HostSettings,
    JobSettings,
    ProcessSample,
    SourceInfo,
)
from gputui.core.names import Metric, SourceKind
from gputui.exporters.files import write_atomic
from gputui.exporters.markdown import markdown_report
from gputui.exporters.snapshot_files import unique_files
from gputui.formats.snapshot import (
    SCHEMA,
    SnapshotFormatError,
    dumps,
    parse_snapshot,
    snapshot_dict,
)
from gputui.sampling.history import GPU_METRICS, History
from gputui.sources.simulated import SimulatedSource, resolve_scenarios

DOC = Path(__file__).resolve().parents[2] / "docs" / "snapshot.md"


def demo_document(seconds: int = 30) -> tuple[dict, tuple[DeviceInfo, ...], History]:  # type: ignore[type-arg]
    clock = ManualClock(1_800_000_000.0)
    source = SimulatedSource(resolve_scenarios("mix", 8), clock=clock)
    devices = source.open()
    history = History(600)
    for _ in range(seconds):
        history.add(source.read())
        clock.advance(1.0)
    doc = snapshot_dict(SourceInfo("SIMULATED", SourceKind.SIMULATED, "mix"), devices, history, 1.0)
    return doc, devices, history


def test_json_round_trips_to_the_same_model() -> None:
    doc, devices, history = demo_document()
    text = dumps(doc)
    snap = parse_snapshot(text)
    assert snap.devices == devices
    assert snap.latest == history.latest
    assert len(snap.history_times) == 30
    assert snap.history_gpus[1][Metric.TEMP_C][-1] == history.series(1, Metric.TEMP_C)[-1]
    assert json.loads(text)["schema"] == SCHEMA


def test_json_is_strict_and_nan_free() -> None:
    doc, _, _ = demo_document(3)
    text = dumps(doc)
    assert "NaN" not in text
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard constant {c}"))


def test_documented_schema_lists_every_field() -> None:
    """docs/snapshot.md names every field the snapshot writes, so the doc cannot rot."""
    text = DOC.read_text()
    documented = set(re.findall(r"`([a-z_0-9]+)`", text))
    for cls in (DeviceInfo, GpuSample, ProcessSample, HostSample, JobSettings, HostSettings):
        missing = {f.name for f in dataclasses.fields(cls)} - documented
        assert not missing, f"{cls.__name__}: {sorted(missing)} not in docs/snapshot.md"
    assert set(GPU_METRICS) <= documented
    doc, _, _ = demo_document(2)
    assert set(doc) <= documented


def test_foreign_and_future_files_are_refused() -> None:
    with pytest.raises(SnapshotFormatError, match="not JSON"):
        parse_snapshot("{")
    with pytest.raises(SnapshotFormatError, match="not a gputui snapshot"):
        parse_snapshot('{"hello": 1}')
    doc, _, _ = demo_document(2)
    doc["version"] = 99
    with pytest.raises(SnapshotFormatError, match="version 99"):
        parse_snapshot(dumps(doc))


def test_markdown_report_is_readable() -> None:
    doc, _, _ = demo_document(40)
    report = markdown_report(doc)
    assert report.startswith("# gputui snapshot")
    assert "SIMULATED" in report
    assert "thermal slowdown (HW)" in report
    assert "Gen3 x8 (max Gen4 x16)" in report
    assert "python3 finetune.py --data" in report


def test_write_atomic_mode_0600_and_no_leftovers(tmp_path: Path) -> None:
    target = write_atomic(tmp_path / "s.json", "{}\n")
    assert target.read_text() == "{}\n"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert os.listdir(tmp_path) == ["s.json"]


def test_write_atomic_into_a_directory_path_fails_cleanly(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        write_atomic(tmp_path / "d", "x")
    assert os.listdir(tmp_path) == ["d"]


def test_write_atomic_without_replace_never_replaces_what_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("earlier")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    (tmp_path / "dir").mkdir()
    for name in ("file", "link", "dir"):
        with pytest.raises(FileExistsError):
            write_atomic(tmp_path / name, "later", replace=False)
    assert (tmp_path / "file").read_text() == "earlier" and (tmp_path / "link").is_symlink()
    # taken between the look and the write (another writer): the link refuses, nothing left
    monkeypatch.setattr(os.path, "lexists", lambda path: False)
    with pytest.raises(FileExistsError):
        write_atomic(tmp_path / "file", "later", replace=False)
    assert sorted(os.listdir(tmp_path)) == ["dir", "file", "link"]
    assert (tmp_path / "file").read_text() == "earlier"
    assert write_atomic(tmp_path / "new", "x", replace=False).read_text() == "x"


def test_write_atomic_without_replace_on_a_file_system_without_hard_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(src: object, dst: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    target = write_atomic(tmp_path / "s.json", "{}", replace=False)
    assert target.read_text() == "{}" and os.listdir(tmp_path) == ["s.json"]
    with pytest.raises(FileExistsError):
        write_atomic(tmp_path / "s.json", "later", replace=False)
    assert target.read_text() == "{}" and os.listdir(tmp_path) == ["s.json"]


def test_unique_files_pass_over_a_name_any_snapshot_file_has(tmp_path: Path) -> None:
    (tmp_path / "snap.svg").write_text("the app's")
    (tmp_path / "snap-2.json").mkdir()
    texts = ((".json", "{}"), (".md", "# x"))
    assert unique_files(tmp_path, "snap", texts) == tmp_path / "snap-3"
    assert unique_files(tmp_path, "snap", texts) == tmp_path / "snap-4"
    assert (tmp_path / "snap-3.md").read_text() == "# x" and not (tmp_path / "snap.json").exists()


def test_write_atomic_full_disk_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fsync = os.fsync

    def enospc(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", enospc)
    with pytest.raises(OSError, match="No space"):
        write_atomic(tmp_path / "s.json", "data")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert os.listdir(tmp_path) == []
