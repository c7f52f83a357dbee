"""Remote nodes: GPUs read from Prometheus endpoints (dcgm-exporter or `gputui export`).

Each tick fetches every endpoint in parallel with a deadline; a node that times out, resets
or sends something that is not an exposition is marked down for that tick and the other
nodes keep updating. GPUs get one index across all nodes, in the order the endpoints were
given; ``DeviceInfo.node`` says where each lives.
"""

from __future__ import annotations

import math
import re
import time
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import dataclass, field

from gputui.core.dcgm import (
    BY_NAME,
    LEGACY_MESSAGE,
    LEGACY_PREFIX,
    DcgmField,
    is_blank,
    missing_counters,
)
from gputui.core.model import DeviceInfo, Frame, GpuSample, Note
from gputui.core.names import RULES_NEEDING_HOST, NoteKind, SourceKind
from gputui.core.sanitize import mask_secrets
from gputui.core.source import SourceUnavailable
from gputui.sources.exposition import ExpositionError, LabelCache, samples
from gputui.sources.fetching import MAX_BYTES as MAX_BYTES
from gputui.sources.fetching import ScrapeError as ScrapeError
from gputui.sources.fetching import fetch as fetch
from gputui.sources.node_readings import NodeGpu, NodeMig, device_of, sample_of, with_xid

# What one answer may cost, whatever the other side sends (docs/security.md):
MAX_SERIES = 200_000  # samples in one exposition
MAX_GPUS_PER_NODE = 256  # an NVL72 rack is 72; more is a broken or hostile page
MAX_LABEL_CHARS = 1024  # a label value longer than this is cut
MAX_MIG_PER_GPU = 64  # an A100/H100 has at most 7 GPU instances
#: a read that takes this share of the time between two reads: the ticks fall behind
FALLING_BEHIND = 0.9
GPU_NUMBER = re.compile(r"[0-9]{1,4}")  # ASCII digits only: "٣" or 2**64 is not a GPU


def valid_reading(value: float, dcgm: DcgmField) -> bool:
    if math.isnan(value) or math.isinf(value) or value < 0:
        return False
    if not math.isfinite(value * dcgm.scale):  # 1e308 MiB is no memory size: not a reading
        return False
    return not is_blank(value, dcgm.blank)


def parse_exposition(
    text: str, cache: LabelCache | None = None
) -> tuple[str | None, dict[int, NodeGpu]]:
    """The node's host name (if labelled) and its GPUs, from a Prometheus text exposition.

    Bounded whatever the page says: at most MAX_SERIES samples, MAX_GPUS_PER_NODE GPUs,
    label values cut to MAX_LABEL_CHARS; anything beyond is refused, not stored. ``cache``
    (the node's, kept across ticks) holds its label blocks already parsed.
    """
    node = NodeSeries()
    try:
        for name, labels, value in samples(text, cache):
            node.add(name, labels, value)
    except ExpositionError as exc:
        raise ScrapeError(f"not a Prometheus exposition ({exc})") from exc
    return node.finish()


class NodeSeries:
    """One node's GPUs built series by series, within the bounds, whatever the input:
    a scraped page, or a Prometheus server's answer for that node."""

    def __init__(self, max_series: int | None = None) -> None:
        self.hostname: str | None = None
        self.gpus: dict[int, NodeGpu] = {}
        self.seen = 0
        self.legacy = False
        self.max_series = MAX_SERIES if max_series is None else max_series

    def add(self, name: str, labels: dict[str, str], value: float) -> None:
        self.seen += 1
        if self.seen > self.max_series:
            raise ScrapeError(f"more than {self.max_series:,} series: refused")
        dcgm = BY_NAME.get(name)
        if dcgm is None:
            if name.startswith(LEGACY_PREFIX):
                self.legacy = True
            return
        gpu_label = labels.get("gpu")
        if gpu_label is None or not GPU_NUMBER.fullmatch(gpu_label):
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
        if instance is not None and GPU_NUMBER.fullmatch(instance):
            mig = entry.mig.get(int(instance))
            if mig is None:
                if len(entry.mig) >= MAX_MIG_PER_GPU:
                    raise ScrapeError(
                        f"more than {MAX_MIG_PER_GPU} MIG instances on GPU {number}: refused"
                    )
                mig = entry.mig[int(instance)] = NodeMig(int(instance), _kept(labels))
            if dcgm.name in INSTANCE_FIELDS:
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
        elif valid_reading(value, dcgm):
            values[dcgm.name] = value

    def finish(self) -> tuple[str | None, dict[int, NodeGpu]]:
        if not self.gpus:
            raise ScrapeError(LEGACY_MESSAGE if self.legacy else "no GPU metrics in the answer")
        return self.hostname, self.gpus


