"""A point-in-time read of a cluster's history (doctor, snapshot) as columns: the same
history the frames of the screen's read leave, value by value (blanks, ranges, the
memory total, a MIG GPU's utilisation and memory), without a frame built for it."""

from __future__ import annotations

import math

from gputui.advisor import make_monitor
from gputui.core.config import Config
from gputui.core.model import SourceInfo
from gputui.core.names import Metric, SourceKind
from gputui.sources.prometheus.source import PrometheusSource
from tests.prom_fake import FakeProm, Series, gpu_series

BLANK_INT64 = 9223372036854775808.0


def _cluster() -> list[Series]:
    series = [
        *gpu_series(
            "a",
            2,
            temp=61.0,
            DCGM_FI_DEV_GPU_UTIL=97.0,
            DCGM_FI_DEV_SM_CLOCK=1980.0,
            DCGM_FI_DEV_FB_USED=69000.0,
            DCGM_FI_DEV_FB_FREE=11000.0,
            DCGM_FI_DEV_FB_RESERVED=559.0,
            DCGM_FI_DEV_CLOCKS_EVENT_REASONS=4.0,
            DCGM_FI_DEV_MEMORY_TEMP=0.0,  # GDDR: no sensor
            DCGM_FI_DEV_PCIE_REPLAY_COUNTER=3.0,
            DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION=4e9,  # not kept in the history
        ),
        *gpu_series(
            "b",
            1,
            temp=70.0,
            DCGM_FI_DEV_GPU_UTIL=500.0,  # no GPU reads so: no reading
            DCGM_FI_DEV_POWER_USAGE=140737488355328.0,  # DCGM's blank of a double
            DCGM_FI_DEV_CLOCKS_EVENT_REASONS=BLANK_INT64,
        ),
    ]
    # a MIG GPU: no GPU_UTIL, its graphics engine's activity, memory by instance
    mig = {"gpu": "0", "Hostname": "c", "instance": "c:9400", "job": "dcgm"}
    series += [
        ({**mig, "__name__": "DCGM_FI_DEV_GPU_TEMP"}, 55.0),
        ({**mig, "__name__": "DCGM_FI_PROF_GR_ENGINE_ACTIVE"}, 0.42),
        ({**mig, "GPU_I_ID": "1", "__name__": "DCGM_FI_DEV_FB_USED"}, 1000.0),
        ({**mig, "GPU_I_ID": "2", "__name__": "DCGM_FI_DEV_FB_USED"}, 2000.0),
        ({**mig, "GPU_I_ID": "2", "__name__": "DCGM_FI_DEV_GPU_TEMP"}, 55.0),
    ]
    return series


def _same(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(
        (math.isnan(x) and math.isnan(y)) or x == y for x, y in zip(a, b, strict=True)
    )


def test_columns_leave_the_history_the_frames_leave() -> None:
    info = SourceInfo("P", SourceKind.REMOTE)
    framed = PrometheusSource("http://prom", fetcher=FakeProm(_cluster()), step_s=15.0)
    columned = PrometheusSource(
        "http://prom", fetcher=FakeProm(_cluster()), step_s=15.0, limits_later=True
    )
    devices = framed.open()
    assert [(d.node, d.node_index) for d in columned.open()] == [
        (d.node, d.node_index) for d in devices
    ]
    by_frames = make_monitor(devices, Config(15.0), info)
    for frame in framed.backfill():
        by_frames.ingest(frame, advise=False)
    by_columns = make_monitor(devices, Config(15.0), info)
    times, gpus, last_seen, at = columned.history_columns()
    by_columns.ingest_columns(times, gpus, last_seen, at)
    assert by_columns.history.times() == by_frames.history.times()
    assert len(times) > 10
    for device in devices:
        for metric in Metric:
            frames = by_frames.history.series(device.index, metric)
            columns = by_columns.history.series(device.index, metric)
            assert _same(frames, columns), (device.node, metric, frames[-2:], columns[-2:])
        window = 600.0
        assert by_columns.history.known_reasons(device.index, window) == (
            by_frames.history.known_reasons(device.index, window)
        )
        assert by_columns.history.last_seen(device.index) == by_frames.history.last_seen(
            device.index
        )
    a0, b0, mig = (devices[i].index for i in (0, 2, 3))
    history = by_columns.history
    assert history.series(a0, Metric.MEM_TOTAL)[-1] == (69000 + 11000 + 559) * 2**20
    assert math.isnan(history.series(a0, Metric.MEM_TEMP_C)[-1])
    assert math.isnan(history.series(b0, Metric.UTIL_GPU)[-1])  # out of range
    assert math.isnan(history.series(b0, Metric.POWER_W)[-1])  # blank
    assert history.series(mig, Metric.UTIL_GPU)[-1] == 42.0
    assert history.series(mig, Metric.MEM_USED)[-1] == 3000 * 2**20


def test_where_the_engine_judges_every_rule_doctor_reads_only_the_nodes_it_names() -> None:
    """`gputui rules` loaded for every rule: the history is read of the nodes the alerts
    name, and so are the readings after it (a cluster's verdict is a few queries, not a
    full read of every GPU); the other nodes are in the aggregates, as reporting."""
    from gputui.advisor.promrules import Terms, engine
    from gputui.cli.opening import engine_nodes

    every = sorted(engine(Terms(15.0)).by_rule())
    marker = {"__name__": "gputui_rules_info", "rules": ",".join(every)}
    marker["scrape_interval"] = "15s"
    held = {"__name__": "ALERTS_FOR_STATE", "alertname": "GputuiClocksHeld"}
    held |= {"gputui_rule": "clocks-held", "severity": "warning", "Hostname": "n2", "gpu": "1"}
    series = [s for n in ("n1", "n2", "n3", "n4") for s in gpu_series(n, 2)]
    server = FakeProm([*series, (marker, 1.0), (held, 1_700_000_000.0)])
    source = PrometheusSource("http://prom", fetcher=server, step_s=15.0, limits_later=True)
    devices = source.open()
    assert len(devices) == 8
    monitor = make_monitor(devices, Config(15.0, 600.0), SourceInfo("P", SourceKind.REMOTE))
    only = engine_nodes(monitor, source)
    assert only == {"n2"}
    monitor.ingest_columns(*source.history_columns(only))
    server.asked.clear()
    frame = source.read()
    assert {devices[s.index].node for s in frame.gpus} == {"n2"}
    full = [q for q in server.asked if "DCGM_FI_DEV_GPU_TEMP" in q and "=~" in q]
    assert full and all('"n2"' in q and "n1" not in q and "n3" not in q for q in full), full
    assert {n.node for n in frame.nodes} == {"n1", "n2", "n3", "n4"}
    assert not any(n.down for n in frame.nodes)
