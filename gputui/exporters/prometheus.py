"""Prometheus exposition of the readings and findings, under dcgm-exporter's names.

Existing Grafana dashboards built for dcgm-exporter work unchanged: the metric names,
units and labels (gpu, UUID, pci_bus_id, device, modelName, Hostname) are dcgm-exporter's
where one exists. What dcgm-exporter lacks is exported as ``gputui_*``, the advisor's
findings among it. A scrape reads the monitor's latest state; it never calls NVML.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gputui.core.dcgm import FIELDS, DcgmField
from gputui.core.model import DeviceInfo, GpuSample
from gputui.core.sanitize import clean
from gputui.sampling.monitor import Monitor

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION")


def _value(field: DcgmField, sample: GpuSample, device: DeviceInfo) -> float | None:
    value = getattr(sample if field.on == "sample" else device, field.attr)
    return None if value is None else field.to_exposition(value)


class GputuiCollector(Collector):
    """Builds the exposition from the monitor's latest frame and findings at scrape time."""

    def __init__(self, monitor: Monitor, hostname: str | None = None) -> None:
        self._monitor = monitor
        self._hostname = clean(hostname or socket.gethostname())

    def _labels(self, device: DeviceInfo) -> list[str]:
        # Device fields are clean by construction; the host name is the machine's own,
        # cleaned once in __init__ all the same.
        return [
            str(device.index),
            device.uuid or "",
            device.pci_bus_id or "",
            f"nvidia{device.index}",
            device.name,
            self._hostname,
            device.driver_version or "",
        ]

    def collect(self) -> Iterator[Metric]:
        monitor = self._monitor
        frame = monitor.latest  # one immutable frame: a consistent scrape
        findings = monitor.findings
        devices = monitor.devices
        samples = {s.index: s for s in frame.gpus} if frame is not None else {}
        lost = GaugeMetricFamily(
            "gputui_gpu_lost", "1 when the GPU fell off the bus.", labels=LABELS
        )
        for field in FIELDS:
            # All gauges, counters too: prometheus-client would rename a counter to
            # NAME_total, and dashboards query dcgm-exporter's exact names.
            family = GaugeMetricFamily(field.name, field.help, labels=LABELS)
            for device in devices:
                sample = samples.get(device.index)
                if sample is None or sample.lost:
                    continue
                value = _value(field, sample, device)
                if value is not None:  # unsupported: no sample, never a fake 0
                    family.add_metric(self._labels(device), float(value))
            yield family
        for device in devices:
            sample = samples.get(device.index)
            lost.add_metric(
                self._labels(device), 1.0 if sample is not None and sample.lost else 0.0
            )
        yield lost
        finding = GaugeMetricFamily(
            "gputui_finding",
            "An active finding of gputui's advisor (1), by rule, severity and GPU.",
            labels=("rule", "severity", "gpu", "Hostname"),
        )
        for f in findings:
            finding.add_metric(
                [
                    f.rule.value,
                    f.severity.value,
                    "" if f.gpu is None else str(f.gpu),
                    self._hostname,
                ],
                1.0,
            )
        yield finding
        age = GaugeMetricFamily(
            "gputui_last_frame_timestamp_seconds",
            "Time of the newest reading (Unix seconds); stale when it stops moving.",
            labels=("Hostname",),
        )
        if frame is not None:
            age.add_metric([self._hostname], frame.time)
        yield age