#: fields DCGM reads per MIG instance; every other field is the whole GPU's
INSTANCE_FIELDS = frozenset(
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


@dataclass
class _Node:
    url: str
    name: str
    first_index: int = 0
    gpus: tuple[int, ...] = ()  # the node's own GPU numbers, in our index order
    pending: Future[str] | None = None
    #: the rules its page leaves blind (computed when it opened), said once a tick with
    #: every node that lacks the same
    blind: Blind | None = None
    #: the last Xid code seen per GPU number: a new code is a new event
    xid: dict[int, int] = field(default_factory=dict)
    #: its page's label blocks, parsed once (the page repeats them tick after tick)
    labels: LabelCache = field(default_factory=dict)


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
        self._last_start: float | None = None
        #: the last read's cost: wall seconds, CPU seconds spent parsing (the benchmark)
        self.read_s = 0.0
        self.parse_cpu_s = 0.0

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
            node.name = name if names.count(name) == 1 else self._distinct(name, node)
            devices += self._adopt(node, gpus, len(devices))
        if not devices:
            reasons = "; ".join(f"{n.url}: {results.get(n.url)}" for n in self._nodes)
            raise SourceUnavailable(f"no GPUs could be read from the sources ({reasons}).")
        self._devices = devices
        return tuple(devices)

    def _distinct(self, name: str, node: _Node) -> str:
        """``name`` kept apart from another node's: by the endpoint's address, and its path
        where another endpoint shares the address (two exporters behind one proxy)."""
        address = urllib.parse.urlsplit(node.url)
        shared = sum(urllib.parse.urlsplit(n.url).netloc == address.netloc for n in self._nodes)
        return f"{name}@{address.netloc}" + (address.path if shared > 1 else "")

    def _adopt(self, node: _Node, gpus: dict[int, NodeGpu], first: int) -> list[DeviceInfo]:
        """A node's GPUs numbered from ``first``: its devices, read from here on."""
        node.first_index = first
        node.gpus = tuple(sorted(gpus))
        node.blind = blind_of(gpus.values())
        return [device_of(first + i, node.name, gpus[n]) for i, n in enumerate(node.gpus)]

    def _join_late(
        self, node: _Node, hostname: str | None, gpus: dict[int, NodeGpu]
    ) -> list[DeviceInfo]:
        """A node that gave no GPUs at start (down, or not up yet) and answers with some
        now: it joins, numbered after the GPUs known so far, instead of never being read."""
        taken = {n.name for n in self._nodes if n.gpus}
        name = hostname or node.name
        node.name = name if name not in taken else self._distinct(name, node)
        joined = self._adopt(node, gpus, len(self._devices))
        self._devices += joined
        return joined

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
            parsing = time.process_time()
            try:
                out[node.url] = parse_exposition(text, node.labels)
            except ScrapeError as exc:
                out[node.url] = exc
            self.parse_cpu_s += time.process_time() - parsing
        return out

    def read(self) -> Frame:
        now = self._clock()
        started = time.monotonic()
        self.parse_cpu_s = 0.0
        results = self._scrape()
        samples: list[GpuSample] = []
        notes: list[Note] = []
        blind: list[tuple[str, Blind]] = []
        joined: list[DeviceInfo] = []
        for node in self._nodes:
            result = results.get(node.url)
            if isinstance(result, ScrapeError) or result is None:
                if node.gpus:
                    notes.append(Note(NoteKind.NODE_DOWN, f"node {node.name} is down: {result}"))
                else:
                    shown = mask_secrets(node.url)
                    notes.append(
                        Note(NoteKind.NODE_EMPTY, f"node {shown} gave no GPUs yet: {result}")
                    )
                continue
            hostname, gpus = result
            if not node.gpus and gpus:
                joined += self._join_late(node, hostname, gpus)
            duplicates = sum(entry.duplicates for entry in gpus.values())
            if duplicates:
                notes.append(
                    Note(
                        NoteKind.GENERAL,
                        f"node {node.name}: {duplicates} duplicate series ignored "
                        "(the first of each kept)",
                    )
                )
            if node.blind is not None:
                blind.append((node.name, node.blind))
            for offset, number in enumerate(node.gpus):
                entry = gpus.get(number)
                if entry is not None:
                    sample = sample_of(node.first_index + offset, entry)
                    samples.append(with_xid(sample, entry, node.name, node.xid, now, notes))
        notes += blind_notes(blind)
        behind = self._behind(started)
        if behind is not None:
            notes.append(behind)
        notes.append(
            Note(
                NoteKind.RULES_BLIND,
                "remote source: no process or host readings, so these rules cannot run: "
                + ", ".join(RULES_NEEDING_HOST),
            )
        )
        return Frame(time=now, gpus=tuple(samples), notes=tuple(notes), joined=tuple(joined))

    def _behind(self, started: float) -> Note | None:
        """Reads that take as long as the time between them: the sampler starts the next
        one at once, and the ticks come as slowly as the pages can be read and parsed."""
        previous, self._last_start = self._last_start, started
        self.read_s = time.monotonic() - started
        if previous is None or self.read_s < FALLING_BEHIND * (started - previous):
            return None
        return Note(
            NoteKind.GENERAL,
            f"reading {len(self._nodes)} node(s) takes {self.read_s:.1f} s a tick "
            f"({1000 * self.parse_cpu_s:.0f} ms of it parsing): the readings fall behind the "
            "interval; put a Prometheus server in front and use --prometheus (docs/cluster.md)",
        )

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _metrics_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
    path = parts.path if parts.path not in ("", "/") else "/metrics"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


#: the rules a node's page leaves blind (with what they need) and the CSV lines for them
Blind = tuple[str, tuple[str, ...]]


def blind_of(gpus: Iterable[NodeGpu]) -> Blind | None:
    """The rules a node's page leaves blind, and the counters-CSV lines that enable them."""
    present: set[str] = set()
    for entry in gpus:
        present |= entry.present
    blind, lines = missing_counters(present)
    if not blind:
        return None
    return ", ".join(f"{rule} (needs {', '.join(needs)})" for rule, needs in blind.items()), lines


def blind_notes(nodes: Sequence[tuple[str, Blind]]) -> list[Note]:
    """One note for every node that lacks the same counters, never one a node: at 64 nodes
    a note each would crowd the findings out of the advisor pane."""
    by_blind: dict[Blind, list[str]] = {}
    for name, blind in nodes:
        by_blind.setdefault(blind, []).append(name)
    notes = []
    for (rules, lines), names in by_blind.items():
        who = f"node {names[0]}" if len(names) == 1 else f"{len(names)} nodes ({few(names)})"
        notes.append(
            Note(
                NoteKind.RULES_BLIND,
                f"{who}: the exporter's counters leave these rules blind: {rules}. "
                "Add to its counters CSV (dcgm-exporter -f FILE): " + " | ".join(lines),
            )
        )
    return notes


def few(names: Sequence[str], shown: int = 3) -> str:
    """'a, b, c and 61 more'."""
    head = ", ".join(names[:shown])
    return head if len(names) <= shown else f"{head} and {len(names) - shown} more"
