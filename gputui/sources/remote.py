"""Remote nodes: GPUs read from Prometheus endpoints (dcgm-exporter or `gputui export`).

Each tick fetches every endpoint in parallel with a deadline; a node that times out, resets
or sends something that is not an exposition is marked down for that tick and the other
nodes keep updating. GPUs get one index across all nodes, in the order the endpoints were
given; ``DeviceInfo.node`` says where each lives.
"""

from __future__ import annotations

import contextlib
import http.client
import math
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import dataclass, field, replace
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from gputui.dcgm import BY_NAME
from gputui.model import DeviceInfo, Frame, GpuSample, Note
from gputui.names import RULES_NEEDING_HOST, NoteKind, SourceKind
from gputui.sources.base import SourceUnavailable

# What one answer may cost, whatever the other side sends (docs/security.md):
MAX_BYTES = 10 * 1024 * 1024  # the body, never decompressed (we ask for identity)
MAX_SERIES = 200_000  # samples in one exposition
MAX_GPUS_PER_NODE = 256  # an NVL72 rack is 72; more is a broken or hostile page
MAX_LABEL_CHARS = 1024  # a label value longer than this is cut
_GPU_NUMBER = re.compile(r"[0-9]{1,4}")  # ASCII digits only: "٣" or 2**64 is not a GPU
# DCGM's "blank" values (not supported / no data) start here, for every value type.
_DCGM_BLANK_INT32 = 0x7FFFFFF0
_DCGM_BLANK_FP64 = 140737488355328.0


class ScrapeError(Exception):
    pass


def _valid(value: float) -> bool:
    if math.isnan(value) or math.isinf(value) or value < 0:
        return False
    if value >= _DCGM_BLANK_FP64:
        return False
    return not (value.is_integer() and _DCGM_BLANK_INT32 <= value <= 0xFFFFFFFF)


@dataclass
class NodeGpu:
    """One GPU of one scrape: its labels and its numbers."""

    gpu: int
    labels: dict[str, str]
    values: dict[str, float] = field(default_factory=dict)
    #: series for a field this GPU already had: ignored (the first is kept), and said
    duplicates: int = 0


def parse_exposition(text: str) -> tuple[str | None, dict[int, NodeGpu]]:
    """The node's host name (if labelled) and its GPUs, from a Prometheus text exposition.

    Bounded whatever the page says: at most MAX_SERIES samples, MAX_GPUS_PER_NODE GPUs,
    label values cut to MAX_LABEL_CHARS; anything beyond is refused, not stored.
    """
    hostname: str | None = None
    gpus: dict[int, NodeGpu] = {}
    seen = 0
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                seen += 1
                if seen > MAX_SERIES:
                    raise ScrapeError(f"more than {MAX_SERIES:,} series: refused")
                name = sample.name
                if name not in BY_NAME:
                    continue
                labels = sample.labels
                gpu_label = labels.get("gpu")
                if gpu_label is None or not _GPU_NUMBER.fullmatch(gpu_label):
                    continue
                number = int(gpu_label)
                entry = gpus.get(number)
                if entry is None:
                    if len(gpus) >= MAX_GPUS_PER_NODE:
                        raise ScrapeError(
                            f"more than {MAX_GPUS_PER_NODE} GPUs on one node: refused"
                        )
                    kept = {k[:64]: v[:MAX_LABEL_CHARS] for k, v in labels.items()}
                    entry = gpus[number] = NodeGpu(number, kept)
                    hostname = hostname or kept.get("Hostname") or kept.get("hostname")
                value = float(sample.value)
                if name in entry.values:
                    entry.duplicates += 1
                elif _valid(value):
                    entry.values[name] = value
    except ScrapeError:
        raise
    except Exception as exc:  # the parser raises ValueError and friends on garbage
        raise ScrapeError(f"not a Prometheus exposition ({type(exc).__name__})") from exc
    if not gpus:
        raise ScrapeError("no GPU metrics in the answer")
    return hostname, gpus


