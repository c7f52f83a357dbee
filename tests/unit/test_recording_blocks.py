"""The version-3 recording (blocks of typed columns): the same frames and findings back as
version 2 gives, a cut or damaged block handled as a cut or damaged line is, and a hostile
file refused or read with every reading in range and every text clean."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import zlib
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gputui import cli
from gputui.advisor import make_monitor
from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import Finding, Frame, GpuSample, ProcessSample, SourceInfo
from gputui.core.names import RuleId, Severity, SourceKind
from gputui.core.ranges import within_ranges
from gputui.core.sanitize import clean
from gputui.exporters.recorder import RecordWriter
from gputui.formats import columns
from gputui.formats.block_writer import findings_shown
from gputui.formats.recording import Header, RecordingError, read_recording, stream_recording
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from tests.hostile import CORPUS, FORBIDDEN, SECRET_COMMAND, SECRET_VALUES, fuzz_settings

START = 1_800_000_000.0


def simulate(seconds: int, gpus: int = 4, scenario: str = "mix") -> list[tuple[Frame, Any]]:
    clock = ManualClock(START)
    source = SimulatedSource(resolve_scenarios(scenario, gpus), clock=clock)
    devices = source.open()
    monitor = make_monitor(devices, Config(), SourceInfo("SIMULATED", SourceKind.SIMULATED))
    ticks = []
    for _ in range(seconds):
        frame = source.read()
        ticks.append((frame, monitor.ingest(frame)))
        clock.advance(1.0)
    return ticks


TICKS = simulate(150)
DEVICES = SimulatedSource(resolve_scenarios("mix", 4), clock=ManualClock(START)).open()


def write(path: Path, ticks: list[tuple[Frame, Any]], version: int = 3) -> Path:
    header = Header(SourceInfo("SIMULATED", SourceKind.SIMULATED), DEVICES, 1.0)
    writer = RecordWriter(path, header, version=version)
    for frame, findings in ticks:
        writer.write(frame, findings)
    writer.close()
    return path


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_a_block_recording_reads_back_the_frames_and_findings_version_2_gives(
    tmp_path: Path, name: str
) -> None:
    new = read_recording(write(tmp_path / name, TICKS))
    old = read_recording(write(tmp_path / f"v2-{name}", TICKS, version=2))
    assert new.header.version == 3 and old.header.version == 2
    assert new.notices == () and len(new.ticks) == 150
    assert [t.frame for t in new.ticks] == [f for f, _ in TICKS] == [t.frame for t in old.ticks]
    # version 2 keeps every tick's words; version 3 which findings stand at every tick,
    # their words where that changes and at each block's end (the episodes' last words)
    assert [t.findings for t in old.ticks] == [tuple(f) for _, f in TICKS]
    assert [findings_shown(t.findings) for t in new.ticks] == [findings_shown(f) for _, f in TICKS]
    for k in (59, 119, 149):
        assert new.ticks[k].findings == tuple(TICKS[k][1])
    with gzip.open(tmp_path / name) if name.endswith(".gz") else open(tmp_path / name, "rb") as f:
        assert [json.loads(line).get("block") for line in f] == [None, 60, 60, 30]
    # the report's reader leaves the recorded findings unread
    stream = stream_recording(tmp_path / name, [], findings=False)
    assert all(not t.findings for t in list(stream)[1:])  # type: ignore[union-attr]


def test_gpus_and_processes_that_come_and_go_inside_a_block_read_back(tmp_path: Path) -> None:
    ticks = [
        (dataclasses.replace(f, gpus=f.gpus[: 1 + k % 4], processes=f.processes[: k % 3]), ())
        if k % 5
        else (dataclasses.replace(f, host=None, gpus=()), ())
        for k, (f, _) in enumerate(TICKS[:70])
    ]
    recording = read_recording(write(tmp_path / "run.jsonl", ticks))
    assert [t.frame for t in recording.ticks] == [f for f, _ in ticks]


def test_a_recording_cut_inside_its_last_block_reads_the_blocks_before(tmp_path: Path) -> None:
    path = write(tmp_path / "run.jsonl", TICKS)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 400])  # a recorder killed while writing the last block
    recording = read_recording(path)
    assert len(recording.ticks) == 120
    assert recording.notices == (f"{path}:4: the last line is incomplete and was skipped",)


def test_a_damaged_block_in_the_middle_is_named_by_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "run.jsonl", TICKS)
    lines = path.read_bytes().split(b"\n")
    document = json.loads(lines[2])
    document["data"] = document["data"][:-8] + "AAAAAAA="
    lines[2] = json.dumps(document).encode()
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(RecordingError, match=r"run.jsonl:3: not a block of ticks \(the columns"):
        read_recording(path)


def test_a_recorder_killed_at_any_byte_leaves_a_readable_file(tmp_path: Path) -> None:
    header = len(write(tmp_path / "header.jsonl.gz", []).read_bytes())
    path = write(tmp_path / "run.jsonl.gz", TICKS)
    data = path.read_bytes()
    for cut in range(header, len(data), len(data) // 23):
        path.write_bytes(data[:cut])
        recording = read_recording(path)
        assert len(recording.ticks) in (0, 60, 120)
        assert [t.frame for t in recording.ticks] == [f for f, _ in TICKS[: len(recording.ticks)]]


def test_a_block_closes_at_a_minute_of_frame_time_whatever_the_interval(tmp_path: Path) -> None:
    ticks = [(dataclasses.replace(f, time=START + 7.0 * k), ()) for k, (f, _) in enumerate(TICKS)]
    path = write(tmp_path / "run.jsonl", ticks[:20])
    assert [json.loads(line)["block"] for line in path.read_bytes().splitlines()[1:]] == [10, 10]


# -- hostile blocks ------------------------------------------------------------------------


def _blocks(path: Path) -> tuple[list[bytes], list[dict[str, Any]]]:
    lines = path.read_bytes().splitlines()
    return lines[:1], [json.loads(line) for line in lines[1:]]


def _rewrite(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    head, documents = _blocks(path)
    change(documents[0])
    path.write_bytes(b"\n".join([*head, *(json.dumps(d).encode() for d in documents)]) + b"\n")


def _column(document: dict[str, Any], part: str, field: str, values: list[Any]) -> None:
    """Replace one column's bytes in a block (same code, same length)."""
    specs = [columns.parse_spec(s) for s in document["columns"]]
    raw = bytearray(
        columns.unpack_blob(document["data"], sum(s.size(document["block"]) for s in specs))
    )
    offset = 0
    for spec in specs:
        size = spec.size(document["block"])
        if (spec.part, spec.field) == (part, field):
            typecode = {"d": "d", "q": "q", "b": "b"}[spec.code]
            body = array(typecode, values).tobytes()
            raw[offset : offset + len(body)] = body
        offset += size
    document["data"] = base64.b64encode(zlib.compress(bytes(raw))).decode()


