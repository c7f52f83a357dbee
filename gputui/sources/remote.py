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
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import dataclass, field, replace
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from gputui.core.dcgm import (
    BY_NAME,
    LEGACY_MESSAGE,
    LEGACY_PREFIX,
    DcgmField,
    is_blank,
    missing_counters,
)
from gputui.core.model import DeviceInfo, Frame, GpuSample, MigInstance, Note, XidEvent
from gputui.core.names import RULES_NEEDING_HOST, NoteKind, SourceKind
from gputui.core.ranges import within_ranges
from gputui.core.xid import describe_xid
from gputui.sources.base import SourceUnavailable

# What one answer may cost, whatever the other side sends (docs/security.md):
MAX_BYTES = 10 * 1024 * 1024  # the body, once decompressed (and on the wire)
MAX_SERIES = 200_000  # samples in one exposition
MAX_GPUS_PER_NODE = 256  # an NVL72 rack is 72; more is a broken or hostile page
MAX_LABEL_CHARS = 1024  # a label value longer than this is cut
MAX_MIG_PER_GPU = 64  # an A100/H100 has at most 7 GPU instances
_GPU_NUMBER = re.compile(r"[0-9]{1,4}")  # ASCII digits only: "٣" or 2**64 is not a GPU
#: Kubernetes labels, as dcgm-exporter's pod mapping names them (and its older names)
K8S_LABELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("pod", ("pod", "pod_name")),
    ("namespace", ("namespace", "pod_namespace")),
    ("container", ("container", "container_name")),
)


class ScrapeError(Exception):
    pass


def _valid(value: float, dcgm: DcgmField) -> bool:
    if math.isnan(value) or math.isinf(value) or value < 0:
        return False
    if not math.isfinite(value * dcgm.scale):  # 1e308 MiB is no memory size: not a reading
        return False
    return not is_blank(value, dcgm.blank)


@dataclass
class NodeMig:
    """One MIG instance's series (labels GPU_I_ID, GPU_I_PROFILE) of one GPU."""

    gpu_instance_id: int
    labels: dict[str, str]
    values: dict[str, float] = field(default_factory=dict)


@dataclass
class NodeGpu:
    """One GPU of one scrape: its labels and its numbers (by DCGM field name)."""

    gpu: int
    labels: dict[str, str]
    values: dict[str, float] = field(default_factory=dict)
    #: series for a field this GPU already had: ignored (the first is kept), and said
    duplicates: int = 0
    #: its MIG instances' series, by GPU instance id (never merged into the GPU's)
    mig: dict[int, NodeMig] = field(default_factory=dict)
    #: model attributes the page carried a series for, blank or not (what it can judge)
    present: set[str] = field(default_factory=set)


def parse_exposition(text: str) -> tuple[str | None, dict[int, NodeGpu]]:
    """The node's host name (if labelled) and its GPUs, from a Prometheus text exposition.

    Bounded whatever the page says: at most MAX_SERIES samples, MAX_GPUS_PER_NODE GPUs,
    label values cut to MAX_LABEL_CHARS; anything beyond is refused, not stored.
    """
    node = NodeSeries()
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                node.add(sample.name, sample.labels, float(sample.value))
    except ScrapeError:
        raise
    except Exception as exc:  # the parser raises ValueError and friends on garbage
        raise ScrapeError(f"not a Prometheus exposition ({type(exc).__name__})") from exc
    return node.finish()


