"""Fault injection: gputui keeps running, says what happened, and loses nothing recorded."""

from __future__ import annotations

import math
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import Frame, GpuSample, HostSample, ProcessSample
from gputui.core.names import NoteKind
from gputui.exporters.prometheus import (
    HEADER_TIMEOUT_S,
    MAX_CONNECTIONS,
    MAX_PENDING,
    GputuiCollector,
    serve_metrics,
)
from gputui.launch import make_app
from gputui.sources.host import HostReader
from gputui.sources.nvml import NvmlSource
from gputui.sources.remote import RemoteSource
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from gputui.ui.lines import LineView
from gputui.ui.messages import FrameReady
from tests.advisor_kit import BUSY, Sim
from tests.factories import demo_monitor
from tests.nvml_double import FakeGpu, FakeNvmlLib, install
from tests.servers import answer, dcgm_payload, serve

NAN = float("nan")


async def test_hung_nvml_call_keeps_the_screen_responsive(monkeypatch: pytest.MonkeyPatch) -> None:
    gate = threading.Event()  # cleared: the power reading blocks like a wedged driver call
    gate.set()
    lib = FakeNvmlLib([FakeGpu(), FakeGpu()])
    real = FakeNvmlLib.fn_nvmlDeviceGetPowerUsage

    def hanging_power(self: FakeNvmlLib, name: str, h: object, ref: object) -> int:
        gate.wait(30)
        return real(self, name, h, ref)

    monkeypatch.setattr(FakeNvmlLib, "fn_nvmlDeviceGetPowerUsage", hanging_power)
    install(monkeypatch, lib)
    source = NvmlSource(host=None)
    app = make_app(source, source.open(), Config(interval_s=0.25))
    assert app.sampler is not None
    mono = ManualClock(500.0)
    app.sampler._monotonic = mono
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.5)
        assert app.monitor.latest is not None, app.sample_error
        gate.clear()  # the next power reading hangs
        await pilot.pause(0.5)
        mono.advance(30.0)
        app._draw_header()
        assert "STALE: no data for 30 s" in app.query_one("#header", LineView).plain
        await pilot.press("right")
        assert app.selected == 1  # keys still work while NVML hangs
        gate.set()
        await pilot.pause(0.5)
    assert app.sampler.stop(timeout=2.0)  # the read returned, so NVML may be shut down
    source.close()


@pytest.mark.parametrize("bad", [NAN, -1.0, math.inf])
def test_out_of_range_readings_never_crash_a_rule(bad: float) -> None:
    sim = Sim()
    weird = replace(
        BUSY,
        util_gpu=bad,
        temp_c=bad,
        power_w=bad,
        sm_clock_mhz=None,
        pcie_rx_bps=bad,
        pcie_replay_count=None,
    )
    host = HostSample(cpu_percent=bad, iowait_pct=bad, mem_total=0, mem_available=None)
    proc = ProcessSample(pid=1, gpu_index=0, cpu_percent=bad, gpu_memory=None)
    sim.run(60, weird, processes=(proc,), host=host)  # Sim asserts no rule raised


async def test_app_draws_unknown_and_out_of_range_readings() -> None:
    clock = ManualClock(1e9)
    source = SimulatedSource(resolve_scenarios("healthy", 2), clock=clock)
    app = make_app(source, source.open(), Config(), live=False)
    weird = GpuSample(
        index=0,
        util_gpu=NAN,
        temp_c=NAN,
        power_w=-3.0,
        mem_used=None,
        mem_total=0,
        pcie_gen=None,
        clock_reasons=None,
    )
    frame = Frame(time=1e9, gpus=(weird, GpuSample(index=1, lost=True)))
    async with app.run_test(size=(160, 50)) as pilot:
        app.post_message(FrameReady(frame))
        await pilot.pause()
        assert "n/a" in app.query_one("#gpus", LineView).plain
        assert "LOST" in app.query_one("#gpus", LineView).plain
        await pilot.press("o")
        await pilot.pause()
        assert "LOST" in app.query_one("#overview", LineView).plain


