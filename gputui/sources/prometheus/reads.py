"""A Prometheus server's answers to paged reads, as what the source hands on: each
node's series within its caps (instant answers), and frames on the step grid (range
answers). Every point is checked where it enters: inside the window asked for, on the
grid, at most as many a series as the grid holds; what is refused is counted and said.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields, replace
from typing import Any, Generic, TypeVar

from gputui.core.model import DeviceInfo, Frame, GpuSample, Note
from gputui.core.names import RULES_NEEDING_HOST, NoteKind
from gputui.sources.fetching import ScrapeError, TooLarge
from gputui.sources.node_readings import device_of, sample_of, with_xid
from gputui.sources.prometheus.nodes import (
    MAX_SERIES_PER_NODE,
    MAX_SKEW_S,
    NARROW,
    ClusterNode,
    Tagged,
    grouped_down,
    pages_of,
)
from gputui.sources.prometheus.queries import NodeKey, node_key
from gputui.sources.prometheus.wire import labels_of, point
from gputui.sources.remote import NodeSeries, blind_notes, blind_of, few


def _named(nodes: dict[NodeKey, ClusterNode], keys: Sequence[NodeKey]) -> str:
    return few([nodes[k].name for k in keys if k in nodes])


class Read:
    """The instant answers of a paged read, by node: each node's series within its caps,
    the nodes refused past them, and series that name no node."""

    def __init__(self, unnamed: str = "", now: float | None = None) -> None:
        self.unnamed = unnamed  # the metric of series the server gives without a name
        #: the moment the answers are of (the source's clock, or a report's end): a point
        #: further than MAX_SKEW_S from it is no reading of it
        self.now = time.time() if now is None else now
        self.readings: dict[NodeKey, NodeSeries] = {}
        self.refused: dict[NodeKey, str] = {}
        self.unlabelled = 0

    def take(self, result: list[dict[str, Any]], page: set[NodeKey]) -> None:
        now = self.now
        for series in result:
            labels = labels_of(series)
            key = node_key(labels) if labels is not None else None
            got = point(series.get("value"), now - MAX_SKEW_S, now + MAX_SKEW_S)
            if labels is None or key is None or got is None or "gpu" not in labels:
                self.unlabelled += 1
                continue
            if key not in page or key in self.refused:
                continue  # a node not asked for is not taken from this answer
            entry = self.readings.get(key)
            if entry is None:
                entry = self.readings[key] = NodeSeries(MAX_SERIES_PER_NODE)
            try:
                entry.add(labels.get("__name__", self.unnamed), labels, got[1])
            except ScrapeError as exc:
                self.refused[key] = str(exc)
                del self.readings[key]

    def notes(
        self,
        nodes: dict[NodeKey, ClusterNode],
        failed: Sequence[tuple[list[NodeKey], str]],
        what: str,
    ) -> list[Note]:
        notes = [
            Note(NoteKind.GENERAL, f"node {nodes[k].name} refused: {why}; {NARROW}")
            for k, why in self.refused.items()
            if k in nodes
        ]
        for page, why in failed:
            notes.append(
                Note(
                    NoteKind.NODE_DOWN, f"{len(page)} node(s) {what} ({why}): {_named(nodes, page)}"
                )
            )
        if self.unlabelled:
            notes.append(
                Note(
                    NoteKind.GENERAL,
                    f"{self.unlabelled} series without gpu and Hostname/instance labels ignored",
                )
            )
        return notes


class History:
    """Range answers as frames on the step grid: a point outside [start, end] or off the
    grid is dropped (and counted), a series with more points than the grid holds is
    refused; each page's readings become samples at once (memory: one page)."""

    def __init__(self, start: float, end: float, step: float, points: int) -> None:
        self.start, self.end, self.step, self.points = start, end, step, points
        self.samples: dict[float, list[GpuSample]] = {}
        self.dropped = 0
        #: the newest readings of each node whose devices lack their limits, and their time
        self.newest: dict[NodeKey, tuple[float, NodeSeries]] = {}

    def take(
        self, result: list[dict[str, Any]], page: set[NodeKey], nodes: dict[NodeKey, ClusterNode]
    ) -> None:
        by_time: dict[float, dict[NodeKey, NodeSeries]] = {}
        refused: set[NodeKey] = set()
        for series in result:
            labels = labels_of(series)
            key = node_key(labels) if labels is not None else None
            values = series.get("values")
            if labels is None or key not in page or not isinstance(values, list):
                self.dropped += 1
                continue
            if len(values) > self.points or key is None or key in refused:
                self.dropped += 1
                continue
            for pair in values:
                when = self._on_grid(pair)
                if when is None:
                    self.dropped += 1
                    continue
                entry = by_time.setdefault(when[0], {}).setdefault(
                    key, NodeSeries(MAX_SERIES_PER_NODE)
                )
                try:
                    entry.add(labels.get("__name__", ""), labels, when[1])
                except ScrapeError:
                    refused.add(key)
        for at_time, at in by_time.items():
            read = Read()
            read.readings = {k: v for k, v in at.items() if k not in refused}
            self.add_read(at_time, read, nodes)

    def _on_grid(self, pair: Any) -> tuple[float, float] | None:
        got = point(pair, self.start, self.end)
        if got is None:
            return None
        steps = (got[0] - self.start) / self.step
        if abs(steps - round(steps)) > 1e-6:
            return None
        return self.start + round(steps) * self.step, got[1]

    def add_read(self, when: float, read: Read, nodes: dict[NodeKey, ClusterNode]) -> None:
        out = self.samples.setdefault(when, [])
        for key, series in read.readings.items():
            node = nodes.get(key)
            if node is None:
                continue
            if not node.limits and when >= self.newest.get(key, (when, series))[0]:
                self.newest[key] = (when, series)  # its limits, for a node listed without
            for offset, number in enumerate(node.gpus):
                entry = series.gpus.get(number)
                if entry is not None:
                    out.append(sample_of(node.first_index + offset, entry))

    def frames(self) -> tuple[Frame, ...]:
        return tuple(
            Frame(time=when, gpus=tuple(sorted(self.samples[when], key=lambda s: s.index)))
            for when in sorted(self.samples)
            if self.samples[when]
        )