class NodeSeries:
    """One node's GPUs built series by series, within the bounds, whatever the input:
    a scraped page, or a Prometheus server's answer for that node."""

    def __init__(self) -> None:
        self.hostname: str | None = None
        self.gpus: dict[int, NodeGpu] = {}
        self.seen = 0
        self.legacy = False

    def add(self, name: str, labels: dict[str, str], value: float) -> None:
        self.seen += 1
        if self.seen > MAX_SERIES:
            raise ScrapeError(f"more than {MAX_SERIES:,} series: refused")
        dcgm = BY_NAME.get(name)
        if dcgm is None:
            if name.startswith(LEGACY_PREFIX):
                self.legacy = True
            return
        gpu_label = labels.get("gpu")
        if gpu_label is None or not _GPU_NUMBER.fullmatch(gpu_label):
            return
        number = int(gpu_label)
        entry = self.gpus.get(number)
        if entry is None:
            if len(self.gpus) >= MAX_GPUS_PER_NODE:
                raise ScrapeError(f"more than {MAX_GPUS_PER_NODE} GPUs on one node: refused")
            entry = self.gpus[number] = NodeGpu(number, _kept(labels))
            self.hostname = (
                self.hostname or entry.labels.get("Hostname") or entry.labels.get("hostname")
            )
        values = entry.values
        instance = labels.get("GPU_I_ID")
        if instance is not None and _GPU_NUMBER.fullmatch(instance):
            mig = entry.mig.get(int(instance))
            if mig is None:
                if len(entry.mig) >= MAX_MIG_PER_GPU:
                    raise ScrapeError(
                        f"more than {MAX_MIG_PER_GPU} MIG instances on GPU {number}: refused"
                    )
                mig = entry.mig[int(instance)] = NodeMig(int(instance), _kept(labels))
            if dcgm.name in _INSTANCE_FIELDS:
                values = mig.values
            elif dcgm.name in values:  # a GPU-wide field repeated per instance
                return
            else:
                entry.present.add(dcgm.attr)
        else:
            entry.present.add(dcgm.attr)
            if dcgm.attr == "xid":
                for key in ("err_code", "err_msg"):
                    if key in labels:
                        entry.labels[key] = labels[key][:MAX_LABEL_CHARS]
        if dcgm.name in values:
            entry.duplicates += 1
        elif _valid(value, dcgm):
            values[dcgm.name] = value

    def finish(self) -> tuple[str | None, dict[int, NodeGpu]]:
        if not self.gpus:
            raise ScrapeError(LEGACY_MESSAGE if self.legacy else "no GPU metrics in the answer")
        return self.hostname, self.gpus


#: fields DCGM reads per MIG instance; every other field is the whole GPU's
_INSTANCE_FIELDS = frozenset(
    (
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_RESERVED",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_PROF_SM_ACTIVE",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "DCGM_FI_PROF_PCIE_RX_BYTES",
    )
)


def _kept(labels: dict[str, str]) -> dict[str, str]:
    return {k[:64]: v[:MAX_LABEL_CHARS] for k, v in labels.items()}


def _cut(holder: list[socket.socket]) -> None:
    """The deadline passed: unblock whatever the fetching thread waits for. The socket is
    held from the moment it connected: an HTTP/1.0 answer takes it off the connection."""
    for sock in holder:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def fetch(url: str, timeout: float, headers: dict[str, str] | None = None) -> str:
    """The page at ``url``, or ScrapeError. ``timeout`` bounds the whole request (connect,
    headers, body: a server that drips a byte a second is cut there), the body is at most
    MAX_BYTES once decompressed (gzip is asked for: a cluster's answer shrinks twentyfold),
    and a redirect is followed only within the same scheme, host and port."""
    deadline = time.monotonic() + timeout
    for _hop in range(3):
        parts = urllib.parse.urlsplit(url)
        try:
            port = parts.port
        except ValueError as exc:
            raise ScrapeError(f"not a port number in {url}") from exc
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ScrapeError(f"not an http(s) URL: {url}")
        if deadline - time.monotonic() <= 0:
            break
        got = _get(url, parts, port, deadline, timeout, headers or {})
        if isinstance(got, str):
            return got
        url = got.target
    raise ScrapeError(f"no complete answer within {timeout:g} s")


@dataclass(frozen=True, slots=True)
class _Redirect:
    target: str


