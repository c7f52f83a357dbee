"""Hostile input on every surface: the TUI, doctor, snapshots, the SVG, recordings, the
exporter, replay files, remote pages, files on disk and the process's own lifecycle.

Each test is one finding of the attack report in issue 14, failing before its fix."""

from __future__ import annotations

import html
import json
import os
import re
import stat
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from gputui import cli
from gputui.advisor import make_monitor
from gputui.cli import opening
from gputui.core.config import Config
from gputui.core.model import SourceInfo
from gputui.core.names import SourceKind
from gputui.exporters.files import write_atomic
from gputui.exporters.prometheus import GputuiCollector
from gputui.formats import recording as recording_format
from gputui.formats import values as values_format
from gputui.formats.recording import RecordingError, read_recording
from gputui.launch import make_app
from gputui.sources import remote
from gputui.sources.remote import MAX_GPUS_PER_NODE, RemoteSource, fetch, parse_exposition
from gputui.ui.lines import LineView
from tests.hostile import CORPUS, FORBIDDEN, SECRET_VALUES, HostileSource, everything
from tests.servers import answer, dcgm_payload, serve

# Markup first: the GPU names (one per GPU, three GPUs) are where markup used to crash.
_FIRST = ("rich markup close", "rich markup link", "rich markup style")
TEXTS = [CORPUS[k] for k in _FIRST] + [v for k, v in CORPUS.items() if k not in _FIRST]


def _assert_inert(text: str, where: str) -> None:
    for char in FORBIDDEN:
        assert char not in text, f"{char!r} reached {where}"


def _hostile(clock: Callable[[], float]) -> HostileSource:
    return HostileSource(("thermal", "starved", "vram"), TEXTS, clock=clock)


@pytest.fixture
def hostile_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command's source is the hostile node."""
    monkeypatch.setattr(
        opening, "make_source", lambda args, clock=time.time, readings=None: _hostile(clock)
    )


# -- the TUI -------------------------------------------------------------------------
async def test_tui_draws_hostile_names_and_commands_inert(tmp_path: Path) -> None:
    source = _hostile(time.time)
    devices = source.open()
    app = make_app(source, devices, Config(), snapshot_dir=tmp_path, live=False)
    for _ in range(40):
        app.monitor.ingest(source.read())
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        for _ in range(3):  # every GPU in the detail panel, its subtitle markup included
            await pilot.press("right")
            await pilot.pause()
        shown = "\n".join(v.plain for v in app.query(LineView) if v.display)
        _assert_inert(shown, "the screen")
        assert "␛[31mred" in shown or "␛[2J" in shown  # made visible, not hidden
        app.notify(everything(), title="hostile")  # a toast with outside text
        await pilot.pause()
        await pilot.press("s")  # the snapshot key: JSON, Markdown, SVG and the HTML report
        await pilot.pause()
        assert app.is_running
    files = {p.suffix: p.read_text() for p in tmp_path.iterdir()}
    assert set(files) == {".json", ".md", ".svg", ".html"}
    for suffix, text in files.items():
        _assert_inert(text, suffix)
        assert not any(secret in text for secret in SECRET_VALUES), suffix
    ET.fromstring(files[".svg"])  # valid XML
    assert "url(" not in files[".svg"].split("<style", 1)[1].split("</style>", 1)[0]
    for path in tmp_path.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def _drawn(app: object) -> str:
    svg = app.export_screenshot()  # type: ignore[attr-defined]
    return html.unescape("".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg))).replace(
        "\xa0", " "
    )


@pytest.mark.parametrize("name", ["[/]", "\\[/]", "\\\\[x]", "[b]bold[/b]"])
async def test_a_markup_escape_in_a_gpu_name_shows_as_written_in_the_title(name: str) -> None:
    """A GPU named with a markup escape ("\\[/]") showed with its backslash doubled in the
    detail's title (issue 27): titles are plain content now, never markup."""
    source = HostileSource(("healthy",), [name], clock=time.time)
    app = make_app(source, source.open(), Config(), live=False)
    app.monitor.ingest(source.read())
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        drawn = _drawn(app)
    assert f"GPU 0 {name} · " in drawn