def _cut(holder: list[socket.socket]) -> None:
    """The deadline passed: unblock whatever the fetching thread waits for. The socket is
    held from the moment it connected: an HTTP/1.0 answer takes it off the connection."""
    for sock in holder:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def fetch(url: str, timeout: float) -> str:
    """The page at ``url``, or ScrapeError. ``timeout`` bounds the whole request (connect,
    headers, body: a server that drips a byte a second is cut there), the body is at most
    MAX_BYTES, and a redirect is followed only within the same scheme, host and port."""
    deadline = time.monotonic() + timeout
    for _hop in range(3):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ScrapeError(f"not an http(s) URL: {url}")
        left = deadline - time.monotonic()
        if left <= 0:
            break
        kind = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        connection = kind(parts.hostname, parts.port, timeout=left)
        held: list[socket.socket] = []
        watchdog = threading.Timer(left, _cut, (held,))
        watchdog.daemon = True
        watchdog.start()
        try:
            connection.connect()
            if connection.sock is not None:
                held.append(connection.sock)
            if time.monotonic() >= deadline:  # the watchdog may have fired before it was held
                raise OSError("deadline passed while connecting")
            path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
            connection.request(
                "GET", path, headers={"Accept": "text/plain", "Accept-Encoding": "identity"}
            )
            response = connection.getresponse()
            if response.status in (301, 302, 303, 307, 308):
                target = urllib.parse.urljoin(url, response.getheader("Location") or "")
                there = urllib.parse.urlsplit(target)
                if (there.scheme, there.hostname, there.port) != (
                    parts.scheme,
                    parts.hostname,
                    parts.port,
                ):
                    raise ScrapeError(
                        f"redirected to another host or port ({target}): not followed"
                    )
                url = target
                continue
            if response.status != 200:
                raise ScrapeError(f"HTTP {response.status}")
            encoding = (response.getheader("Content-Encoding") or "identity").lower()
            if encoding != "identity":
                raise ScrapeError(f"a {encoding}-compressed answer, not asked for: refused")
            declared = response.getheader("Content-Length")
            if declared is not None and declared.isdigit() and int(declared) > MAX_BYTES:
                raise ScrapeError("answer larger than 10 MB")
            body = bytearray()
            while chunk := response.read(65536):
                body += chunk
                if len(body) > MAX_BYTES:
                    raise ScrapeError("answer larger than 10 MB")
            if time.monotonic() >= deadline:  # cut by the watchdog: what came is not all
                raise OSError("deadline passed while reading")
        except ScrapeError:
            raise
        except (OSError, http.client.HTTPException, ValueError) as exc:
            if time.monotonic() >= deadline - 0.01:
                raise ScrapeError(f"no complete answer within {timeout:g} s") from exc
            reason = getattr(exc, "reason", None) or exc
            raise ScrapeError(f"unreachable ({reason})") from exc
        finally:
            watchdog.cancel()
            connection.close()
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ScrapeError("answer is not text") from exc
    raise ScrapeError(f"no complete answer within {timeout:g} s")


@dataclass
class _Node:
    url: str
    name: str
    first_index: int = 0
    gpus: tuple[int, ...] = ()  # the node's own GPU numbers, in our index order
    pending: Future[str] | None = None


