"""Fuzzing the parsers of outside input (issue 27): random exporter pages, Prometheus
answers and recording lines, built from the real formats and then broken. Whatever
arrives, no exception but the parser's own clear error escapes, memory stays bounded,
every reading that comes out is inside its physical range and every text is clean.

Bounded in time: a fixed number of examples, derandomised so CI runs the same cases."""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from gputui.core.config import MAX_BLOCK_TICKS
from gputui.core.dcgm import BY_NAME
from gputui.core.manual_clock import ManualClock
from gputui.core.model import DeviceInfo, Frame, GpuSample, SourceInfo
from gputui.core.names import SourceKind
from gputui.core.ranges import within_ranges
from gputui.core.sanitize import clean
from gputui.core.source import SourceUnavailable
from gputui.exporters.report.recorded import ONLY
from gputui.formats.blocks import Block
from gputui.formats.cells import (
    MAX_BLOCK_CELLS,
    MAX_BLOCK_WIDTH,
    MAX_LINE_VALUES,
    cells,
    json_values,
)
from gputui.formats.journal import MAX_JOURNAL_VALUES
from gputui.formats.recording import (
    Header,
    RecordingError,
    Tick,
    header_line,
    read_recording,
    stream_recording,
)
from gputui.formats.values import MAX_GPUS, MAX_PROCESSES, frame_dict
from gputui.sources.node_readings import device_of, sample_of
from gputui.sources.prometheus.queries import REF, TAG
from gputui.sources.prometheus.source import PrometheusSource
from gputui.sources.remote import MAX_GPUS_PER_NODE, MAX_LABEL_CHARS, ScrapeError, parse_exposition
from gputui.sources.simulated import SimulatedSource
from tests import block_shapes
from tests.hostile import fuzz_settings, peak_below

FUZZ = fuzz_settings(100)


def assert_clean_text(obj: Any) -> None:
    """Every string of a model object has passed the sanitiser (cleaning it again is a no-op)."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, str):
            assert clean(value) == value, (f.name, value)


# -- exporter pages ------------------------------------------------------------------------

NUMBERS = st.one_of(
    st.floats(min_value=-10, max_value=2e6).map(repr),
    st.floats(min_value=-10, max_value=2e6).map(repr),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(["1e400", "-1e400", "NaN", "+Inf", "-Inf", "9223372036854775808", "0x1F"]),
)
LABEL_NAMES = st.sampled_from(
    ["gpu", "UUID", "Hostname", "modelName", "GPU_I_ID", "GPU_I_PROFILE", "instance", "device"]
) | st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,20}", fullmatch=True)
LABEL_VALUES = st.one_of(
    st.integers(min_value=-5, max_value=400).map(str),
    st.text(max_size=40),
    st.text(alphabet='\x1b[]();\\"\n\u202e\udcff', max_size=20),
    st.integers(min_value=MAX_LABEL_CHARS - 2, max_value=3 * MAX_LABEL_CHARS).map(
        lambda n: "x" * n
    ),
)


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@st.composite
def exposition_lines(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 39))
    if kind == 0:
        return draw(st.text(max_size=80))  # junk
    if kind < 4:
        name = draw(st.sampled_from(sorted(BY_NAME)))
        return f"# TYPE {name} {draw(st.sampled_from(['gauge', 'counter', 'bogus']))}"
    name = draw(st.sampled_from(sorted(BY_NAME)))
    if not draw(st.integers(0, 9)):
        name = draw(st.from_regex(r"[a-z_]{1,12}", fullmatch=True))
    labels = draw(st.dictionaries(LABEL_NAMES, LABEL_VALUES, max_size=5))
    if draw(st.integers(0, 9)):  # most series name their GPU, as an exporter's do
        labels["gpu"] = draw(st.integers(0, 7).map(str) | LABEL_VALUES)
    body = ",".join(f'{k}="{_escaped(v)}"' for k, v in labels.items())
    return f"{name}{{{body}}} {draw(NUMBERS)}"


@st.composite
def pages(draw: st.DrawFn) -> str:
    return "\n".join(draw(st.lists(exposition_lines(), max_size=60))) + "\n"


@FUZZ
@given(pages())
def test_a_random_exporter_page_gives_an_error_or_readings_in_range(page: str) -> None:
    with peak_below():
        try:
            host, gpus = parse_exposition(page)
        except ScrapeError as exc:
            assert str(exc)
            return
        assert len(gpus) <= MAX_GPUS_PER_NODE
        assert host is None or len(host) <= MAX_LABEL_CHARS
        for index, entry in gpus.items():
            assert all(len(v) <= MAX_LABEL_CHARS for v in entry.labels.values())
            sample = sample_of(index, entry)
            assert within_ranges(sample) is sample
            assert all(math.isfinite(v) for v in entry.values.values())
            assert_clean_text(device_of(index, clean(host or "node"), entry))


# -- recordings ----------------------------------------------------------------------------

JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
)
INTEGERS = st.integers(min_value=-(2**70), max_value=2**70) | st.integers(0, 200)
FLOATS = st.floats(min_value=-1e20, max_value=1e20) | st.floats(min_value=-1.0, max_value=300.0)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _simulated() -> tuple[tuple[DeviceInfo, ...], list[dict[str, Any]]]:
    clock = ManualClock(1.7e9)
    source = SimulatedSource(["thermal", "healthy", "vram", "starved"], seed=5, clock=clock)
    devices = source.open()
    frames: list[dict[str, Any]] = []
    for _ in range(5):
        frames.append(frame_dict(source.read()))
        clock.advance(1.0)
    return devices, frames


DEVICES, FRAMES = _simulated()
HEADER = header_line(Header(SourceInfo("SIMULATED", SourceKind.SIMULATED), DEVICES, 1.0))


def _paths(node: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*at, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, (*at, i))


PATHS = [p for p in _paths(FRAMES[0]) if p]


def _replaced(node: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    copy = dict(node) if isinstance(node, dict) else list(node)
    copy[head] = _replaced(node[head], rest, value)
    return copy


def _at(node: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _like(value: Any) -> st.SearchStrategy[Any]:
    """Numbers of the kind a field holds, of any size: the range, not the type, decides."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return JSON_LEAVES
    return INTEGERS if isinstance(value, int) else FLOATS