async def test_ascii_mode_draws_hostile_text_in_ascii() -> None:
    """The sanitiser makes escapes visible (␛, <U+202E>...): on an ASCII terminal those
    glyphs, and any letter it cannot draw, become '?' (issue 27)."""
    source = _hostile(time.time)
    app = make_app(source, source.open(), Config(), live=False, ascii=True)
    for _ in range(5):
        app.monitor.ingest(source.read())
    async with app.run_test(size=(160, 50)) as pilot:
        for key in ("right", "v", "down"):
            await pilot.press(key)
        await pilot.pause()
        drawn = _drawn(app)
    assert drawn.isascii(), {c for c in drawn if not c.isascii()}
    assert "?[31mred" in drawn or "?[2J" in drawn


# -- doctor, snapshot, record ---------------------------------------------------------
def test_doctor_prints_hostile_text_inert(
    hostile_cli: None, capsys: pytest.CaptureFixture[str]
) -> None:
    status = cli.main(["doctor", "--demo", "--duration", "2", "--warmup", "60"])
    out, err = capsys.readouterr()
    assert status in (0, 1, 2) and "Traceback" not in err
    _assert_inert(out + err, "doctor")


def test_doctor_json_is_valid_and_masks_secrets(
    hostile_cli: None, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.main(["doctor", "--demo", "--json", "--duration", "2", "--warmup", "60"])
    out = capsys.readouterr().out
    document = json.loads(out)
    text = json.dumps(document, ensure_ascii=False)
    _assert_inert(text, "doctor --json")
    assert not any(secret in text for secret in SECRET_VALUES)


@pytest.mark.parametrize("name", ["state.md", "state.json"])
def test_snapshot_files_are_inert_and_masked(hostile_cli: None, tmp_path: Path, name: str) -> None:
    target = tmp_path / name
    assert cli.main(["snapshot", "--demo", "-o", str(target)]) == 0
    text = target.read_text()
    _assert_inert(text, name)
    assert not any(secret in text for secret in SECRET_VALUES)
    if name.endswith(".md"):
        assert "<img" not in text and "](javascript" not in text
        table = [line for line in text.splitlines() if line.startswith("| ")]
        # header + rule + one row per GPU, header + rule + one row per process: no row split
        assert len(table) == (2 + 3) + (2 + 3)


def test_keep_secrets_keeps_them(hostile_cli: None, tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    assert cli.main(["snapshot", "--demo", "--keep-secrets", "-o", str(target)]) == 0
    assert "hunter2" in target.read_text()


def test_recording_masks_secrets_and_replays_inert(hostile_cli: None, tmp_path: Path) -> None:
    target = tmp_path / "run.jsonl"
    assert cli.main(["record", "--demo", "-o", str(target), "--duration", "1"]) == 0
    text = target.read_text()
    _assert_inert(text, "the recording")
    assert not any(secret in text for secret in SECRET_VALUES)
    recording = read_recording(target)
    assert recording.ticks and "***" in (recording.ticks[-1].frame.processes[0].command or "")


def test_exporter_labels_are_inert() -> None:
    source = _hostile(time.time)
    devices = source.open()
    monitor = make_monitor(devices, Config(), SourceInfo("SIMULATED", SourceKind.SIMULATED))
    monitor.ingest(source.read())
    registry = CollectorRegistry()
    registry.register(GputuiCollector(monitor, hostname=CORPUS["OSC title"]))
    text = generate_latest(registry).decode()
    _assert_inert(text, "the exposition")
    assert list(text_string_to_metric_families(text))  # still parses


# -- files on disk --------------------------------------------------------------------
def test_record_refuses_to_write_through_a_symlink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    victim.chmod(0o644)
    link = tmp_path / "run.jsonl"
    link.symlink_to(victim)
    assert cli.main(["record", "--demo", "-o", str(link), "--duration", "1"]) == 1
    assert victim.read_text() == "keep me" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert "symbolic link" in capsys.readouterr().err


def test_record_never_overwrites_a_file_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    existing = tmp_path / "run.jsonl"
    existing.write_text("last night's run")
    assert cli.main(["record", "--demo", "-o", str(existing), "--duration", "1"]) == 1
    assert existing.read_text() == "last night's run"
    assert "exists: --force replaces it" in capsys.readouterr().err
    args = ["record", "--demo", "-o", str(existing), "--duration", "1", "--force"]
    assert cli.main(args) == 0
    assert read_recording(existing).ticks
    assert stat.S_IMODE(existing.stat().st_mode) == 0o600


def test_record_never_writes_through_a_hard_link_or_chmods_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    victim.chmod(0o644)
    link = tmp_path / "run.jsonl"
    os.link(victim, link)
    for force in ((), ("--force",)):
        assert cli.main(["record", "--demo", "-o", str(link), "--duration", "1", *force]) == 1
    assert victim.read_text() == "keep me" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert "other links" in capsys.readouterr().err


@pytest.mark.parametrize(
    "option",
    [
        ("--rotate-mb", "nan"),
        ("--rotate-mb", "inf"),
        ("--rotate-mb", "-1"),
        ("--keep", "0"),
        ("--keep", "-3"),
        ("--keep", "1000000"),
        ("--duration", "nan"),
        ("--duration", "0"),
        ("--sync", "-1"),
        ("--sync", "1e9"),
        ("--sync", "nan"),
        ("--block", "0"),
        ("--block", "3601"),
    ],
)
def test_record_rotate_keep_and_duration_are_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: tuple[str, str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["record", "--demo", "-o", str(tmp_path / "r.jsonl"), *option])
    assert exited.value.code == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert f"argument {option[0]}" in err and "must be" in err and "Traceback" not in err
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["replay", "r.jsonl", "--speed", "0"],
        ["replay", "r.jsonl", "--speed", "1e9"],
        ["replay", "r.jsonl", "--speed", "nan"],
        ["doctor", "--demo", "--warmup", "1e12"],
        ["doctor", "--demo", "--warmup", "-1"],
        ["doctor", "--demo", "--samples", "0"],
        ["doctor", "--demo", "--samples", "1000000000"],
        ["doctor", "--demo", "--duration", "inf"],
        ["snapshot", "--demo", "--samples", "-5"],
        ["doctor", "--config", "--demo", "--workers", "-1"],
        ["--demo", "--interval", "nan"],
        ["--demo", "--interval", "1e-9"],
    ],
)
def test_every_number_on_the_command_line_is_bounded(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "must be" in err and "Traceback" not in err


@pytest.mark.parametrize("start", ["inf", "nan", "1e400", "25:00", "\x1b[2J"])
def test_replay_start_outside_the_recording_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], start: str
) -> None:
    target = tmp_path / "r.jsonl"
    assert cli.main(["record", "--demo", "-o", str(target), "--duration", "2"]) == 0
    capsys.readouterr()
    assert cli.main(["replay", str(target), "--start", start]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "--start wants" in err and "\x1b" not in err


@pytest.mark.parametrize("listen", ["127.0.0.1:70000", "127.0.0.1:99999999999999999999"])
def test_export_port_out_of_range_is_refused(
    capsys: pytest.CaptureFixture[str], listen: str
) -> None:
    assert cli.main(["export", "--demo", "--listen", listen]) == cli.EXIT_USAGE
    assert "--listen wants HOST:PORT" in capsys.readouterr().err


def test_a_directory_at_a_rotated_name_names_itself_and_the_recording_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "run.jsonl"
    planted = tmp_path / "run.1.jsonl"
    planted.mkdir()
    args = ["record", "--demo", "-o", str(target), "--duration", "3", "--interval", "0.25"]
    assert cli.main([*args, "--rotate-mb", "0.001", "--keep", "2"]) == 0
    err = capsys.readouterr().err
    assert f"{planted} is a directory: no more rotation, recording on in {target}" in err
    assert planted.is_dir() and len(read_recording(target).ticks) >= 8


def test_snapshot_replaces_a_symlink_instead_of_writing_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "state.json"
    link.symlink_to(victim)
    write_atomic(link, "{}")
    assert victim.read_text() == "keep me" and not link.is_symlink()


def _drain(read_end: Callable[[], int], into: list[bytes]) -> threading.Thread:
    """A reader on a pipe's or FIFO's other end (opened in its thread: a FIFO's open waits
    for its writer), as `cat` or `less` would be."""

    def run() -> None:
        with os.fdopen(read_end(), "rb") as stream:
            into.append(stream.read())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_fifo_or_a_standard_stream_is_written_into_never_replaced(tmp_path: Path) -> None:
    """`-o` a FIFO a reader waits on, or /dev/stdout (a system link to the process's fd):
    the bytes go through and the stream stays what it was. Replacing it with a file made
    the reader wait for ever, and (as root) /dev/stdout a regular file for everyone."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _drain(lambda: os.open(fifo, os.O_RDONLY), got)
    write_atomic(fifo, "snapshot one")
    reader.join(5)
    assert got == [b"snapshot one"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    read_end, write_end = os.pipe()
    through = Path(f"/proc/self/fd/{write_end}")  # what /dev/stdout leads to
    if not through.is_symlink():
        os.close(read_end)
        os.close(write_end)
        pytest.skip("no /proc/self/fd on this system")
    got = []
    reader = _drain(lambda: read_end, got)
    write_atomic(through, "snapshot two")
    os.close(write_end)
    reader.join(5)
    assert got == [b"snapshot two"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no temporary left


def test_record_into_a_fifo_writes_every_tick_and_no_report_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pipe cannot tell its position: recording into one wrote a header, then failed
    with "Illegal seek" at the first block; a report command for it would read nothing."""
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _drain(lambda: os.open(fifo, os.O_RDONLY), got)
    args = ["record", "--demo", "-o", str(fifo), "--duration", "1.2", "--interval", "0.25"]
    assert cli.main(args) == 0
    reader.join(5)
    err = capsys.readouterr().err
    recorded = re.search(r"recorded (\d+) ticks", err)
    assert recorded and "its report" not in err and "Illegal seek" not in err, err
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(got[0])
    assert len(read_recording(copy).ticks) == int(recorded.group(1)) >= 3


def test_a_killed_snapshot_leaves_no_temporary_file_behind(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    # what a writer killed with SIGKILL mid-write leaves: a temporary file of a dead pid
    dead = 2**22 + 12345  # above pid_max's default: no such process
    orphan = tmp_path / f".state.json.gputui-tmp-{dead}.abcd1234"
    orphan.write_text("half")
    write_atomic(target, "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_record_on_a_full_disk_says_so_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    assert cli.main(["record", "--demo", "-o", "/dev/full", "--duration", "1"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "No space left" in err


# -- replay files ---------------------------------------------------------------------
HEADER = {
    "schema": "gputui.record",
    "version": 2,
    "gputui_version": "x",
    "source": {"label": "NVML", "kind": "live", "detail": None},
    "devices": [{"index": 0, "name": "GPU"}],
    "interval_s": 1.0,
}


def _tick(time_value: object, **gpu: object) -> str:
    return json.dumps({"frame": {"time": time_value, "gpus": [{"index": 0, **gpu}]}})


HOSTILE_FILES: dict[str, Callable[[Path], object]] = {
    "corrupt gzip": lambda p: p.write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(300)),
    "wrong types": lambda p: p.write_text(
        json.dumps(HEADER) + "\n" + _tick(1.0, temp_c="hot") + "\n"
    ),
    "deep nesting": lambda p: p.write_text(
        json.dumps(HEADER) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n" + _tick(2.0) + "\n"
    ),
    "NaN time": lambda p: p.write_text(json.dumps(HEADER) + '\n{"frame":{"time":NaN,"gpus":[]}}\n'),
    "1e300 time": lambda p: p.write_text(json.dumps(HEADER) + "\n" + _tick(1e300) + "\n"),
    "time backwards": lambda p: p.write_text(
        json.dumps(HEADER) + "\n" + _tick(10.0) + "\n" + _tick(5.0) + "\n"
    ),
    "interval 0": lambda p: p.write_text(json.dumps({**HEADER, "interval_s": 0}) + "\n"),
    "interval -5": lambda p: p.write_text(json.dumps({**HEADER, "interval_s": -5}) + "\n"),
    "a million GPUs": lambda p: p.write_text(
        json.dumps({**HEADER, "devices": [{"index": i, "name": "g"} for i in range(10**6)]}) + "\n"
    ),
    # an integer no reading can be: it passed validation and crashed the screen (issue 27)
    "mem_used 10^400": lambda p: p.write_text(
        json.dumps(HEADER) + "\n" + _tick(1.0, mem_used=10**400) + "\n"
    ),
    "power 1e300": lambda p: p.write_text(
        json.dumps(HEADER) + "\n" + _tick(1.0, power_w=1e300) + "\n"
    ),
    "a 20 MiB line": lambda p: p.write_text(
        json.dumps(HEADER) + "\n" + '{"frame": "' + "x" * (20 * 2**20) + '"}\n'
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE_FILES))
def test_hostile_replay_files_are_refused_clearly(
    tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / (f"run{CORPUS['CSI colour']}.jsonl")  # a hostile file name too
    HOSTILE_FILES[case](path)
    with pytest.raises(RecordingError):
        recording = read_recording(path)
        if not recording.ticks:
            raise RecordingError("no frames")
    assert cli.main(["replay", str(path)]) == cli.EXIT_NO_SOURCE
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("gputui: ")
    _assert_inert(err, "stderr")


def test_a_recording_longer_than_the_tick_bound_is_cut_with_a_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recording_format, "MAX_TICKS", 5)
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join([json.dumps(HEADER), *(_tick(float(t)) for t in range(8))]) + "\n")
    recording = read_recording(path)
    assert len(recording.ticks) == 5
    assert recording.notices == (f"{path}: more than 5 ticks; the rest was left out",)


def test_a_frame_with_too_many_processes_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(values_format, "MAX_PROCESSES", 3)
    frame = {"time": 1.0, "gpus": [{"index": 0}], "processes": [{"pid": p} for p in range(4)]}
    path = tmp_path / "crowded.jsonl"
    path.write_text(json.dumps(HEADER) + "\n" + json.dumps({"frame": frame}) + "\n")
    with pytest.raises(RecordingError, match="more than 1024 GPUs or 3 processes"):
        read_recording(path)


# -- remote pages ---------------------------------------------------------------------
def test_a_page_claiming_100000_gpus_is_refused_not_allocated() -> None:
    lines = [f'DCGM_FI_DEV_GPU_TEMP{{gpu="{i}",Hostname="n"}} 50' for i in range(100_000)]
    from gputui.sources.remote import ScrapeError

    with pytest.raises(ScrapeError, match=f"more than {MAX_GPUS_PER_NODE} GPUs"):
        parse_exposition("\n".join(lines) + "\n")


def test_a_page_past_the_series_bound_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote, "MAX_SERIES", 50)
    lines = [f'DCGM_FI_DEV_GPU_TEMP{{gpu="0",Hostname="n",x="{i}"}} 50' for i in range(51)]
    with pytest.raises(remote.ScrapeError, match="more than 50 series: refused"):
        parse_exposition("\n".join(lines) + "\n")


