"""Remote nodes over Prometheus endpoints served on 127.0.0.1: healthy, hanging, garbage."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from gputui.advisor import make_monitor
from gputui.cli import main
from gputui.core import clock_events as ce
from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import SourceInfo
from gputui.core.names import NoteKind, SourceKind
from gputui.exporters.prometheus import GputuiCollector
from gputui.launch import make_app
from gputui.sources.remote import RemoteSource, ScrapeError, fetch, parse_exposition
from gputui.ui.lines import LineView
from tests.factories import demo_monitor
from tests.servers import answer, dcgm_payload, serve


def hang(request: BaseHTTPRequestHandler) -> None:
    time.sleep(30)


@pytest.fixture
def servers() -> Iterator[dict[str, str]]:
    started = {
        "healthy": serve(answer(dcgm_payload("gpu-node-a"))),
        "k8s": serve(answer(dcgm_payload("gpu-node-b", lowercase=True))),
        "hang": serve(hang),
        "garbage": serve(answer(b"\x00\xff<html>this is not metrics{{{\n" * 1000)),
    }
    yield {name: url for name, (url, _) in started.items()}
    for _, server in started.values():
        server.shutdown()


def test_parse_dcgm_exporter_payload() -> None:
    host, gpus = parse_exposition(dcgm_payload("n1").decode())
    assert host == "n1" and sorted(gpus) == [0, 1]
    assert gpus[0].values["DCGM_FI_DEV_GPU_TEMP"] == 90
    assert "DCGM_FI_DEV_FAN_SPEED" not in gpus[0].values  # DCGM's blank: not supported


def test_healthy_node_stays_live_beside_a_hanging_and_a_garbage_one(
    servers: dict[str, str],
) -> None:
    source = RemoteSource(
        [servers["healthy"], servers["hang"], servers["garbage"]],
        timeout_s=0.5,
        clock=ManualClock(1e9),
    )
    devices = source.open()
    assert [(d.node, d.node_index) for d in devices] == [("gpu-node-a", 0), ("gpu-node-a", 1)]
    assert devices[0].uuid == "GPU-0b1c8d6e-aaaa-bbbb-cccc-000000000000"
    assert devices[0].driver_version == "550.54.15"
    for _ in range(3):
        started = time.monotonic()
        frame = source.read()
        assert time.monotonic() - started < 1.5  # the hanging node costs at most the deadline
        assert [s.index for s in frame.gpus] == [0, 1]
        s = frame.gpus[0]
        assert s.temp_c == 90 and s.sm_clock_mhz == 1380 and s.fan_pct is None
        assert s.clock_reasons == ce.SW_THERMAL | ce.HW_THERMAL  # the old THROTTLE name
        assert s.mem_used == 61164 * 1024**2 and s.mem_total == (61164 + 19891) * 1024**2
        assert s.sm_activity == pytest.approx(81.2361)
        nodes = (NoteKind.NODE_DOWN, NoteKind.NODE_EMPTY)
        down = [n.text for n in frame.notes if n.kind in nodes]
        assert len(down) == 2
        assert any("no answer within" in n or "no complete answer within" in n for n in down)
        assert any("not a Prometheus exposition" in n or "not text" in n for n in down)
    source.close()


def test_two_nodes_side_by_side_and_lowercase_hostname(servers: dict[str, str]) -> None:
    source = RemoteSource([servers["healthy"], servers["k8s"]], timeout_s=1.0)
    devices = source.open()
    assert [d.node for d in devices] == ["gpu-node-a"] * 2 + ["gpu-node-b"] * 2
    assert [d.index for d in devices] == [0, 1, 2, 3]
    assert len(source.read().gpus) == 4
    source.close()


def test_gputui_export_feeds_a_remote_gputui(servers: dict[str, str]) -> None:
    """`gputui export` on one node, `gputui --source` on another: limits come across."""
    monitor = demo_monitor("thermal", seconds=60, gpus=2)
    from prometheus_client import generate_latest
    from prometheus_client.registry import CollectorRegistry

    registry = CollectorRegistry()
    registry.register(GputuiCollector(monitor, hostname="sim-node"))
    url, server = serve(answer(generate_latest(registry)))
    try:
        remote = RemoteSource([url], timeout_s=1.0, clock=ManualClock(1e9))
        devices = remote.open()
        assert devices[0].temp_slowdown_c == 89.0 and devices[0].max_sm_clock_mhz == 1980
        # the advisor runs on remote readings where the metrics allow
        remote_monitor = make_monitor(devices, Config(), SourceInfo("REMOTE", SourceKind.REMOTE))
        clock2 = ManualClock(1e9)
        remote._clock = clock2
        for _ in range(20):
            remote_monitor.ingest(remote.read())
            clock2.advance(1.0)
        assert {f.rule for f in remote_monitor.findings} == {"thermal-throttle"}
        remote.close()
    finally:
        server.shutdown()


def test_two_endpoints_on_one_host_stay_apart(servers: dict[str, str]) -> None:
    second, server = serve(answer(dcgm_payload("gpu-node-a")))
    try:
        source = RemoteSource([servers["healthy"], second], timeout_s=1.0)
        nodes = {d.node for d in source.open()}
        assert len(nodes) == 2 and all((n or "").startswith("gpu-node-a@127.0.0.1:") for n in nodes)
        source.close()
    finally:
        server.shutdown()


def test_a_node_that_comes_up_after_the_start_joins(servers: dict[str, str]) -> None:
    """A node down when gputui started (rebooting, its exporter not up yet) and answering
    later was never read: its "no GPUs" note went and nothing took its place, a false
    all-clear. It joins with its GPUs, numbered after the others, and is judged."""
    late: list[bytes] = []

    def later(request: BaseHTTPRequestHandler) -> None:
        if not late:
            request.send_error(503)
            return
        answer(late[0])(request)

    url, server = serve(later)
    try:
        source = RemoteSource([servers["healthy"], url], timeout_s=1.0)
        devices = source.open()
        frame = source.read()
        assert any(n.kind is NoteKind.NODE_EMPTY for n in frame.notes) and not frame.joined
        late.append(dcgm_payload("gpu-node-c"))
        frame = source.read()
        assert [d.node for d in frame.joined] == ["gpu-node-c"] * len(frame.joined)
        assert [d.index for d in frame.joined] == list(
            range(len(devices), len(devices) + len(frame.joined))
        )
        assert {s.index for s in frame.gpus} >= {d.index for d in frame.joined}
        assert not any(n.kind is NoteKind.NODE_EMPTY for n in frame.notes)
        monitor = make_monitor(devices, Config(), SourceInfo("REMOTE", SourceKind.REMOTE, ""))
        monitor.ingest(frame)
        assert len(monitor.devices) == len(devices) + len(frame.joined)
        assert not source.read().joined  # joined once
        source.close()
    finally:
        server.shutdown()


def test_urls_are_shown_with_their_credentials_masked() -> None:
    from gputui.cli.opening import source_detail
    from gputui.cli.parser import parse_command_line

    args, _ = parse_command_line(
        ["--source", "http://user:s3cret@a:9400/metrics", "--source", "http://b/x?token=abc"]
    )
    shown = source_detail(args) or ""
    assert "s3cret" not in shown and "abc" not in shown and "a:9400/metrics" in shown
    args, _ = parse_command_line(["--prometheus", "https://u:s3cret@prom:9090"])
    assert "s3cret" not in (source_detail(args) or "")


def test_snapshot_command_with_sources(
    servers: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["snapshot", "--source", servers["healthy"], "--source", servers["garbage"]]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["source"]["label"] == "REMOTE"
    assert [d["node"] for d in document["devices"]] == ["gpu-node-a", "gpu-node-a"]


def test_no_source_answers(servers: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "--source", servers["garbage"]]) == 3
    assert "no GPUs could be read" in capsys.readouterr().err


async def test_app_shows_two_nodes_grouped(servers: dict[str, str]) -> None:
    source = RemoteSource([servers["healthy"], servers["k8s"], servers["garbage"]], timeout_s=0.5)
    app = make_app(source, source.open(), Config(interval_s=0.25))
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause(1.0)
        gpus = app.query_one("#gpus", LineView).plain
        assert "── gpu-node-a" in gpus and "── gpu-node-b" in gpus
        assert "2 nodes" in app.query_one("#header", LineView).plain
        assert "1 node down" in app.query_one("#header", LineView).plain
        assert "cannot run" in app.query_one("#advisor", LineView).plain
    if app.sampler is not None:
        app.sampler.stop()
    source.close()


def test_doctor_over_a_source_says_what_it_cannot_check(
    servers: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        [
            "doctor",
            "--source",
            servers["healthy"],
            "--source",
            servers["garbage"],
            "--duration",
            "1",
        ]
    )
    out = " ".join(capsys.readouterr().out.split())  # the report wraps at the console width
    assert status in (0, 1, 2, 4)
    assert "these rules cannot run" in out and "gave no GPUs yet" in out
    assert "CUDA n/a" in out  # an exporter does not say; never "None"


def _gzipped(body: bytes) -> Callable[[BaseHTTPRequestHandler], None]:
    def handle(request: BaseHTTPRequestHandler) -> None:
        asked = request.headers.get("Accept-Encoding", "")
        packed = gzip.compress(body) if "gzip" in asked else body
        request.send_response(200)
        request.send_header("Content-Type", "text/plain; version=0.0.4")
        if "gzip" in asked:
            request.send_header("Content-Encoding", "gzip")
        request.send_header("Content-Length", str(len(packed)))
        request.end_headers()
        request.wfile.write(packed)

    return handle


def test_a_compressed_answer_is_read_and_its_size_capped_once_decompressed() -> None:
    page = dcgm_payload("node-z")
    url, server = serve(_gzipped(page))
    try:
        assert fetch(url, 2.0) == page.decode()
    finally:
        server.shutdown()
    # a gzip bomb: 11 MB of text in a few kilobytes on the wire
    bomb = b"#" * (11 * 1024 * 1024)
    url, server = serve(_gzipped(bomb))
    try:
        with pytest.raises(ScrapeError, match="larger than 10 MB once decompressed"):
            fetch(url, 5.0)
    finally:
        server.shutdown()
