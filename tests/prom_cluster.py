"""A synthetic GPU cluster behind a real Prometheus (or VictoriaMetrics) server.

One HTTP server plays every node's dcgm-exporter: ``/metrics?node=NAME`` is that node's
page, its values moving with each scrape as a real exporter's do (power with decimals,
energy counting up), and with the problems a plan plants (thermal throttling, a lowered
power limit, PCIe replays, an Xid). The server under test scrapes it at a chosen interval,
one target a node (the target's ``instance`` set to ``NAME:9400``, as a DaemonSet's pod
address would be); the history before the start is written at once: for Prometheus with
``promtool tsdb create-blocks-from openmetrics``, for VictoriaMetrics through its import
API, with the same labels a scrape gives, so a series runs on without a seam.

Facts relied on: Prometheus adds ``job`` and ``instance`` to each scraped series and
turns a target label ``__param_X`` into the scrape URL's query ``X``; promtool reads
OpenMetrics (``# TYPE``, samples with a time in seconds, ``# EOF``); VictoriaMetrics
reads the Prometheus text format with millisecond times at ``/api/v1/import/prometheus``
and scrapes with ``-promscrape.config`` (the same configuration format).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.servers import free_port

THERMAL, POWER_CAP, REPLAYS, XID = "thermal", "power-cap", "replays", "xid"
#: busy with the SM clock held at 1,095 of 1,980 MHz and no clock-event reason named
HELD = "held"
#: busy without work: a kernel that spins at 100 % while the board rests and nothing moves
SPIN = "spin"
MODEL = "NVIDIA H100 80GB HBM3"


@dataclass
class Plan:
    """The cluster: its nodes, GPUs a node, and the problems planted (node, gpu) -> kind."""

    nodes: list[str]
    gpus: int = 8
    planted: dict[tuple[str, int], str] = field(default_factory=dict)
    #: nodes whose exporter is down (the page answers 503)
    dead: set[str] = field(default_factory=set)
    #: nodes whose exporter stopped answering this many seconds before the written
    #: history's end: they report until then (a range holds them), not at its end
    stopped: dict[str, float] = field(default_factory=dict)
    #: per node, readings that differ from the H100 SXM default (another board's limits)
    boards: dict[str, dict[str, float]] = field(default_factory=dict)
    #: nodes whose pages carry Kubernetes' renamed workload labels
    pods: dict[str, str] = field(default_factory=dict)
    #: the optional fields an operator adds to dcgm-exporter's counters CSV
    extended: bool = True
    #: (node, gpu) -> the scrape (seconds since the epoch over the interval) from which its
    #: planted problem shows; before it the GPU is healthy (an Xid's code changes then)
    onsets: dict[tuple[str, int], int] = field(default_factory=dict)
    #: each node's series heads (name and labels), written by ``page`` once a node
    _heads: dict[str, list[tuple[str, list[str]]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def labels(self, node: str, gpu: int) -> dict[str, str]:
        out = {
            "gpu": str(gpu),
            "UUID": f"GPU-{_digest(node, gpu, 'uuid')[:8]}-0000-0000-0000-{gpu:012d}",
            "pci_bus_id": f"00000000:{0x18 + gpu:02X}:00.0",
            "device": f"nvidia{gpu}",
            "modelName": MODEL,
            "Hostname": node,
            "DCGM_FI_DRIVER_VERSION": "550.54.15",
        }
        if node in self.pods:  # the exporter's own labels, renamed by the scrape
            out.update(exported_pod=self.pods[node], exported_namespace="ml")
            out.update(exported_container="trainer")
        return out

    def values(self, node: str, gpu: int, tick: int) -> dict[str, float]:
        """One collection's readings; ``tick`` counts the scrapes since the epoch."""
        kind = self.planted.get((node, gpu))
        if tick < self.onsets.get((node, gpu), tick):
            kind = None
        noise = _digest(node, gpu, tick)
        jitter = int(noise[:4], 16) / 65535.0  # 0..1, a new one each collection
        hot = kind == THERMAL
        capped = kind == POWER_CAP
        limit = 400.0 if capped else 700.0
        power = limit - 2.0 - jitter if capped else 560.0 + 40.0 * jitter
        board = self.boards.get(node, {})
        top = board.get("DCGM_FI_DEV_MAX_SM_CLOCK", 1980.0)
        out = {
            "DCGM_FI_DEV_SM_CLOCK": _clock(kind, top),
            "DCGM_FI_DEV_MEM_CLOCK": 2619.0,
            "DCGM_FI_DEV_MEMORY_TEMP": 50.0 + round(4 * jitter),
            "DCGM_FI_DEV_GPU_TEMP": (88.0 if hot else 61.0) + round(2 * jitter),
            "DCGM_FI_DEV_POWER_USAGE": round(power, 3),
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 4.0e9 + tick * 15 * power * 1000,
            # a link that retransmits 7 times a scrape (counted from a recent boot)
            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": float(
                (tick % 100_000) * 7 if kind == REPLAYS else 3
            ),
            "DCGM_FI_DEV_GPU_UTIL": 93.0 + round(5 * jitter),
            "DCGM_FI_DEV_MEM_COPY_UTIL": 38.0 + round(4 * jitter),
            "DCGM_FI_DEV_XID_ERRORS": 79.0 if kind == XID else 0.0,
            "DCGM_FI_DEV_FB_FREE": 11000.0,
            "DCGM_FI_DEV_FB_USED": 69000.0 + round(100 * jitter),
            "DCGM_FI_DEV_FB_RESERVED": 559.0,
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.9,
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.41,
            "DCGM_FI_PROF_PCIE_TX_BYTES": 3.0e8,
            "DCGM_FI_PROF_PCIE_RX_BYTES": 2.0e9,
        }
        if kind == SPIN:
            out.update(
                {
                    "DCGM_FI_DEV_GPU_UTIL": 100.0,
                    "DCGM_FI_DEV_POWER_USAGE": round(125.0 + 10 * jitter, 3),
                    "DCGM_FI_DEV_MEM_COPY_UTIL": 0.0,
                    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 1.0,
                    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.0,
                    "DCGM_FI_PROF_PCIE_TX_BYTES": 2.0e5,
                    "DCGM_FI_PROF_PCIE_RX_BYTES": 3.0e5,
                }
            )
        if self.extended:
            out.update(
                {
                    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": 0x60 if hot else (0x4 if capped else 0),
                    "DCGM_FI_DEV_POWER_MGMT_LIMIT": limit,
                    "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF": 700.0,
                    "DCGM_FI_DEV_SLOWDOWN_TEMP": 87.0,
                    "DCGM_FI_DEV_SHUTDOWN_TEMP": 92.0,
                    "DCGM_FI_DEV_MAX_SM_CLOCK": 1980.0,
                    "DCGM_FI_DEV_PCIE_LINK_GEN": 5.0,
                    "DCGM_FI_DEV_PCIE_LINK_WIDTH": 16.0,
                    "DCGM_FI_DEV_PCIE_MAX_LINK_GEN": 5.0,
                    "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH": 16.0,
                }
            )
        out.update({k: v for k, v in board.items() if k in out})
        return out

    def page(self, node: str, tick: int) -> str:
        """The node's exposition (text format 0.0.4, as dcgm-exporter writes it). Each
        series' name and labels are written once a node and kept; only the values are
        new each collection, so a scrape costs the harness little."""
        heads = self._heads.get(node)
        if heads is None:
            labels = [_labels(self.labels(node, g)) for g in range(self.gpus)]
            names = list(self.values(node, 0, 0))
            heads = self._heads[node] = [(n, [n + text for text in labels]) for n in names]
        rows = [self.values(node, g, tick) for g in range(self.gpus)]
        lines: list[str] = []
        for name, series in heads:
            lines.append(f"# HELP {name} {name}.")
            lines.append(f"# TYPE {name} gauge")
            lines += [f"{head} {values[name]!r}" for head, values in zip(series, rows, strict=True)]
        return "\n".join(lines) + "\n"

    def history(
        self, start: float, end: float, step: float, job: str, millis: bool = False
    ) -> Iterator[str]:
        """Every node's readings from ``start`` to ``end``, one collection a ``step``, as
        OpenMetrics lines (or, ``millis``, the text format with millisecond times)."""
        times = [start + i * step for i in range(int((end - start) // step) + 1)]
        nodes = [n for n in self.nodes if n not in self.dead]
        first = self.values(nodes[0], 0, 0) if nodes else {}
        for name in first:
            if not millis:
                yield f"# TYPE {name} gauge"
            for node in nodes:
                for gpu in range(self.gpus):
                    labels = {**self.labels(node, gpu), "job": job, "instance": f"{node}:9400"}
                    text = f"{name}{_labels(labels)}"
                    for when in times:
                        if when > end - self.stopped.get(node, -1.0):
                            break
                        value = self.values(node, gpu, int(when // step))[name]
                        stamp = f"{int(when * 1000)}" if millis else f"{when:.3f}"
                        yield f"{text} {value!r} {stamp}"
        # the scrape's own series: 1 for a target that answered, 0 for a dead one
        if not millis:
            yield "# TYPE up gauge"
        for node in self.nodes:
            text = f"up{_labels({'job': job, 'instance': f'{node}:9400'})}"
            for when in times:
                gone = node in self.dead or when > end - self.stopped.get(node, -1.0)
                value = 0.0 if gone else 1.0
                stamp = f"{int(when * 1000)}" if millis else f"{when:.3f}"
                yield f"{text} {value!r} {stamp}"
        if not millis:
            yield "# EOF"


def _clock(kind: str | None, top: float) -> float:
    """The SM clock a planted problem holds the GPU at (its maximum when healthy)."""
    return {THERMAL: 1410.0, POWER_CAP: 1300.0, HELD: 1095.0}.get(kind or "", top)


def _labels(labels: Mapping[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def _digest(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()


class Exporters:
    """Every node's page from one HTTP server on 127.0.0.1 (``?node=NAME``).

    Cheap by design, so that a benchmark measures gputui and the server, not the harness:
    a node's page is rendered once a scrape interval (its values move each interval, as a
    real exporter's do between scrapes) and kept as bytes, so a second scrape in the same
    interval costs a lookup; connections stay open (HTTP/1.1), as Prometheus keeps them."""

    def __init__(self, plan: Plan, interval_s: float) -> None:
        self.plan = plan
        self.interval_s = interval_s
        self.scrapes = 0
        self.rendered = 0
        self._pages: dict[str, tuple[int, bytes]] = {}
        self._lock = threading.Lock()
        exporters = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                body = exporters.body((query.get("node") or [""])[0])
                self.send_response(200 if body is not None else 503)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.address = f"127.0.0.1:{self.server.server_port}"

    def body(self, node: str) -> bytes | None:
        """The node's page for this interval (rendered at its first scrape), or None for
        a node that is not in the plan or whose exporter is down."""
        self.scrapes += 1
        if node not in self.plan.nodes or node in self.plan.dead or node in self.plan.stopped:
            return None
        tick = int(time.time() // self.interval_s)
        with self._lock:
            kept = self._pages.get(node)
            if kept is None or kept[0] != tick:
                self.rendered += 1
                kept = self._pages[node] = (tick, self.plan.page(node, tick).encode())
        return kept[1]

    def scrape_config(
        self,
        job: str,
        nodes: list[str] | None = None,
        rules: Path | None = None,
        alertmanager: str | None = None,
    ) -> str:
        """The scrape configuration (YAML, written as JSON) with one target a node; with
        ``rules``, that rules file evaluated every interval, its alerts sent to the
        ``alertmanager`` (HOST:PORT)."""
        targets = [
            {
                "targets": [self.address],
                "labels": {"__param_node": node, "instance": f"{node}:9400"},
            }
            for node in (nodes if nodes is not None else self.plan.nodes)
        ]
        interval = f"{self.interval_s:g}s"
        config: dict[str, object] = {
            "global": {"scrape_interval": interval, "evaluation_interval": interval},
            "scrape_configs": [
                {
                    "job_name": job,
                    "scrape_interval": interval,
                    "scrape_timeout": f"{min(10.0, self.interval_s):g}s",
                    "metrics_path": "/metrics",
                    "static_configs": targets,
                }
            ],
        }
        if rules is not None:
            config["rule_files"] = [str(rules)]
        if alertmanager is not None:
            config["alerting"] = {
                "alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]
            }
        return json.dumps(config, indent=1)

    def shutdown(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    exporters: Exporters
    kind: str

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        self.exporters.shutdown()


def start_prometheus(
    plan: Plan,
    interval_s: float,
    work: Path,
    history_s: float = 900.0,
    job: str = "dcgm",
    rules: Path | None = None,
    alertmanager: str | None = None,
) -> Server:
    """Prometheus over the plan's exporters, its history before now written at once (and
    ``rules`` evaluated, their alerts sent to ``alertmanager``: ``scrape_config``)."""
    binary, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if binary is None or promtool is None:
        raise FileNotFoundError("prometheus")
    exporters = Exporters(plan, interval_s)
    data = work / "data"
    data.mkdir(parents=True, exist_ok=True)
    # The history, the scrape's `up` included, ends just before the server starts: its
    # first scrapes continue the written series (it drops samples older than its blocks),
    # and until they come every node's newest reading is a few seconds old, as on a server
    # that has run all along.
    end = time.time() - 1.0
    if history_s > 0:
        history = work / "history.om"
        with history.open("w") as out:
            for line in plan.history(end - history_s, end, interval_s, job):
                out.write(line + "\n")
        subprocess.run(
            [promtool, "tsdb", "create-blocks-from", "openmetrics", str(history), str(data)],
            check=True,
            capture_output=True,
        )
        history.unlink()
    config = work / "prometheus.yml"
    config.write_text(exporters.scrape_config(job, rules=rules, alertmanager=alertmanager))
    port = free_port()
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--storage.tsdb.retention.time=1y",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = Server(f"http://127.0.0.1:{port}", process, exporters, "prometheus")
    _wait_known(server, plan, interval_s)
    return server


def start_victoria(
    plan: Plan, interval_s: float, work: Path, history_s: float = 900.0, job: str = "dcgm"
) -> Server:
    """VictoriaMetrics (single node) scraping the plan's exporters; history imported."""
    binary = shutil.which("victoria-metrics")
    if binary is None:
        raise FileNotFoundError("victoria-metrics")
    exporters = Exporters(plan, interval_s)
    config = work / "scrape.yml"
    config.write_text(exporters.scrape_config(job))
    port = free_port()
    process = subprocess.Popen(
        [
            binary,
            f"-storageDataPath={work / 'vm'}",
            f"-httpListenAddr=127.0.0.1:{port}",
            f"-promscrape.config={config}",
            "-promscrape.config.strictParse=false",  # evaluation_interval is Prometheus's
            "-retentionPeriod=100y",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    server = Server(url, process, exporters, "victoria-metrics")
    _wait_answer(f"{url}/health", process)
    if history_s > 0:
        end = time.time() - 1.0
        lines = list(plan.history(end - history_s, end, interval_s, job, millis=True))
        for i in range(0, len(lines), 20_000):
            body = ("\n".join(lines[i : i + 20_000]) + "\n").encode()
            request = urllib.request.Request(f"{url}/api/v1/import/prometheus", data=body)
            with urllib.request.urlopen(request, timeout=30):
                pass
        with urllib.request.urlopen(f"{url}/internal/force_flush", timeout=30):
            pass
    _wait_known(server, plan, interval_s)
    return server


def _wait_answer(url: str, process: subprocess.Popen[bytes], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"no answer from {url} within {seconds:g} s")


def _wait_known(server: Server, plan: Plan, interval_s: float) -> None:
    """Until the server answers for every node (its ``up``) and every live GPU: at once
    where the history was written, after the first scrape of each target where it was not
    (the server scrapes its targets at offsets spread over the interval)."""
    live = len([n for n in plan.nodes if n not in plan.dead and n not in plan.stopped])
    live *= plan.gpus
    wanted = {"count(DCGM_FI_DEV_GPU_TEMP)": live, "count(up)": len(plan.nodes)}
    deadline = time.monotonic() + interval_s * 3 + 60
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.kind} exited with {server.process.returncode}")
        if all(_count(server, query) >= goal for query, goal in wanted.items()):
            return
        time.sleep(0.25)
    raise TimeoutError(f"{server.kind} does not answer for every node in time")


def _count(server: Server, query: str) -> float:
    """The instant query's one number, or 0 where there is none yet."""
    params = urllib.parse.urlencode({"query": query, "nocache": "1"})
    try:
        with urllib.request.urlopen(f"{server.url}/api/v1/query?{params}", timeout=2) as r:
            result = json.load(r)["data"]["result"]
        return float(result[0]["value"][1]) if result else 0.0
    except (OSError, ValueError, KeyError, IndexError):
        return 0.0


def missing_binary(name: str) -> str | None:
    """Why a test that needs ``name`` cannot run here, or None."""
    if shutil.which(name) is not None:
        return None
    return f"no {name} binary (apt-get install {name})"


def in_ci() -> bool:
    return os.environ.get("CI") == "true"


def require(*names: str) -> None:
    """Skip the test where one of these binaries is missing, except in CI (CI=true),
    where .ci/run installs Debian's packages and a missing one fails the test."""
    import pytest

    for name in names:
        why = missing_binary(name)
        if why is not None:
            if in_ci():
                pytest.fail(f"CI must have {name} (.ci/run installs Debian's): {why}")
            pytest.skip(why)