def test_a_gpu_claiming_too_many_mig_instances_is_refused() -> None:
    lines = [
        f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="0",Hostname="n",GPU_I_ID="{i}"}} 0.5'
        for i in range(remote.MAX_MIG_PER_GPU + 1)
    ]
    with pytest.raises(remote.ScrapeError, match="MIG instances on GPU 0: refused"):
        parse_exposition("\n".join(lines) + "\n")


def test_label_values_are_cut_at_their_bound() -> None:
    name = "A" * (remote.MAX_LABEL_CHARS * 8)
    _host, gpus = parse_exposition(f'DCGM_FI_DEV_GPU_TEMP{{gpu="0",modelName="{name}"}} 50\n')
    assert gpus[0].labels["modelName"] == "A" * remote.MAX_LABEL_CHARS


def test_unicode_digits_and_huge_numbers_are_not_gpu_numbers() -> None:
    page = (
        'DCGM_FI_DEV_GPU_TEMP{gpu="\u0663",Hostname="n"} 50\n'
        'DCGM_FI_DEV_GPU_TEMP{gpu="18446744073709551616",Hostname="n"} 50\n'
        'DCGM_FI_DEV_GPU_TEMP{gpu="1",Hostname="n"} 51\n'
        'DCGM_FI_DEV_GPU_TEMP{gpu="1",Hostname="n"} 99\n'  # a duplicate: the first is kept
    )
    _host, gpus = parse_exposition(page)
    assert list(gpus) == [1]
    assert gpus[1].values["DCGM_FI_DEV_GPU_TEMP"] == 51 and gpus[1].duplicates == 1