class RemoteSource:
    label = "REMOTE"
    kind = SourceKind.REMOTE

    def __init__(
        self,
        urls: Sequence[str],
        timeout_s: float = 2.0,
        clock: Callable[[], float] = time.time,
        fetcher: Callable[[str, float], str] = fetch,
    ) -> None:
        self._nodes = [
            _Node(url=_metrics_url(u), name=urllib.parse.urlsplit(_metrics_url(u)).netloc)
            for u in urls
        ]
        self._timeout = timeout_s
        self._clock = clock
        self._fetch = fetcher
        self._pool = ThreadPoolExecutor(
            max_workers=max(1, len(urls)), thread_name_prefix="gputui-remote"
        )
        self._devices: list[DeviceInfo] = []

    def open(self) -> tuple[DeviceInfo, ...]:
        results = self._scrape()
        answered = [
            (node, result)
            for node in self._nodes
            if (result := results.get(node.url)) is not None and not isinstance(result, ScrapeError)
        ]
        names = [hostname or node.name for node, (hostname, _gpus) in answered]
        devices: list[DeviceInfo] = []
        for (node, (_hostname, gpus)), name in zip(answered, names, strict=True):
            # two endpoints on one host (or unlabelled) are kept apart by their address
            node.name = (
                name
                if names.count(name) == 1
                else f"{name}@{urllib.parse.urlsplit(node.url).netloc}"
            )
            node.first_index = len(devices)
            node.gpus = tuple(sorted(gpus))
            for number in node.gpus:
                devices.append(_device(len(devices), node.name, gpus[number]))
        if not devices:
            reasons = "; ".join(f"{n.url}: {results.get(n.url)}" for n in self._nodes)
            raise SourceUnavailable(f"no GPUs could be read from the sources ({reasons}).")
        self._devices = devices
        return tuple(devices)

    def _scrape(self) -> dict[str, tuple[str | None, dict[int, NodeGpu]] | ScrapeError]:
        started = time.monotonic()
        for node in self._nodes:
            if node.pending is None:  # a node still hanging from before is not asked again
                node.pending = self._pool.submit(self._fetch, node.url, self._timeout)
        out: dict[str, tuple[str | None, dict[int, NodeGpu]] | ScrapeError] = {}
        for node in self._nodes:
            assert node.pending is not None
            left = max(0.0, self._timeout - (time.monotonic() - started))
            try:
                text = node.pending.result(timeout=left)
            except FuturesTimeout:
                out[node.url] = ScrapeError(f"no answer within {self._timeout:g} s")
                continue
            except ScrapeError as exc:
                node.pending = None
                out[node.url] = exc
                continue
            except Exception as exc:
                node.pending = None
                out[node.url] = ScrapeError(f"{type(exc).__name__}: {exc}")
                continue
            node.pending = None
            try:
                out[node.url] = parse_exposition(text)
            except ScrapeError as exc:
                out[node.url] = exc
        return out

    def read(self) -> Frame:
        now = self._clock()
        results = self._scrape()
        samples: list[GpuSample] = []
        notes: list[Note] = []
        for node in self._nodes:
            result = results.get(node.url)
            if isinstance(result, ScrapeError) or result is None:
                if node.gpus:
                    notes.append(Note(NoteKind.NODE_DOWN, f"node {node.name} is down: {result}"))
                else:
                    notes.append(
                        Note(
                            NoteKind.NODE_EMPTY, f"node {node.url} gave no GPUs at start: {result}"
                        )
                    )
                continue
            _hostname, gpus = result
            duplicates = sum(entry.duplicates for entry in gpus.values())
            if duplicates:
                notes.append(
                    Note(
                        NoteKind.GENERAL,
                        f"node {node.name}: {duplicates} duplicate series ignored "
                        "(the first of each kept)",
                    )
                )
            for offset, number in enumerate(node.gpus):
                entry = gpus.get(number)
                if entry is not None:
                    samples.append(_sample(node.first_index + offset, entry))
        notes.append(
            Note(
                NoteKind.RULES_BLIND,
                "remote source: no process or host readings, so these rules cannot run: "
                + ", ".join(RULES_NEEDING_HOST),
            )
        )
        return Frame(time=now, gpus=tuple(samples), notes=tuple(notes))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _metrics_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
    path = parts.path if parts.path not in ("", "/") else "/metrics"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _device(index: int, node: str, entry: NodeGpu) -> DeviceInfo:
    labels = entry.labels
    facts: dict[str, Any] = {}
    for name, value in entry.values.items():
        dcgm = BY_NAME[name]
        if dcgm.on == "device":
            facts[dcgm.attr] = dcgm.to_model(value)
    info = DeviceInfo(
        index=index,
        name=labels.get("modelName") or f"GPU {entry.gpu}",
        uuid=labels.get("UUID") or labels.get("uuid"),
        pci_bus_id=labels.get("pci_bus_id"),
        driver_version=labels.get("DCGM_FI_DRIVER_VERSION"),
        node=node,
        node_index=entry.gpu,
    )
    return replace(info, **facts)


def _sample(index: int, entry: NodeGpu) -> GpuSample:
    fields: dict[str, Any] = {}
    for name, value in entry.values.items():
        dcgm = BY_NAME[name]
        if dcgm.on == "sample":
            fields[dcgm.attr] = dcgm.to_model(value)
    used, free = fields.get("mem_used"), fields.get("mem_free")
    if used is not None and free is not None:
        fields["mem_total"] = used + free
    return GpuSample(index=index, **fields)
