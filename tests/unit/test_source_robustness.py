"""What a review of the NVML and remote sources found, each a test: a sick GPU at open, a
token with a newline, values no exporter should send, a node past the caps, a bad port."""

from __future__ import annotations

import pytest

from gputui.core.source import SourceUnavailable
from gputui.sources.nvml import NvmlSource
from gputui.sources.prometheus.source import PrometheusSource
from gputui.sources.prometheus.wire import auth_headers, decode, point
from gputui.sources.remote import RemoteSource, ScrapeError, fetch
from tests.nvml_double import GPU_IS_LOST, INVALID_ARGUMENT, FakeGpu, FakeNvmlLib, install
from tests.prom_fake import FakeProm, gpu_series


def test_a_gpu_lost_while_it_is_opened_keeps_one_entry_and_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lib = FakeNvmlLib([FakeGpu(), FakeGpu(field_errors={82: GPU_IS_LOST})])
    install(monkeypatch, lib)
    source = NvmlSource(host=None)
    devices = source.open()
    assert [d.index for d in devices] == [0, 1] and devices[1].name == "lost GPU"
    frame = source.read()
    assert frame.gpus[1].lost and not frame.gpus[0].lost
    source.close()


def test_byte_counters_that_answer_an_error_at_open_leave_the_sampled_windows_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpu = FakeGpu(field_errors={197: INVALID_ARGUMENT, 198: INVALID_ARGUMENT})
    install(monkeypatch, FakeNvmlLib([gpu]))
    source = NvmlSource(host=None)
    source.open()
    source.read()
    source.wait_windows()
    sample = source.read().gpus[0]
    assert sample.pcie_rx_bps is not None and sample.pcie_counter_based is False
    source.close()


def test_a_token_with_a_trailing_newline_is_stripped() -> None:
    headers = auth_headers({"GPUTUI_PROMETHEUS_TOKEN": "s3cr3t-token\n"})
    assert headers == {"Authorization": "Bearer s3cr3t-token"}


def test_an_invalid_header_never_shows_its_value() -> None:
    with pytest.raises(ScrapeError) as info:
        fetch("http://127.0.0.1:9/metrics", 1.0, {"Authorization": "Bearer s3cr3t\n"})
    assert "s3cr3t" not in str(info.value)


def test_a_port_that_is_not_a_number_is_a_clear_error() -> None:
    with pytest.raises(ScrapeError, match="not a port number"):
        fetch("http://prom:90x90/api/v1/query", 1.0)


def test_a_value_too_large_for_its_unit_is_no_reading() -> None:
    page = (
        'DCGM_FI_DEV_FB_USED{gpu="0",Hostname="a"} 1e308\n'
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="a"} 50\n'
    )
    source = RemoteSource(["http://a:9400"], fetcher=lambda url, timeout: page)
    source.open()
    sample = source.read().gpus[0]
    assert sample.mem_used is None and sample.temp_c == 50
    source.close()


def test_malformed_api_answers_are_scrape_errors_not_tracebacks() -> None:
    with pytest.raises(ScrapeError):
        decode("[" * 100_000 + "]" * 100_000, "vector")
    assert point([int("9" * 400), "1"], 0, 2e9) is None
    assert point(["1e400", "1"], 0, 2e9) is None


def test_one_node_past_the_caps_is_dropped_alone() -> None:
    server = FakeProm([*gpu_series("huge", 300), *gpu_series("fine", 2)])
    source = PrometheusSource("http://prom", fetcher=server)
    devices = source.open()
    assert {d.node for d in devices} == {"fine"} and len(devices) == 2
    said = " ".join(n.text for n in source.read().notes)
    assert "node huge refused: more than 256 GPUs on one node" in said


def test_an_answer_too_large_is_asked_again_in_smaller_pages() -> None:
    nodes = [f"n{i:02d}" for i in range(20)]
    server = FakeProm([s for n in nodes for s in gpu_series(n, 8)], max_answer=40)
    source = PrometheusSource("http://prom", fetcher=server)
    assert len(source.open()) == 160
    frame = source.read()
    assert len(frame.gpus) == 160 and not any("not read" in n.text for n in frame.notes)
    history = source.backfill()
    assert history and all(len(f.gpus) == 160 for f in history)


def test_a_node_no_page_can_hold_is_named_never_dropped_silently() -> None:
    server = FakeProm([*gpu_series("big", 8), *gpu_series("small", 2)], max_answer=4)
    source = PrometheusSource("http://prom", fetcher=server)
    assert {d.node for d in source.open()} == {"small"}
    said = " ".join(n.text for n in source.read().notes)
    assert "their GPUs could not be listed (answer larger than 10 MB): big" in said


def test_a_server_that_never_answers_even_its_name_costs_the_deadline_only() -> None:
    import threading
    import time

    hang = threading.Event()

    def stuck(url: str, timeout: float, headers: dict[str, str] | None = None) -> str:
        hang.wait(30)  # as a resolver that never answers: fetch's own deadline cannot help
        return ""

    source = PrometheusSource("http://prom", timeout_s=0.5, fetcher=stuck)
    started = time.monotonic()
    with pytest.raises(SourceUnavailable, match=r"no answer within 0\.5 s"):
        source.open()
    assert time.monotonic() - started < 2.0
    hang.set()