def test_hostile_labels_reach_no_surface_raw() -> None:
    text = everything().replace(CORPUS["lone surrogate"], "")  # a page must be UTF-8
    # escaped as the exposition format escapes label values: the parser hands them back raw
    label = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    page = dcgm_payload("node").decode().replace('modelName="', f'modelName="{label}')
    page = page.replace('Hostname="node"', f'Hostname="{CORPUS["CSI clear screen"]}"')
    url, server = serve(answer(page.encode()))
    try:
        devices = RemoteSource([url], timeout_s=2.0).open()
        for device in devices:
            _assert_inert(f"{device.name} {device.node}", "a remote device")
    finally:
        server.shutdown()


@pytest.fixture
def dripping() -> Iterator[str]:
    def drip(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.end_headers()
        for _ in range(120):  # one byte a second, for two minutes
            request.wfile.write(b"#")
            request.wfile.flush()
            time.sleep(1.0)

    url, server = serve(drip)
    yield url
    server.shutdown()


def test_a_dripping_endpoint_is_cut_at_the_deadline(dripping: str) -> None:
    from gputui.sources.remote import ScrapeError

    started = time.monotonic()
    with pytest.raises(ScrapeError, match="no complete answer within 1 s"):
        fetch(dripping, 1.0)
    assert time.monotonic() - started < 2.0


def test_redirects_to_another_port_are_not_followed() -> None:
    elsewhere, other = serve(answer(dcgm_payload("evil")))

    def redirect(request: BaseHTTPRequestHandler) -> None:
        request.send_response(302)
        request.send_header("Location", elsewhere)
        request.end_headers()

    url, server = serve(redirect)
    try:
        from gputui.sources.remote import ScrapeError

        with pytest.raises(ScrapeError, match="redirected to another host or port"):
            fetch(url, 2.0)
    finally:
        server.shutdown()
        other.shutdown()


def test_a_redirect_loop_is_said_as_one_not_as_a_timeout() -> None:
    """Issue 52: a redirect loop was reported as "no complete answer within 30 s" after
    0.3 s. After two redirects it is refused as what it is, at once."""

    def loop(request: BaseHTTPRequestHandler) -> None:
        request.send_response(302)
        request.send_header("Location", request.path + "x")
        request.end_headers()

    url, server = serve(loop)
    try:
        from gputui.sources.remote import ScrapeError

        started = time.monotonic()
        with pytest.raises(ScrapeError, match=r"redirected more than 2 times \(a loop\?\)"):
            fetch(url, 30.0)
        assert time.monotonic() - started < 5.0
    finally:
        server.shutdown()


def test_a_remote_node_without_gpus_is_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    page = b"# HELP up up\n# TYPE up gauge\nup 1\n"
    url, server = serve(answer(page))
    try:
        assert cli.main(["doctor", "--source", url, "--duration", "0"]) == cli.EXIT_NO_SOURCE
    finally:
        server.shutdown()
    assert "Traceback" not in capsys.readouterr().err


# -- the exporter's bind ----------------------------------------------------------------
def test_the_exporter_will_not_listen_beyond_loopback_unless_told(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["export", "--demo", "--listen", "0.0.0.0:0"]) == cli.EXIT_USAGE
    assert "--allow-remote" in capsys.readouterr().err


# -- the process's lifecycle ---------------------------------------------------------
def test_replay_without_a_terminal_says_so_instead_of_waiting_for_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A replay in a script or cron hung for ever, painting escape codes into its log."""
    target = tmp_path / "r.jsonl"
    assert cli.main(["record", "--demo", "-o", str(target), "--duration", "1"]) == 0
    capsys.readouterr()
    assert cli.main(["replay", str(target)]) == cli.EXIT_NO_TERMINAL == cli.EXIT_USAGE
    captured = capsys.readouterr()
    assert "needs a terminal" in captured.err and "gputui report" in captured.err
    assert "\x1b" not in captured.err + captured.out


def test_plain_gputui_without_a_terminal_says_so_and_exits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # pytest's captured stdout is not a terminal: as in cron or `ssh host gputui > log`
    assert cli.main(["--demo"]) == cli.EXIT_NO_TERMINAL
    err = capsys.readouterr().err
    assert "needs a terminal" in err and "gputui snapshot" in err and "\x1b" not in err


def test_an_app_that_crashes_never_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual's run() gives None when the app died of an exception; its return code
    says 1 then. The CLI's status follows the return code, never a default 0."""
    from gputui.launch import make_demo_app, run_owned
    from gputui.ui.app import GpuTuiApp

    app = make_demo_app(None, 2)
    monkeypatch.setattr(app, "run", lambda: None)
    monkeypatch.setattr(GpuTuiApp, "return_code", property(lambda self: 1))
    assert run_owned(app) == 1


def test_a_panic_such_as_a_dead_input_thread_never_exits_0(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Textual's driver panics the app when its input thread dies (as it did on Ctrl+Z
    then fg), and panic() leaves Textual's return code at 0."""
    from gputui.launch import make_demo_app, run_owned

    app = make_demo_app(None, 2)
    real_run = app.run

    async def died(pilot: object) -> None:
        app.panic("the input thread died")

    monkeypatch.setattr(app, "run", lambda: real_run(headless=True, auto_pilot=died))
    assert run_owned(app) == 1 and app.panicked


def test_remote_pages_are_not_read_with_urlopen() -> None:
    """urllib follows redirects anywhere and has no whole-request deadline."""
    source = Path(cli.__file__).parent.parent / "sources" / "remote.py"
    assert not re.search(r"urllib\.request|urlopen", source.read_text())


def test_a_link_planted_in_dev_shm_is_never_written_through(tmp_path: Path) -> None:
    """/dev/shm is under /dev but anyone may write there: a link another user plants there
    (pointing at a file of yours) is replaced, as anywhere else, never followed the way
    /dev/stdout is."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.stat(shm).st_mode & stat.S_IWOTH:
        pytest.skip("no world-writable /dev/shm here")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = shm / f"gputui-test-{os.getpid()}.json"
    link.symlink_to(victim)
    try:
        write_atomic(link, "{}")
        assert victim.read_text() == "keep me" and not link.is_symlink()
    finally:
        link.unlink(missing_ok=True)


def test_a_fifo_another_user_left_is_not_written_into(tmp_path: Path) -> None:
    """A FIFO is written into as a stream only when it is the user's own (or the
    system's): one a stranger left at the output path would read the snapshot."""
    from gputui.exporters.files import stream_target

    if os.getuid() != 0:
        pytest.skip("making a FIFO of another user needs root")
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    os.mkfifo(mine)
    os.mkfifo(theirs)
    os.chown(theirs, 65534, 65534)
    assert stream_target(mine) and not stream_target(theirs)
    assert stream_target(Path("/dev/null"))
