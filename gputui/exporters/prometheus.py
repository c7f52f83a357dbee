"""Prometheus exposition of the readings and findings, under dcgm-exporter's names.

Existing Grafana dashboards built for dcgm-exporter work unchanged: the metric names,
units and labels (gpu, UUID, pci_bus_id, device, modelName, Hostname) are dcgm-exporter's
where one exists. What dcgm-exporter lacks is exported as ``gputui_*``, the advisor's
findings among it. A scrape reads the monitor's latest state; it never calls NVML.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable, Iterator
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gputui.dcgm import FIELDS, DcgmField
from gputui.model import DeviceInfo, GpuSample
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
        self._hostname = hostname or socket.gethostname()

    def _labels(self, device: DeviceInfo) -> list[str]:
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


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    # The listen backlog: a burst of scrapes waits in the kernel's queue. With the
    # standard library's 5, a burst overflows it and clients sit in SYN retries for
    # seconds (1, 3, 7... s), which reads as a hung exporter.
    request_queue_size = 128


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


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