def history_notes(
    nodes: dict[NodeKey, ClusterNode], failed: Sequence[tuple[list[NodeKey], str]], dropped: int
) -> list[Note]:
    """What a history read could not read: the pages that failed, the points dropped."""
    notes = [
        Note(
            NoteKind.GENERAL,
            f"the history of {len(page)} node(s) could not be read ({why}): {_named(nodes, page)}",
        )
        for page, why in failed
    ]
    if dropped:
        notes.append(
            Note(
                NoteKind.GENERAL,
                f"{dropped} history point(s) or series dropped: outside the window "
                "asked for, off its step grid, or more points than it holds",
            )
        )
    return notes


def samples_of(
    nodes: Mapping[NodeKey, ClusterNode],
    now: float,
    keys: Sequence[NodeKey],
    readings: Read,
    notes: list[Note],
) -> list[GpuSample]:
    """The full readings of ``keys`` as samples (a new Xid said in ``notes``); a node's
    first full read also says what its counters leave blind."""
    out: list[GpuSample] = []
    for key in keys:
        node = nodes[key]
        series = readings.readings.get(key)
        if series is None or not series.gpus:
            continue
        for offset, number in enumerate(node.gpus):
            entry = series.gpus.get(number)
            if entry is not None:
                sample = sample_of(node.first_index + offset, entry)
                out.append(with_xid(sample, entry, node.name, node.xid, now, notes))
        if not node.checked:  # what its counters leave blind: known from a full read
            node.blind = blind_of(series.gpus.values())
            node.checked = True
    return out


def tick_notes(
    nodes: Mapping[NodeKey, ClusterNode], tagged: Tagged, down: Mapping[NodeKey, str]
) -> list[Note]:
    """A tick's notes on the whole cluster: the nodes down, what counters leave blind,
    answer series refused, and the rules no Prometheus source can run."""
    notes = [
        Note(NoteKind.NODE_DOWN, line)
        for line in grouped_down(sorted((nodes[k].name, why) for k, why in down.items()))
    ]
    blind = [(n.name, n.blind) for n in nodes.values() if n.blind is not None]
    notes += blind_notes(sorted(blind))
    if tagged.refused:
        notes.append(refused_note(tagged.refused))
    notes.append(
        Note(
            NoteKind.RULES_BLIND,
            "Prometheus source: no process or host readings, so these rules cannot run: "
            + ", ".join(RULES_NEEDING_HOST),
        )
    )
    return notes


def with_limits(
    nodes: Mapping[NodeKey, ClusterNode],
    devices: list[DeviceInfo],
    keys: Sequence[NodeKey],
    got: Mapping[NodeKey, NodeSeries],
) -> list[DeviceInfo]:
    """The devices of nodes listed without their limits, as their first full reading
    (``got``) says them, put in ``devices`` (by index) and returned where they changed; a
    fact only the listing had is kept. Once a node."""
    out: list[DeviceInfo] = []
    for key in keys:
        node, series = nodes[key], got.get(key)
        if node.limits or series is None or not series.gpus:
            continue
        node.limits = True
        for offset, number in enumerate(node.gpus):
            entry, index = series.gpus.get(number), node.first_index + offset
            if entry is None:
                continue
            old, new = devices[index], device_of(index, node.name, entry)
            kept = {f: getattr(old, f) for f in _FACTS if getattr(new, f) is None}
            new = replace(new, **{f: v for f, v in kept.items() if v is not None})
            if new != old:
                devices[index] = new
                out.append(new)
    return out


