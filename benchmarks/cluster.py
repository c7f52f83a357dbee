"""A cluster through the Prometheus source: 64 nodes x 8 GPUs by default.

Usage: python benchmarks/cluster.py [--nodes 64] [--gpus 8] [--ticks 120] [--http]

Answers the Prometheus HTTP API from memory (or, with --http, from a server on 127.0.0.1)
with every node's dcgm-exporter series, as a Prometheus server holding a GPU operator's
metrics would, and prints per tick: the source read (one /api/v1/query for the whole
cluster), the monitor's ingest (history and the advisor), building the cluster view's
rows and lines; then the resident memory after the ticks and the history backfill.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gputui.advisor import make_monitor
from gputui.advisor.nodes import node_rows
from gputui.core.config import Config
from gputui.core.model import SourceInfo
from gputui.core.names import SourceKind
from gputui.sources.promapi import PrometheusSource
from gputui.view.cluster import cluster_page

# What dcgm-exporter's default counters give for one GPU, with plausible values.
METRICS = {
    "DCGM_FI_DEV_GPU_UTIL": 90.0,
    "DCGM_FI_DEV_MEM_COPY_UTIL": 40.0,
    "DCGM_FI_DEV_SM_CLOCK": 1755.0,
    "DCGM_FI_DEV_MEM_CLOCK": 2619.0,
    "DCGM_FI_DEV_GPU_TEMP": 65.0,
    "DCGM_FI_DEV_MEMORY_TEMP": 70.0,
    "DCGM_FI_DEV_POWER_USAGE": 550.0,
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 8.0e9,
    "DCGM_FI_DEV_FB_USED": 60000.0,
    "DCGM_FI_DEV_FB_FREE": 21000.0,
    "DCGM_FI_DEV_FB_RESERVED": 559.0,
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 0.0,
    "DCGM_FI_DEV_XID_ERRORS": 0.0,
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.85,
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.4,
    "DCGM_FI_PROF_DRAM_ACTIVE": 0.3,
    "DCGM_FI_PROF_PCIE_TX_BYTES": 3.0e8,
    "DCGM_FI_PROF_PCIE_RX_BYTES": 2.0e9,
}


def _series(nodes: int, gpus: int) -> list[tuple[dict[str, str], float]]:
    out = []
    for n in range(nodes):
        host = f"gpu-node-{n:03d}"
        for g in range(gpus):
            labels = {
                "gpu": str(g),
                "UUID": f"GPU-{n:04x}{g:04x}-0000-0000-0000-000000000000",
                "device": f"nvidia{g}",
                "modelName": "NVIDIA H100 80GB HBM3",
                "Hostname": host,
                "DCGM_FI_DRIVER_VERSION": "550.54.15",
                "pod": f"train-{n}",
                "namespace": "ml",
                "container": "trainer",
            }
            for name, value in METRICS.items():
                out.append(({"__name__": name, **labels}, value + (g % 3)))
    return out


class FakeApi:
    def __init__(self, nodes: int, gpus: int, history_points: int) -> None:
        self.series = _series(nodes, gpus)
        self.history_points = history_points
        self.now = time.time()

    def answer(self, url: str) -> str:
        query = urllib.parse.urlsplit(url)
        result: list[dict[str, object]]
        if query.path.endswith("/query_range"):
            result = [
                {
                    "metric": labels,
                    "values": [
                        [self.now - 30 * (self.history_points - i), str(v)]
                        for i in range(self.history_points)
                    ],
                }
                for labels, v in self.series
            ]
            kind = "matrix"
        else:
            result = [{"metric": labels, "value": [self.now, str(v)]} for labels, v in self.series]
            kind = "vector"
        return json.dumps({"status": "success", "data": {"resultType": kind, "result": result}})


def serve(api: FakeApi) -> tuple[str, ThreadingHTTPServer]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = api.answer(self.path).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}", server


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--ticks", type=int, default=120)
    parser.add_argument("--http", action="store_true", help="through a loopback HTTP server")
    parser.add_argument(
        "--interval", type=float, default=15.0, help="seconds a tick (gputui's default here: 15)"
    )
    args = parser.parse_args()
    process = psutil.Process()
    rss_start = process.memory_info().rss
    api = FakeApi(args.nodes, args.gpus, history_points=21)
    if args.http:
        url, server = serve(api)
        source = PrometheusSource(url, timeout_s=30.0)
    else:

        def fetcher(url: str, timeout: float, headers: dict[str, str] | None = None) -> str:
            return api.answer(url)

        source = PrometheusSource("http://prometheus.invalid", timeout_s=30.0, fetcher=fetcher)
    t0 = time.process_time()
    devices = source.open()
    opened = time.process_time() - t0
    config = Config(interval_s=args.interval)
    monitor = make_monitor(devices, config, SourceInfo("PROMETHEUS", SourceKind.REMOTE))
    t0 = time.process_time()
    history = source.backfill()
    for frame in history:
        monitor.ingest(frame)
    backfilled = time.process_time() - t0
    reads, ingests, views = [], [], []
    for _ in range(args.ticks):
        api.now += args.interval
        t0 = time.process_time()
        frame = source.read()
        t1 = time.process_time()
        monitor.ingest(frame)
        t2 = time.process_time()
        rows = node_rows(monitor.devices, monitor.latest, monitor.findings)
        cluster_page(rows, len(monitor.devices), 0, 120)
        t3 = time.process_time()
        reads.append(t1 - t0)
        ingests.append(t2 - t1)
        views.append(t3 - t2)
    rss_end = process.memory_info().rss

    def ms(values: list[float]) -> str:
        return f"{1000 * statistics.median(values):8.1f} {1000 * max(values):8.1f}"

    print(
        f"{args.nodes} nodes x {args.gpus} GPUs = {len(devices)} GPUs, "
        f"{len(api.series):,} series, {'HTTP on loopback' if args.http else 'in memory'}, "
        f"{args.ticks} ticks, Python {sys.version.split()[0]}"
    )
    print(f"open (one instant query): {1000 * opened:.0f} ms CPU")
    print(f"history backfill ({len(history)} frames, one range query): {backfilled:.2f} s CPU")
    print(f"{'stage':<40} {'median ms':>8} {'max ms':>8}")
    print(f"{'source read (one query, whole cluster)':<40} {ms(reads)}")
    print(f"{'monitor.ingest (history, advisor)':<40} {ms(ingests)}")
    print(f"{'cluster view rows and lines':<40} {ms(views)}")
    total = statistics.mean(reads) + statistics.mean(ingests) + statistics.mean(views)
    print(
        f"CPU per tick, mean: {1000 * total:.0f} ms: {100 * total / args.interval:.2f} % of a "
        f"core at one tick every {args.interval:g} s"
    )
    print(f"queries made: {source.queries}")
    print(f"RSS: {rss_start / 2**20:.0f} MB at start, {rss_end / 2**20:.0f} MB after")
    if args.http:
        server.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