@st.composite
def tick_lines(draw: st.DrawFn, frame: Any) -> bytes:
    """One recorded tick, a few of its values replaced: mostly by numbers of any size (the
    type is right, the range decides), sometimes by any JSON; rarely a line of junk."""
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2]))):
        path = draw(st.sampled_from(PATHS))
        value = draw(_like(_at(frame, path)) if draw(st.integers(0, 3)) else JSON_VALUES)
        try:
            frame = _replaced(frame, path, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed what this path goes through
    kind = draw(st.integers(0, 49))
    if kind == 0:
        return draw(st.binary(max_size=200)) + b"\n"
    if kind == 1:
        return json.dumps(draw(JSON_VALUES)).encode() + b"\n"
    return json.dumps({"frame": frame, "findings": []}).encode() + b"\n"


@st.composite
def recordings(draw: st.DrawFn) -> list[bytes]:
    return [draw(tick_lines(frame)) for frame in FRAMES[: draw(st.integers(1, len(FRAMES)))]]


def _check_frame(frame: Frame) -> None:
    for gpu in frame.gpus:
        assert isinstance(gpu, GpuSample) and within_ranges(gpu) is gpu
    for process in frame.processes:
        assert_clean_text(process)
    for note in frame.notes:
        assert_clean_text(note)


def _read(lines: list[bytes], check: Callable[[Frame], None]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.jsonl"
        path.write_bytes(HEADER + b"".join(lines))
        try:
            recording = read_recording(path)
        except RecordingError as exc:
            assert str(exc).startswith(str(path))
            return
        for tick in recording.ticks:
            check(tick.frame)


@FUZZ
@given(recordings())
def test_a_random_recording_gives_an_error_naming_its_line_or_frames_in_range(
    lines: list[bytes],
) -> None:
    with peak_below():
        _read(lines, _check_frame)


# -- recording blocks at their bounds together (issue 52) --------------------------------

TICK_COUNTS = st.sampled_from([1, 2, 60, 512, 3599, 3600, 3601]) | st.integers(1, 3601)
GPU_COUNTS = st.sampled_from([0, 1, 8, 64, 1023, 1024, 1025]) | st.integers(0, 1025)
PROCESS_COUNTS = st.sampled_from([0, 1, 8, 511, 2500, 65536, 65537]) | st.integers(0, 3000)


def _around(value: int, least: int) -> st.SearchStrategy[int]:
    return st.sampled_from([max(least, value + d) for d in (-1, 0, 1)])


@st.composite
def wide_blocks(draw: st.DrawFn) -> dict[str, Any]:
    """A block claiming ticks x slots x fields near or past their bounds, each alone and
    together (the processes a tick's width leaves room for, the ticks its values do, one
    either side): as columns or as changes, its slots coming and going."""
    gpus = draw(GPU_COUNTS)
    room = (MAX_BLOCK_WIDTH - cells(1, gpus, 0)) // cells(1, 0, 1)
    processes = draw(PROCESS_COUNTS | _around(room, 0))
    ticks = draw(TICK_COUNTS | _around(MAX_BLOCK_CELLS // cells(1, gpus, processes), 1))
    event("refused by its shape" if _past(ticks, gpus, processes) else "within its bounds")
    return block_shapes.block(
        ticks,
        gpus,
        processes,
        fields=draw(st.integers(1, 60)),
        as_changes=draw(st.booleans()),
        fewer_from=draw(st.none() | st.integers(1, ticks)),
    )


def _past(ticks: int, gpus: int, processes: int) -> bool:
    """Whether a block of this shape is past a bound of the reader's."""
    return (
        ticks > MAX_BLOCK_TICKS
        or gpus > MAX_GPUS
        or processes > MAX_PROCESSES
        or cells(1, gpus, processes) > MAX_BLOCK_WIDTH
        or cells(ticks, gpus, processes) > MAX_BLOCK_CELLS
    )


@fuzz_settings(24)
@given(wide_blocks())
def test_a_block_at_its_bounds_reads_or_is_refused_within_the_memory_bound(
    data: dict[str, Any],
) -> None:
    """Replay's reading (every frame built) and the report's (columns): refused naming the
    line exactly where the block's values or a tick's width pass their bound, else read
    whole; either way within the memory every other fuzzed input is held to."""
    ticks, shape = data["block"], data["shape"]
    gpus, processes = shape["gpus"][0][1], shape["processes"][0][1]
    past = _past(ticks, gpus, processes)
    with tempfile.TemporaryDirectory() as folder:
        path = block_shapes.write(Path(folder) / "run.jsonl", [data])
        for read in (_replay_reading, _report_reading):
            with peak_below():
                try:
                    got = read(path)
                except RecordingError as exc:
                    assert str(exc).startswith(f"{path}:2: "), exc
                    got = None
            assert (got is None) == (past or _unfilled(data, gpus, processes)), got
            if got is not None:
                assert got == ticks


def _replay_reading(path: Path) -> int:
    return len(read_recording(path).ticks)


def _report_reading(path: Path) -> int:
    """The ticks the report's reading takes of a file (columns, the fields it shows)."""
    read = stream_recording(path, [], columns=True, only=ONLY, findings=False)
    return sum(len(b) if isinstance(b, Block) else 1 for b in read if isinstance(b, Block | Tick))


def _unfilled(data: dict[str, Any], gpus: int, processes: int) -> bool:
    """Whether the builder left slots unset (a claim past its content budget)."""
    filled = {c[0] for c in data["columns"]}
    return (gpus > 0 and f"gpu{gpus - 1}" not in filled) or (
        processes > 0 and f"proc{processes - 1}" not in filled
    )


@st.composite
def wide_journals(draw: st.DrawFn) -> dict[str, Any]:
    """A killed recorder's journal claiming ticks x slots x fields near or past their
    bounds, each alone and together: its first tick's GPUs and processes, the ticks a
    block of them may hold (one either side), the processes changing partway (widest
    late, when most ticks are joined), readings set again every few ticks (the JSON
    values a journal holds in all), its last line cut, gzip or not."""
    gpus = draw(st.sampled_from([0, 1, 8, 64, 642, 643]) | st.integers(0, 700))
    room = (MAX_BLOCK_WIDTH - cells(1, gpus, 0)) // cells(1, 0, 1)
    processes = draw(st.sampled_from([0, 1, 100]) | _around(room, 0) | st.integers(0, 1300))
    fit = MAX_BLOCK_CELLS // cells(1, gpus, processes)
    ticks = draw(TICK_COUNTS | _around(fit, 1))
    wider = draw(st.none() | st.tuples(st.integers(1, ticks), st.integers(0, 1300)))
    return {
        "gpus": gpus,
        "processes": processes,
        "ticks": ticks,
        "fields": draw(st.integers(1, 60)),
        "churn": draw(st.sampled_from([0, 1, 2, 60])),
        "wider": wider,
        "cut": draw(st.booleans()),
        "gzipped": draw(st.booleans()),
    }


def _journal_kept(lines: list[bytes], claim: dict[str, Any]) -> int:
    """The ticks a journal of these lines keeps, by the bounds docs/security.md gives:
    it ends at the first line cut, past a line's or all lines' JSON values, or whose
    tick makes the block joined so far wider or larger than a block may be."""
    gpus, wider, values = claim["gpus"], claim["wider"], 0
    for k, line in enumerate(lines[:MAX_BLOCK_TICKS]):
        values += json_values(line)
        processes = claim["processes"]
        if wider is not None and k >= wider[0]:
            processes = max(processes, wider[1])
        if (
            not line.endswith(b"\n")
            or json_values(line) > MAX_LINE_VALUES
            or values > MAX_JOURNAL_VALUES
            or cells(1, gpus, processes) > MAX_BLOCK_WIDTH
            or cells(k + 1, gpus, processes) > MAX_BLOCK_CELLS
        ):
            return k
    return min(len(lines), MAX_BLOCK_TICKS)


@fuzz_settings(16)
@given(wide_journals())
def test_a_journal_at_its_bounds_keeps_its_ticks_up_to_the_first_past_them_in_bounded_memory(
    claim: dict[str, Any],
) -> None:
    """A journal is joined into a block tick by tick: it keeps exactly the ticks before
    the first one past a bound (a tick refused leaves those before it standing), in a
    replay's reading and a report's, within the memory every fuzzed input is held to."""
    lines = block_shapes.journal_ticks(
        claim["ticks"],
        claim["gpus"],
        claim["processes"],
        claim["fields"],
        claim["churn"],
        claim["wider"],
    )
    if claim["cut"]:
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
    kept = _journal_kept(lines, claim)
    event("every tick kept" if kept == min(claim["ticks"], MAX_BLOCK_TICKS) else "cut short")
    wider = claim["wider"]
    shown = claim["processes"] if wider is None or kept <= wider[0] else wider[1]
    with tempfile.TemporaryDirectory() as folder:
        path = block_shapes.write_journaled(Path(folder) / "run.jsonl", lines, claim["gzipped"])
        with peak_below():
            ticks = read_recording(path).ticks
        assert len(ticks) == kept
        if ticks:
            assert len(ticks[-1].frame.gpus) == claim["gpus"]
            assert len(ticks[-1].frame.processes) == shown
        assert _report_reading(path) == kept  # the same joining, its memory held above


# -- Prometheus answers --------------------------------------------------------------------

NOW = 1_700_000_000.0
PROM_LABEL_VALUES = st.one_of(
    st.sampled_from(["n1", "n2", "10.0.0.5:9400", "0", "1", "7"]),
    st.text(max_size=20),
    st.none(),
    st.integers(),
    st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
)


@st.composite
def prom_series(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly what a server answers gputui's queries with (a DCGM series of a node's GPU,
    or one of the figures its aggregates tag), then broken here and there."""
    labels: dict[str, Any] = {
        "__name__": draw(st.sampled_from([REF, REF, *sorted(BY_NAME)[:12], "up"])),
        "gpu": draw(st.sampled_from(["0", "1", "2", "3"])),
        "Hostname": draw(st.sampled_from(["n1", "n2", "10.0.0.5:9400"])),
        "instance": "10.0.0.5:9400",
    }
    if draw(st.booleans()):
        labels[TAG] = draw(st.sampled_from(["seen", "live", "samples", "nodes", "gpus", "x"]))
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        name = draw(st.sampled_from(["gpu", "Hostname", "instance", TAG, "modelName", "UUID"]))
        labels[name] = draw(PROM_LABEL_VALUES)
    when = draw(
        st.sampled_from([NOW, NOW, NOW - 15.0, NOW - 600.0])
        | st.floats(allow_nan=True, allow_infinity=True)
    )
    value = draw(st.sampled_from(["1", "8", "55", "700", "1700000000"]) | NUMBERS)
    return {"metric": labels, "value": [when, value], "values": [[when, value]]}


@st.composite
def prom_answers(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 19))
    if kind == 0:
        return draw(st.text(max_size=60))
    if kind == 1:
        return json.dumps(
            {
                "status": "error",
                "errorType": draw(st.text(max_size=10)),
                "error": draw(st.text(max_size=30)),
            }
        )
    series = draw(st.lists(prom_series(), max_size=12))
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": series}})


def _as_matrix(answer: str) -> str:
    try:
        document = json.loads(answer)
        document["data"]["resultType"] = "matrix"
        for series in document["data"]["result"]:
            series.pop("value", None)
        return json.dumps(document)
    except (ValueError, KeyError, TypeError):
        return answer


@FUZZ
@given(st.lists(prom_answers(), min_size=1, max_size=6))
def test_a_random_prometheus_answer_gives_an_error_or_readings_in_range(answers: list[str]) -> None:
    calls: list[str] = []

    def fetcher(url: str, timeout: float, headers: dict[str, str]) -> str:
        answer = answers[len(calls) % len(answers)]
        calls.append(url)
        return _as_matrix(answer) if "query_range" in url else answer

    with peak_below():
        source = PrometheusSource("http://prom:9090", clock=lambda: NOW, fetcher=fetcher, env={})
        try:
            devices = source.open()
        except SourceUnavailable as exc:
            assert str(exc) and "\x1b" not in str(exc)
            return
        for device in devices:
            assert_clean_text(device)
        for frame in (*source.backfill(), source.read()):
            _check_frame(frame)