_FACTS = tuple(f.name for f in fields(DeviceInfo))


REFUSED = (
    "labels that are not strings, no Hostname/instance label, or a time outside the window "
    "asked for"
)


def refused_note(count: int) -> Note:
    return Note(
        NoteKind.GENERAL,
        f"{count} answer series refused: {REFUSED}",
    )


_Asked = TypeVar("_Asked")
_Got = TypeVar("_Got")


class Later(Generic[_Got]):
    """A call run at once on a thread of its own, its result (or its exception) taken when
    it is needed: an answer asked for ahead, while others are read. A daemon thread: a
    process that ends meanwhile does not wait for it (the call bounds itself)."""

    def __init__(self, call: Callable[[], _Got]) -> None:
        self._done = threading.Event()
        self._got: list[_Got] = []
        self._error: BaseException | None = None
        threading.Thread(
            target=self._run, args=(call,), name="gputui-prometheus", daemon=True
        ).start()

    def _run(self, call: Callable[[], _Got]) -> None:
        try:
            self._got.append(call())
        except BaseException as exc:  # raised again on the thread that takes the result
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> _Got:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._got[0]


def ask_all(
    ask: Callable[[_Asked], list[dict[str, Any]]], batch: list[_Asked]
) -> list[list[dict[str, Any]] | ScrapeError]:
    """Each page (or query) of ``batch`` asked, at the same time when there are several
    (the server answers them in parallel): its answer, or why there is none, in order."""

    def one(page: _Asked) -> list[dict[str, Any]] | ScrapeError:
        try:
            return ask(page)
        except ScrapeError as exc:
            return exc

    if len(batch) == 1:
        return [one(batch[0])]
    few_arenas()
    with ThreadPoolExecutor(len(batch), thread_name_prefix="gputui-prometheus") as pool:
        return list(pool.map(one, batch))


#: pages asked for at the same time (the server answers them in parallel)
PARALLEL_PAGES = 4
#: glibc gives each thread that allocates a malloc arena of its own (up to eight a core)
#: and hands little of them back: a cluster's answers, megabytes a page read on these
#: threads, left a point-in-time read of 1,024 nodes at ~420 MB where one arena keeps it
#: near 250 (benchmarks/README.md; the threads wait on the network and share the GIL, so
#: one arena costs them nothing). Set once, before the first thread is started.
MALLOC_ARENAS = 1
_ARENAS_SET: list[bool] = []


def few_arenas() -> None:
    if _ARENAS_SET:
        return
    _ARENAS_SET.append(True)
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to set
        ctypes.CDLL(None).mallopt(-8, MALLOC_ARENAS)  # M_ARENA_MAX


def paged(
    nodes: Mapping[NodeKey, ClusterNode],
    keys: Sequence[NodeKey],
    ask: Callable[[list[NodeKey]], list[dict[str, Any]]],
    take: Callable[[list[dict[str, Any]], set[NodeKey]], None],
    gpus_a_page: int,
) -> list[tuple[list[NodeKey], str]]:
    """``ask`` for each page of ``keys`` (pages of about ``gpus_a_page`` GPUs, PARALLEL_PAGES
    at a time) and ``take`` its answer; a page too large is asked again in halves, down to
    one node. Returns the pages that failed, and why."""
    failed: list[tuple[list[NodeKey], str]] = []
    pages = pages_of(nodes, keys, gpus_a_page)
    while pages:
        batch, pages = pages[:PARALLEL_PAGES], pages[PARALLEL_PAGES:]
        retry: list[list[NodeKey]] = []
        for page, got in zip(batch, ask_all(ask, batch), strict=True):
            if isinstance(got, TooLarge) and len(page) > 1:
                retry += [page[: len(page) // 2], page[len(page) // 2 :]]
            elif isinstance(got, ScrapeError):
                failed.append((page, str(got)))
            else:
                take(got, set(page))
        pages = retry + pages
    return failed


def answers(
    ask: Callable[[str], list[dict[str, Any]]], queries: list[str]
) -> list[list[dict[str, Any]]]:
    """Every query's answer, the queries asked at the same time; ScrapeError (the first
    in order) where any has none."""
    got = ask_all(ask, queries)
    for one in got:
        if isinstance(one, ScrapeError):
            raise one
    return [one for one in got if not isinstance(one, ScrapeError)]


#: the stand-in node of answers about the whole cluster (the counts)
WHOLE = NodeKey("instance", "(the cluster)")


def as_whole(result: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An answer without node labels (a count over the cluster), under one stand-in."""
    out = []
    for series in result:
        metric = series.get("metric")
        if isinstance(metric, dict):
            series = {**series, "metric": {**metric, "instance": WHOLE.value}}
        out.append(series)
    return out