def _get(
    url: str,
    parts: urllib.parse.SplitResult,
    port: int | None,
    deadline: float,
    timeout: float,
    headers: dict[str, str],
) -> str | _Redirect:
    """One GET within the deadline: the text, or where a same-host redirect points."""
    left = deadline - time.monotonic()
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname or "", port, timeout=left)
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
            "GET", path, headers={"Accept": "text/plain", "Accept-Encoding": "gzip", **headers}
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
                raise ScrapeError(f"redirected to another host or port ({target}): not followed")
            return _Redirect(target)
        if response.status != 200:
            raise ScrapeError(f"HTTP {response.status}")
        body = _body(response)
        if time.monotonic() >= deadline:  # cut by the watchdog: what came is not all
            raise OSError("deadline passed while reading")
    except ScrapeError:
        raise
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if time.monotonic() >= deadline - 0.01:
            raise ScrapeError(f"no complete answer within {timeout:g} s") from exc
        # Never the text of a ValueError: http.client quotes the offending header in it,
        # and a header can hold a credential.
        reason = type(exc).__name__ if isinstance(exc, ValueError) else exc
        reason = getattr(exc, "reason", None) or reason
        raise ScrapeError(f"unreachable ({reason})") from exc
    finally:
        watchdog.cancel()
        connection.close()
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScrapeError("answer is not text") from exc