@pytest.fixture
def exporter() -> Iterator[str]:
    monitor = demo_monitor("mix", seconds=40, gpus=8)
    registry = CollectorRegistry()
    registry.register(GputuiCollector(monitor))
    server, _ = serve_metrics(registry, "127.0.0.1", 0)
    yield f"127.0.0.1:{server.server_port}"
    server.shutdown()


def test_exporter_survives_200_concurrent_scrapes_and_bad_clients(exporter: str) -> None:
    host, port = exporter.split(":")
    # a client that connects and never reads, and one that sends garbage
    idle = socket.create_connection((host, int(port)))
    idle.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    garbage = socket.create_connection((host, int(port)))
    garbage.sendall(b"\x00\xff NOT HTTP \r\n\r\n")
    families: list[int] = []
    busy: list[int] = []

    def scrape() -> None:
        try:
            body = urllib.request.urlopen(f"http://{exporter}/metrics", timeout=30).read()
        except urllib.error.HTTPError as exc:  # more at once than the exporter serves
            busy.append(exc.code)
            return
        families.append(len(list(text_string_to_metric_families(body.decode()))))

    threads = [threading.Thread(target=scrape) for _ in range(200)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(families) + len(busy) == 200 and set(busy) <= {503}
    assert families and len(set(families)) == 1  # every answer whole and the same
    assert time.monotonic() - started < 60
    idle.close()
    garbage.close()


def test_half_open_connections_cost_a_few_threads_and_are_released(exporter: str) -> None:
    """Slowloris: 200 connections that send half a request and wait. The exporter holds at
    most MAX_PENDING of them (each at most HEADER_TIMEOUT_S), answers the rest 503, and
    frees every one on close."""
    host, port = exporter.split(":")
    threads_before = threading.active_count()
    fds_before = len(os.listdir("/proc/self/fd"))
    clients = []
    for _ in range(200):
        conn = socket.create_connection((host, int(port)), timeout=5)
        conn.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # no blank line: never done
        clients.append(conn)
    time.sleep(0.5)
    assert threading.active_count() - threads_before <= MAX_PENDING + 1
    for conn in clients:
        conn.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and threading.active_count() > threads_before:
        time.sleep(0.05)
    assert threading.active_count() <= threads_before
    assert len(os.listdir("/proc/self/fd")) <= fds_before + 2
    body = urllib.request.urlopen(f"http://{exporter}/metrics", timeout=10).read()
    assert b"DCGM_FI_DEV_GPU_TEMP" in body


def test_idle_connections_never_turn_a_real_scrape_away(exporter: str) -> None:
    """Issue 27: 32 connections that opened and said nothing took every serving slot, and
    every real scrape got 503. Idle and dripping clients wait in their own, larger pool for
    HEADER_TIMEOUT_S at most; a complete request is served."""
    host, port = exporter.split(":")
    idle = [socket.create_connection((host, int(port)), timeout=5) for _ in range(MAX_CONNECTIONS)]
    dripping = []
    for _ in range(MAX_CONNECTIONS // 2):
        conn = socket.create_connection((host, int(port)), timeout=5)
        conn.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        dripping.append(conn)
    time.sleep(0.3)
    for _ in range(3):
        started = time.monotonic()
        body = urllib.request.urlopen(f"http://{exporter}/metrics", timeout=10).read()
        assert b"DCGM_FI_DEV_GPU_TEMP" in body and time.monotonic() - started < 2.0
    time.sleep(HEADER_TIMEOUT_S + 1.0)  # the silent ones are cut at the header deadline
    for conn in idle + dripping:
        conn.settimeout(2.0)
        try:
            answer = conn.recv(1024)
        except TimeoutError:
            pytest.fail("an idle connection was still open past the header deadline")
        except OSError:
            answer = b""  # reset by the server: cut as well
        assert answer == b""
        conn.close()


#: a client that holds ``count`` connections open and silent, each reopened as it is cut,
#: until its stdin closes (issue 52: 128 of them turned 78-100 % of real scrapes away)
_CROWD = """
import select, socket, sys
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
held = [socket.create_connection((host, port)) for _ in range(count)]
print("ready", flush=True)
while not select.select([sys.stdin], [], [], 0)[0]:
    cut, _, _ = select.select(held, [], [], 0.05)
    for conn in cut:
        held.remove(conn)
        conn.close()
        try:
            held.append(socket.create_connection((host, port)))
        except OSError:
            pass
"""


@pytest.mark.parametrize("crowd", [MAX_PENDING - 1, MAX_PENDING, 2 * MAX_PENDING])
def test_a_crowd_reopening_idle_connections_never_turns_a_real_scrape_away(
    exporter: str, crowd: int
) -> None:
    host, port = exporter.split(":")
    attacker = subprocess.Popen(
        [sys.executable, "-c", _CROWD, host, port, str(crowd)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert attacker.stdout is not None and attacker.stdout.readline() == b"ready\n"
        answers = []
        deadline = time.monotonic() + HEADER_TIMEOUT_S * 2.5  # past the crowd's first cut
        while time.monotonic() < deadline:
            started = time.monotonic()
            try:
                with urllib.request.urlopen(f"http://{exporter}/metrics", timeout=10) as r:
                    answers.append((r.status, time.monotonic() - started))
            except urllib.error.HTTPError as exc:
                answers.append((exc.code, time.monotonic() - started))
            time.sleep(0.1)
    finally:
        attacker.communicate(b"stop\n", timeout=30)
    assert len(answers) >= 10
    assert [code for code, _ in answers if code != 200] == [], answers
    assert max(took for _, took in answers) < 2.0, answers


def _ask(address: str, request: bytes) -> bytes:
    """Send raw bytes, return what the server answers before it closes (at most 64 KB)."""
    host, port = address.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        try:
            conn.sendall(request)
            conn.shutdown(socket.SHUT_WR)
        except OSError:  # the server may answer and close before all of it is sent
            pass
        answer = b""
        while len(answer) < 65536:
            try:
                chunk = conn.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            answer += chunk
        return answer


MALFORMED = {
    "request line of 100 KB": b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\n\r\n",
    "header line of 100 KB": b"GET /metrics HTTP/1.1\r\nX-Big: " + b"b" * 100_000 + b"\r\n\r\n",
    "500 headers": b"GET /metrics HTTP/1.1\r\n" + b"X-H: v\r\n" * 500 + b"\r\n",
    "unknown method": b"BREW /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
    "no version": b"GET\r\n\r\n",
}


def test_exporter_serves_on_after_clients_vanish_mid_request(exporter: str) -> None:
    host, port = exporter.split(":")
    for partial in (b"GET /metr", b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Cut: ab"):
        conn = socket.create_connection((host, int(port)))
        conn.sendall(partial)
        # vanish with a reset, as a killed scraper does
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        conn.close()
    body = urllib.request.urlopen(f"http://{exporter}/metrics", timeout=10).read().decode()
    assert any(f.name == "DCGM_FI_DEV_GPU_TEMP" for f in text_string_to_metric_families(body))


@pytest.mark.parametrize("case", list(MALFORMED))
def test_exporter_refuses_malformed_requests_and_serves_on(exporter: str, case: str) -> None:
    answer = _ask(exporter, MALFORMED[case])
    assert b"DCGM_" not in answer  # never a metrics page for a broken request
    if answer.startswith(b"HTTP/1."):  # refused in words: a 4xx or 5xx status
        assert int(answer.split(b"\r\n", 1)[0].split()[1]) >= 400, answer[:80]
    elif answer:  # a request without a version gets an HTTP/0.9 answer: the error page
        assert re.search(rb"Error code: [45]\d\d", answer), answer[:200]
    body = urllib.request.urlopen(f"http://{exporter}/metrics", timeout=10).read().decode()
    assert any(f.name == "DCGM_FI_DEV_GPU_TEMP" for f in text_string_to_metric_families(body))


def reset(request: BaseHTTPRequestHandler) -> None:
    request.connection.setsockopt(
        socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
    )
    request.connection.close()


def huge(request: BaseHTTPRequestHandler) -> None:
    request.send_response(200)
    request.end_headers()
    chunk = b"# garbage " + b"x" * 1_000_000 + b"\n"
    try:
        for _ in range(11):
            request.wfile.write(chunk)
    except OSError:
        pass


def test_remote_resets_and_10_mb_of_garbage_leave_the_healthy_node_live() -> None:
    healthy, s1 = serve(answer(dcgm_payload("good-node")))
    resetting, s2 = serve(reset)
    flood, s3 = serve(huge)
    try:
        source = RemoteSource([healthy, resetting, flood], timeout_s=3.0, clock=ManualClock(1e9))
        assert len(source.open()) == 2
        frame = source.read()
        assert len(frame.gpus) == 2
        down = " ".join(
            n.text for n in frame.notes if n.kind in (NoteKind.NODE_DOWN, NoteKind.NODE_EMPTY)
        )
        assert "larger than 10 MB" in down
        assert "unreachable" in down or "HTTP" in down or "not a Prometheus" in down
        source.close()
    finally:
        for s in (s1, s2, s3):
            s.shutdown()


def test_every_host_reading_failing_is_survivable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import psutil

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("no disks here")

    # no /proc/diskstats or /sys/block, and psutil, asked instead, fails too
    monkeypatch.setattr(psutil, "disk_io_counters", broken)
    reader = HostReader(proc=str(tmp_path), sys_block=str(tmp_path / "block"))
    sample = reader.read_host()
    assert sample.disk_read_bps is None
    assert sample.cpu_count and sample.mem_total  # psutil's, where /proc has none


def _doctor_over_fake_nvml(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], lib: FakeNvmlLib
) -> tuple[int, str]:
    from gputui.cli import main

    install(monkeypatch, lib)
    status = main(["doctor", "--duration", "0.5", "--interval", "0.25", "--samples", "3"])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return status, out.out + out.err


def test_doctor_reads_on_through_unreadable_fields(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.nvml_double import NO_PERMISSION, NOT_SUPPORTED, UNKNOWN

    names = [n[3:] for n in dir(FakeNvmlLib) if n.startswith("fn_nvmlDevice") and "Handle" not in n]
    blind = FakeGpu(errors={n: NOT_SUPPORTED for n in names if n != "nvmlDeviceGetCount_v2"})
    partial = FakeGpu(
        errors={
            "nvmlDeviceGetPowerUsage": NO_PERMISSION,
            "nvmlDeviceGetUtilizationRates": UNKNOWN,
            "nvmlDeviceGetTemperature": UNKNOWN,
        }
    )
    status, out = _doctor_over_fake_nvml(monkeypatch, capsys, FakeNvmlLib([blind, partial]))
    # nothing it cannot see is called a fault; what it could not judge is said (exit 4)
    assert status in (0, 1, 4)
    assert "not judged" in out
    assert "2 GPU(s)" in out and "n/a" in out
    assert "H100" in out  # the GPU it can read is reported


def test_doctor_names_a_gpu_lost_mid_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gpus = [FakeGpu(), FakeGpu(), FakeGpu()]
    reads = 0
    real_read = NvmlSource.read

    def read(self: NvmlSource) -> Frame:
        nonlocal reads
        reads += 1
        if reads == 2:
            gpus[1].lost = True  # falls off the bus after the first reading
        return real_read(self)

    monkeypatch.setattr(NvmlSource, "read", read)
    status, out = _doctor_over_fake_nvml(monkeypatch, capsys, FakeNvmlLib(gpus))
    assert status == 2 and reads >= 3  # critical, and it kept reading the other two
    assert "gpu-errors" in out and "lost" in out