def _first(document: dict[str, Any], code: str) -> tuple[str, str]:
    part, field = next((p, f) for p, f, c, _, _ in document["columns"] if c == code)
    return part, field


def _short(document: dict[str, Any]) -> None:
    document["block"] = 3


HOSTILE: dict[str, Callable[[dict[str, Any]], None]] = {
    "NaN in a float column": lambda d: _column(d, "gpu0", "temp_c", [float("nan")] * 60),
    "infinity in a float column": lambda d: _column(d, "gpu0", "power_w", [float("inf")] * 60),
    "1e300 in a float column": lambda d: _column(d, "gpu1", "util_gpu", [1e300] * 60),
    "a bool of 7": lambda d: _column(d, *_first(d, "b"), [7] * 60),
    "a time backwards": lambda d: _column(d, "time", "time", [float(60 - k) for k in range(60)]),
    "columns claiming a gigabyte": lambda d: d.update(
        columns=[*d["columns"], ["gpu0", "nvlink_x", "D", 0, 2**24]]
    ),
    "a zip bomb": lambda d: d.update(data=base64.b64encode(zlib.compress(b"\0" * 2**26)).decode()),
    "columns that do not unpack": lambda d: d.update(data="not base64!"),
    "a column of another code": lambda d: next(
        c for c in d["columns"][1:] if c[2] == "d"
    ).__setitem__(2, "q"),
    "a block shorter than its columns": _short,
    "a million ticks": lambda d: d.update(block=10**6),
    "2000 GPUs a tick": lambda d: d["shape"].update(gpus=[[0, 2000]]),
    "changes out of order": lambda d: d["shape"].update(gpus=[[5, 4], [0, 4]]),
    "changes past the block": lambda d: d["shape"].update(gpus=[[0, 4], [90, 3]]),
    "no changes": lambda d: d["shape"].update(host=[]),
    "a number for a text": lambda d: d["gpus"]["0"].update(fabric_state=[[0, 5]]),
    "changes not a list": lambda d: d["processes"].update({"0": {"name": "x"}}),
    "a time that is no time": lambda d: d.update(t0=1e300),
    "a block that is a list": lambda d: d.update(block=[1]),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_block_is_refused_naming_its_line(tmp_path: Path, case: str) -> None:
    path = write(tmp_path / "run.jsonl", TICKS[:70])
    _rewrite(path, HOSTILE[case])
    with pytest.raises(RecordingError, match=r"run.jsonl:2: "):
        read_recording(path)


def test_readings_no_gpu_gives_are_made_unknown_column_by_column(tmp_path: Path) -> None:
    def odd(k: int, sample: GpuSample) -> GpuSample:
        if sample.index != 1 or k % 7:
            return sample
        return dataclasses.replace(sample, temp_c=900.0, util_samples=(50.0, 400.0, 70.0))

    ticks = [
        (dataclasses.replace(f, gpus=tuple(odd(k, s) for s in f.gpus)), ())
        for k, (f, _) in enumerate(TICKS[:70])
    ]
    recording = read_recording(write(tmp_path / "run.jsonl", ticks))
    for k, tick in enumerate(recording.ticks):
        for sample in tick.frame.gpus:
            assert within_ranges(sample) is sample
            assert sample == within_ranges(ticks[k][0].gpus[sample.index])
    assert recording.ticks[7].frame.gpus[1].temp_c is None
    assert recording.ticks[7].frame.gpus[1].util_samples == (50.0, 70.0)
    assert recording.ticks[8].frame.gpus[1].temp_c == TICKS[8][0].gpus[1].temp_c


def test_texts_come_back_cleaned_and_command_lines_masked(tmp_path: Path) -> None:
    hostile = next(iter(CORPUS.values()))
    frame = TICKS[0][0]
    process = ProcessSample(pid=7, gpu_index=0, name="x", command=SECRET_COMMAND)
    ticks = [
        (
            dataclasses.replace(
                f,
                gpus=(dataclasses.replace(f.gpus[0], fabric_state=hostile), *f.gpus[1:]),
                processes=(process, *f.processes),
            ),
            (),
        )
        for f, _ in TICKS[:5]
    ]
    path = write(tmp_path / "run.jsonl", ticks)
    text = path.read_text()
    assert not any(secret in text for secret in SECRET_VALUES)
    _rewrite(path, lambda d: d["gpus"]["0"].update(fabric_state=[[0, "a\x1b[31mred\u202e"]]))
    recording = read_recording(path)
    state = recording.ticks[0].frame.gpus[0].fabric_state
    assert state == clean("a\x1b[31mred\u202e") and not any(c in state for c in FORBIDDEN)
    assert recording.ticks[0].frame.processes[0].command != SECRET_COMMAND
    assert recording.ticks[0].frame.processes[1:] == frame.processes


def test_a_field_a_newer_gputui_wrote_is_skipped(tmp_path: Path) -> None:
    path = write(tmp_path / "run.jsonl", TICKS[:70])

    def newer(document: dict[str, Any]) -> None:
        specs = [columns.parse_spec(s) for s in document["columns"]]
        raw = bytes(
            columns.unpack_blob(document["data"], sum(s.size(document["block"]) for s in specs))
        )
        document["columns"] = [["gpu0", "quantum_flux", "d", 0, 0], *document["columns"]]
        document["data"] = base64.b64encode(zlib.compress(b"\1" * 8 * 60 + raw)).decode()
        document["gpus"]["0"]["warp_drive"] = [[0, "on"]]

    _rewrite(path, newer)
    assert [t.frame for t in read_recording(path).ticks] == [f for f, _ in TICKS[:70]]


def test_a_finding_this_gputui_does_not_know_is_skipped_with_a_notice(tmp_path: Path) -> None:
    found = Finding(RuleId("thermal-throttle"), Severity.WARNING, 0, "t", (), (), START, START)
    path = write(tmp_path / "run.jsonl", [(f, (found,)) for f, _ in TICKS[:3]])
    _rewrite(path, lambda d: d["findings"][0][1][0].update(rule="from-the-future"))
    recording = read_recording(path)
    assert all(t.findings == () for t in recording.ticks)
    assert recording.notices == (f"{path}: 1 recorded finding(s) not understood, skipped",)


# -- fuzzing -------------------------------------------------------------------------------

FUZZ = fuzz_settings(60)


def _leaves(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _leaves(v, (*at, k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _leaves(v, (*at, i))] or [at]
    return [at]


def _set(node: Any, path: tuple[Any, ...], value: Any) -> None:
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value


ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


@FUZZ
@given(st.data())
def test_a_random_block_gives_an_error_naming_its_line_or_frames_in_range(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "run.jsonl"
    write(path, TICKS[:12])
    head, (document,) = _blocks(path)
    leaves = _leaves(document)
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(leaves))
        try:
            _set(document, where, data.draw(ANY_JSON))
        except (KeyError, IndexError, TypeError):
            continue
    if data.draw(st.booleans()):
        raw = bytearray(base64.b64decode(document["data"]))
        raw[data.draw(st.integers(0, len(raw) - 1))] ^= data.draw(st.integers(1, 255))
        document["data"] = base64.b64encode(bytes(raw)).decode()
    path.write_bytes(b"\n".join([*head, json.dumps(document).encode()]) + b"\n")
    try:
        recording = read_recording(path)
    except RecordingError as exc:
        assert str(exc).startswith(str(path))
        return
    for tick in recording.ticks:
        for sample in tick.frame.gpus:
            assert isinstance(sample, GpuSample) and within_ranges(sample) is sample
            assert sample.fabric_state is None or clean(sample.fabric_state) == sample.fabric_state
        for process in tick.frame.processes:
            for value in (process.name, process.command, process.user):
                assert value is None or clean(value) == value


@pytest.mark.parametrize("case", ["a zip bomb", "NaN in a float column", "changes out of order"])
def test_the_report_and_replay_of_a_hostile_block_say_which_line_without_a_traceback(
    tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / f"run{CORPUS['CSI colour']}.jsonl", TICKS[:70])  # a hostile name
    _rewrite(path, HOSTILE[case])
    assert cli.main(["report", str(path), "-o", str(tmp_path / "r.html")]) == cli.EXIT_NO_SOURCE
    assert cli.main(["replay", str(path)]) == cli.EXIT_NO_SOURCE
    err = capsys.readouterr().err
    assert err.count(":2: not a block of ticks") == 2 and "Traceback" not in err
    assert not any(c in err for c in FORBIDDEN)


def test_a_block_whose_start_says_another_time_than_its_body_is_refused(tmp_path: Path) -> None:
    """The start of a block line is all a share's reader reads of the lines it passes over
    (``Share``): a later "t0" key in the same object, which the JSON parser would take, is a lie."""
    path = write(tmp_path / "run.jsonl", TICKS[:70])
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1][:-1] + b',"t0":5.0}'
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(RecordingError, match=r"run.jsonl:2: a block whose start and body"):
        read_recording(path)


def test_a_column_list_checked_once_still_tells_json_types_apart(tmp_path: Path) -> None:
    """The reader keeps the checked column list of blocks that repeat it: a later block
    whose list equals it by ``==`` but not by JSON type (``false`` for ``0``, ``0.0`` for
    ``0``) is checked on its own, and refused."""
    path = write(tmp_path / "run.jsonl", TICKS)
    head, documents = _blocks(path)
    assert documents[0]["columns"][1][3:] == [0, 0]  # no null byte, no count
    for place, odd in ((3, False), (4, 0.0)):
        later = json.loads(json.dumps(documents[0]))
        later["t0"] = documents[-1]["t0"] + 100.0
        later["columns"][1][place] = odd
        lines = [*head, *(json.dumps(d).encode() for d in documents), json.dumps(later).encode()]
        path.write_bytes(b"\n".join(lines) + b"\n")
        with pytest.raises(RecordingError, match=r"run.jsonl:5: not a block of ticks \(column"):
            read_recording(path)