# What scrapers may cost the machine the exporter shares with a training job
# (docs/security.md): a Prometheus server scrapes with one connection at a time.
MAX_CONNECTIONS = 32  # requests served at once; more complete ones are answered 503
# Connections still sending their request line and headers: each has a thread for at most
# HEADER_TIMEOUT_S, and they never hold one of the MAX_CONNECTIONS slots, so a crowd of
# idle or dripping clients cannot turn a real scrape away. Past MAX_PENDING the oldest of
# them is cut to let the new one in: a crowd that reopens what is cut cannot keep the
# slots full either (a scrape sends its request at once; the crowd's oldest waits longest).
MAX_PENDING = 128
HEADER_TIMEOUT_S = 2.0
REQUEST_TIMEOUT_S = 10.0  # a whole request once its headers are in, slow client included


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    # The listen backlog: a burst of scrapes waits in the kernel's queue. With the
    # standard library's 5, a burst overflows it and clients sit in SYN retries for
    # seconds (1, 3, 7... s), which reads as a hung exporter.
    request_queue_size = 128

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: connections still sending their request, oldest first
        self._waiting: dict[socket.socket, None] = {}
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._serving: set[socket.socket] = set()
        # One thread watches every request's deadline (not a timer thread per request).
        self._deadlines: dict[socket.socket, float] = {}
        self._deadlines_lock = threading.Lock()
        self._stopped = threading.Event()
        reaper = threading.Thread(target=self._reap, name="gputui-export-reaper", daemon=True)
        reaper.start()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._deadlines_lock:
            oldest = next(iter(self._waiting)) if len(self._waiting) >= MAX_PENDING else None
            if oldest is not None:  # no longer counted: its thread ends as it is cut
                del self._waiting[oldest]
                self._deadlines.pop(oldest, None)
            self._waiting[request] = None
            self._deadlines[request] = time.monotonic() + HEADER_TIMEOUT_S
        if oldest is not None:
            with contextlib.suppress(OSError):
                oldest.shutdown(socket.SHUT_RDWR)
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._done(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._done(request)

    def shutdown(self) -> None:
        self._stopped.set()
        super().shutdown()

    def server_close(self) -> None:
        self._stopped.set()
        super().server_close()

    def serve(self, request: socket.socket) -> bool:
        """The request's headers are in: a serving slot and the longer deadline, or False
        when every slot is taken (the handler answers 503)."""
        if not self._slots.acquire(blocking=False):
            return False
        with self._deadlines_lock:
            self._waiting.pop(request, None)
            self._serving.add(request)
            self._deadlines[request] = time.monotonic() + REQUEST_TIMEOUT_S
        request.settimeout(REQUEST_TIMEOUT_S)
        return True

    def _done(self, request: socket.socket) -> None:
        with self._deadlines_lock:
            self._deadlines.pop(request, None)
            self._waiting.pop(request, None)
            serving = request in self._serving
            self._serving.discard(request)
        if serving:
            self._slots.release()

    def _reap(self) -> None:
        """A client that drips its request a byte at a time is cut at its deadline."""
        while not self._stopped.wait(0.5):
            now = time.monotonic()
            with self._deadlines_lock:
                overdue = [r for r, deadline in self._deadlines.items() if deadline < now]
            for request in overdue:
                with contextlib.suppress(OSError):
                    request.shutdown(socket.SHUT_RDWR)


class _QuietHandler(WSGIRequestHandler):
    timeout = HEADER_TIMEOUT_S  # each read until the headers are in; the watchdog bounds all
    server: _Server

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if not self.server.serve(self.connection):
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.wfile.write(_BUSY)
            return False
        return True

    def log_message(self, format: str, *args: Any) -> None:
        pass


_BUSY = b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def _get_only(app: WSGIApplication) -> WSGIApplication:
    """Metrics for GET and HEAD only, whatever the prometheus-client release does."""

    def guarded(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            headers = [("Allow", "GET, HEAD"), ("Content-Type", "text/plain; charset=utf-8")]
            start_response("405 Method Not Allowed", headers)
            return [b"405: only GET and HEAD\n"]
        return app(environ, start_response)

    return guarded


def serve_metrics(registry: Collector, host: str, port: int) -> tuple[WSGIServer, threading.Thread]:
    """Serve ``/metrics`` from ``registry`` on a daemon thread; IPv6 for a v6 address."""
    server_class = type(
        "_Server",
        (_Server,),
        {"address_family": socket.AF_INET6 if ":" in host else socket.AF_INET},
    )
    server: WSGIServer = make_server(
        host, port, _get_only(make_wsgi_app(registry)), server_class, _QuietHandler
    )
    thread = threading.Thread(target=server.serve_forever, name="gputui-export", daemon=True)
    thread.start()
    return server, thread
