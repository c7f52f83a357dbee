"""What a Prometheus answer can make gputui do (issue 27's findings on `--prometheus`): each
finding reproduced on the function that now bounds it."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from gputui.core.source import SourceUnavailable
from gputui.sources.fetching import ScrapeError
from gputui.sources.prometheus.nodes import MAX_CLUSTER_GPUS, MAX_NODES, Tagged, check_counts
from gputui.sources.prometheus.queries import REASONS_LABEL, REF, TAG, NodeKey, display_names
from gputui.sources.prometheus.reads import History
from gputui.sources.prometheus.source import PrometheusSource
from gputui.sources.prometheus.wire import (
    MAX_LABELS,
    MAX_TOKEN_BYTES,
    decode,
    labels_of,
    point,
    read_token_file,
    server_of,
)


@pytest.mark.parametrize(("nodes", "gpus"), [(100_000, 100_000), (5_000, 5_000), (100, 40_000)])
def test_a_cluster_past_the_node_or_gpu_cap_is_refused_naming_the_cap_and_match(
    nodes: int, gpus: int
) -> None:
    with pytest.raises(ScrapeError) as refused:
        check_counts(nodes, gpus, "http://prom:9090")
    text = str(refused.value)
    assert "--match" in text
    assert f"{MAX_NODES:,}" in text or f"{MAX_CLUSTER_GPUS:,}" in text


def test_a_cluster_inside_the_caps_is_read() -> None:
    check_counts(MAX_NODES, MAX_CLUSTER_GPUS, "http://prom:9090")


@pytest.mark.parametrize("when", [1e300, -1e300, float("inf"), 99.0, 1201.0])
def test_points_outside_the_window_asked_for_are_no_readings(when: float) -> None:
    assert point([when, "50"], 100.0, 1200.0) is None
    assert point([600.0, "50"], 100.0, 1200.0) == (600.0, 50.0)


def _matrix(values: list[list[object]]) -> list[dict[str, object]]:
    labels = {"__name__": "DCGM_FI_DEV_GPU_TEMP", "gpu": "0", "Hostname": "n1"}
    return [{"metric": labels, "values": values}]


def test_history_points_off_the_step_grid_or_past_the_grid_are_dropped() -> None:
    history = History(start=0.0, end=60.0, step=15.0, points=5)
    on_grid = [[t, "50"] for t in (0.0, 15.0, 30.0)]
    history.take(_matrix([*on_grid, [7.5, "50"], [1e300, "50"]]), set(), {})
    assert history.dropped == 1  # the series is not on this page: refused whole
    key = NodeKey("Hostname", "n1")
    history = History(start=0.0, end=60.0, step=15.0, points=5)
    history.take(_matrix([*on_grid, [7.5, "50"], [1e300, "50"]]), {key}, {})
    assert history.dropped == 2  # off the grid, outside the window
    history = History(start=0.0, end=60.0, step=15.0, points=5)
    history.take(_matrix([[float(t), "50"] for t in range(560_000)]), {key}, {})
    assert history.dropped == 1  # more points than the grid holds: refused, not walked


def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_shown() -> None:
    server = server_of("http://alice:s3cr%40t@prom.example:9090/prom/", env={})
    assert server.base == "http://prom.example:9090/prom"
    assert server.headers["Authorization"] == "Basic " + base64.b64encode(b"alice:s3cr@t").decode()
    assert "alice" not in server.shown and "s3cr" not in server.shown
    assert server.shown == "http://***@prom.example:9090/prom"


def test_credentials_given_twice_are_refused_not_guessed() -> None:
    with pytest.raises(SourceUnavailable, match="give them one way"):
        server_of("http://a:b@prom:9090", env={"GPUTUI_PROMETHEUS_TOKEN": "t"})


def test_a_token_file_that_is_no_regular_file_is_refused_before_a_byte_is_read(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it to read would wait for a writer forever
    for path in ("/dev/zero", str(fifo), str(tmp_path)):
        with pytest.raises(SourceUnavailable, match="not a regular file"):
            read_token_file(path)


def test_a_token_file_missing_huge_or_empty_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SourceUnavailable, match=r"cannot read .*No such file"):
        read_token_file(str(tmp_path / "absent"))
    huge = tmp_path / "huge"
    huge.write_text("x" * (MAX_TOKEN_BYTES + 1))
    with pytest.raises(SourceUnavailable, match="larger than 16 KB"):
        read_token_file(str(huge))
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(SourceUnavailable, match="holds no token"):
        read_token_file(str(empty))
    good = tmp_path / "token"
    good.write_text("eyJhbGciOi.token\n")
    assert read_token_file(str(good)) == "eyJhbGciOi.token"


def test_an_error_answer_shows_its_error_type_and_message() -> None:
    answer = '{"status":"error","errorType":"bad_data","error":"parse error at char 3"}'
    with pytest.raises(ScrapeError, match=r"bad_data: parse error at char 3"):
        decode(answer, "vector")
    hostile = '{"status":"error","errorType":"\\u001b[2J","error":"\\u001b]52;c;x\\u0007"}'
    with pytest.raises(ScrapeError) as refused:
        decode(hostile, "vector")
    assert "\x1b" not in str(refused.value) and "\x07" not in str(refused.value)


@pytest.mark.parametrize("value", [None, {"nested": "x"}, ["a"], 5, "", "   "], ids=repr)
def test_a_label_value_that_is_no_string_refuses_its_series(value: object) -> None:
    assert labels_of({"metric": {"__name__": "DCGM_FI_DEV_GPU_TEMP", "Hostname": value}}) is None


def test_a_series_with_too_many_labels_is_refused_and_a_normal_one_read() -> None:
    many = {f"l{i}": "v" for i in range(MAX_LABELS + 1)}
    assert labels_of({"metric": many}) is None
    normal = {"__name__": "DCGM_FI_DEV_GPU_TEMP", "gpu": "0", "Hostname": "n1"}
    assert labels_of({"metric": normal}) == normal


def test_a_hostname_equal_to_another_nodes_instance_stays_two_nodes() -> None:
    by_host, by_target = NodeKey("Hostname", "10.0.0.5:9400"), NodeKey("instance", "10.0.0.5:9400")
    assert by_host != by_target
    names = display_names([by_host, by_target, NodeKey("Hostname", "gpu-07")])
    assert len(set(names.values())) == 3
    assert names[NodeKey("Hostname", "gpu-07")] == "gpu-07"


def test_a_report_lists_the_gpus_as_they_were_at_its_end_however_long_ago() -> None:
    # the GPU list of a report over last night is read at the night's end, by the server's
    # clock of then: its answers carry that time, hours before the wall clock's
    then = 1_700_000_000.0
    series = [
        {"metric": {"__name__": REF, TAG: tag, "Hostname": "n1", "gpu": "0"}, "value": [then, v]}
        for tag, v in (("seen", "2"), ("live", "2"), ("nodes", "1"), ("gpus", "2"))
    ]
    series += [
        {"metric": {"__name__": REF, "Hostname": "n1", "gpu": gpu}, "value": [then, "55"]}
        for gpu in ("0", "1")
    ]
    answer = json.dumps({"status": "success", "data": {"resultType": "vector", "result": series}})
    asked: list[str] = []

    def fetcher(url: str, timeout: float, headers: dict[str, str]) -> str:
        asked.append(url)
        return answer

    source = PrometheusSource("http://prom:9090", fetcher=fetcher, env={}, at=then)
    devices = source.open()
    assert [(d.node, d.index) for d in devices] == [("n1", 0), ("n1", 1)]
    instant = [u for u in asked if "/api/v1/query?" in u]
    assert instant and all(f"time={then:.3f}" in u for u in instant)


def _reasons(node: str, bits: str, gpus: float, now: float) -> dict[str, object]:
    labels = {"Hostname": node, TAG: "reasons", REASONS_LABEL: bits}
    return {"metric": labels, "value": [now, repr(gpus)]}


def test_the_clock_event_bits_counted_once_become_each_kinds_count_of_gpus() -> None:
    now = 1_800_000_000.0
    answer = [
        _reasons("a", "9", 2, now),  # bits 2 and 5 of the reasons: power cap and thermal
        _reasons("a", "2", 1, now),  # bit 3: HW slowdown
        _reasons("a", "36", 3, now),  # bits 4 (sync boost: no kind) and 7 (power brake)
        _reasons("b", "4", 5, now),  # sync boost alone: counts towards nothing
    ]
    tagged = Tagged().take(answer, now)
    assert tagged.figures[NodeKey("Hostname", "a")] == {
        "power_cap": 2.0,
        "thermal": 2.0,
        "slowdown": 4.0,
    }
    assert NodeKey("Hostname", "b") not in tagged.figures and tagged.refused == 0


@pytest.mark.parametrize("bits", ["0", "64", "2.5", "NaN", "-1", "x", "1e300"])
def test_clock_event_bits_that_are_no_bits_are_refused(bits: str) -> None:
    now = 1_800_000_000.0
    tagged = Tagged().take([_reasons("a", bits, 1, now)], now)
    assert tagged.refused == 1 and not tagged.figures