def _body(response: http.client.HTTPResponse) -> bytes:
    """The answer's bytes, decompressed as it arrives and cut at MAX_BYTES: what is capped
    is what the parser would hold, not what crossed the wire (a small gzip bomb is refused
    as soon as it grows past the cap)."""
    encoding = (response.getheader("Content-Encoding") or "identity").strip().lower()
    if encoding not in ("identity", "gzip"):
        raise ScrapeError(f"a {encoding}-compressed answer, not asked for: refused")
    declared = response.getheader("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BYTES:
        raise ScrapeError("answer larger than 10 MB")
    gunzip = zlib.decompressobj(16 + zlib.MAX_WBITS) if encoding == "gzip" else None
    body = bytearray()
    wire = 0
    while chunk := response.read(65536):
        wire += len(chunk)
        if wire > MAX_BYTES:
            raise ScrapeError("answer larger than 10 MB")
        if gunzip is not None:
            chunk = gunzip.decompress(chunk, MAX_BYTES + 1 - len(body))
            if gunzip.unconsumed_tail:
                raise ScrapeError("answer larger than 10 MB once decompressed")
        body += chunk
        if len(body) > MAX_BYTES:
            raise ScrapeError(
                "answer larger than 10 MB once decompressed"
                if gunzip
                else "answer larger than 10 MB"
            )
    if gunzip is not None:
        body += gunzip.flush(MAX_BYTES + 1 - len(body))
        if len(body) > MAX_BYTES:
            raise ScrapeError("answer larger than 10 MB once decompressed")
    return bytes(body)


@dataclass
class _Node:
    url: str
    name: str
    first_index: int = 0
    gpus: tuple[int, ...] = ()  # the node's own GPU numbers, in our index order
    pending: Future[str] | None = None
    #: the rules its page leaves blind, said once a tick (computed when it opened)
    blind_note: Note | None = None
    #: the last Xid code seen per GPU number: a new code is a new event
    xid: dict[int, int] = field(default_factory=dict)


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
            node.blind_note = blind_note(node.name, gpus.values())
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
            if node.blind_note is not None:
                notes.append(node.blind_note)
            for offset, number in enumerate(node.gpus):
                entry = gpus.get(number)
                if entry is not None:
                    sample = _sample(node.first_index + offset, entry)
                    samples.append(_with_xid(sample, entry, node.name, node.xid, now, notes))
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


def blind_note(node: str, gpus: Iterable[NodeGpu]) -> Note | None:
    """The rules a node's page leaves blind, and the counters-CSV lines that enable them."""
    present: set[str] = set()
    for entry in gpus:
        present |= entry.present
    blind, lines = missing_counters(present)
    if not blind:
        return None
    rules = ", ".join(f"{rule} (needs {', '.join(needs)})" for rule, needs in blind.items())
    return Note(
        NoteKind.RULES_BLIND,
        f"node {node}: the exporter's counters leave these rules blind: {rules}. "
        "Add to its counters CSV (dcgm-exporter -f FILE): " + " | ".join(lines),
    )


def _device(index: int, node: str, entry: NodeGpu) -> DeviceInfo:
    labels = entry.labels
    facts: dict[str, Any] = {}
    for name, value in entry.values.items():
        dcgm = BY_NAME[name]
        if dcgm.on == "device":
            facts[dcgm.attr] = dcgm.to_model(value)
    for attr, keys in K8S_LABELS:
        found = next((labels[k] for k in keys if labels.get(k)), None)
        if found:
            facts[attr] = found
    info = DeviceInfo(
        index=index,
        name=labels.get("modelName") or f"GPU {entry.gpu}",
        uuid=labels.get("UUID") or labels.get("uuid"),
        pci_bus_id=labels.get("pci_bus_id"),
        driver_version=labels.get("DCGM_FI_DRIVER_VERSION"),
        node=node,
        node_index=entry.gpu,
        mig_mode=True if entry.mig else None,
    )
    return replace(info, **facts)


_NOT_SAMPLE_FIELDS = frozenset(("xid", "gr_active"))


def _memory(fields: dict[str, Any]) -> None:
    """used + free + reserved is the total (DCGM: FB_TOTAL = used + free + reserved)."""
    used, free = fields.get("mem_used"), fields.get("mem_free")
    if used is not None and free is not None:
        fields["mem_total"] = used + free + (fields.get("mem_reserved") or 0)


def _model_fields(values: dict[str, float]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, value in values.items():
        dcgm = BY_NAME[name]
        if dcgm.on == "sample":
            fields[dcgm.attr] = dcgm.to_model(value)
    return fields


def _mig(mig: NodeMig) -> MigInstance:
    fields = _model_fields(mig.values)
    _memory(fields)
    return MigInstance(
        gpu_instance_id=mig.gpu_instance_id,
        profile=mig.labels.get("GPU_I_PROFILE") or None,
        mem_used=fields.get("mem_used"),
        mem_total=fields.get("mem_total"),
        sm_activity=fields.get("sm_activity"),
        gr_active=fields.get("gr_active"),
        tensor_activity=fields.get("tensor_activity"),
    )


def _sample(index: int, entry: NodeGpu) -> GpuSample:
    own = _model_fields(entry.values)
    fields = {k: v for k, v in own.items() if k not in _NOT_SAMPLE_FIELDS}
    if "util_gpu" not in fields and own.get("gr_active") is not None:
        # the GPU's own graphics-engine activity (no GPU_I_ID) is its utilisation: a MIG
        # GPU has no GPU_UTIL, and profiling-only counter sets leave it out
        fields["util_gpu"] = own["gr_active"]
    if fields.get("mem_temp_c") == 0:  # GDDR boards have no sensor; DCGM says 0 there
        del fields["mem_temp_c"]
    _memory(fields)
    if entry.mig:
        instances = tuple(_mig(entry.mig[i]) for i in sorted(entry.mig))
        fields["mig_instances"] = instances
        used = [m.mem_used for m in instances]
        if "mem_used" not in fields and used and all(u is not None for u in used):
            fields["mem_used"] = sum(u for u in used if u is not None)
    return within_ranges(GpuSample(index=index, **fields))


def _with_xid(
    sample: GpuSample,
    entry: NodeGpu,
    node: str,
    seen: dict[int, int],
    now: float,
    notes: list[Note],
) -> GpuSample:
    """DCGM's XID_ERRORS holds the last Xid's code: a code not seen before is an event."""
    code = entry.values.get("DCGM_FI_DEV_XID_ERRORS")
    if code is None or code == 0:
        return sample
    number = int(code)
    message = entry.labels.get("err_msg")
    notes.append(
        Note(
            NoteKind.GENERAL,
            f"node {node} GPU {entry.gpu}: last Xid {number} ({message or describe_xid(number)})",
        )
    )
    if seen.get(entry.gpu) == number:
        return sample
    seen[entry.gpu] = number
    return replace(sample, xid_events=(XidEvent(number, now),))
