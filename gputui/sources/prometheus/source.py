"""A whole cluster's GPUs read from a Prometheus server's HTTP API (Prometheus, Thanos,
VictoriaMetrics, Mimir: anything that serves /api/v1/query and /api/v1/query_range).

At open: counts (refused past the caps), a census of every node, each node's scrape
interval and its GPUs, in pages. Each tick: the aggregating queries that rank every node,
and the full readings of the nodes wanted (``follow``: those on screen and the suspects;
without it, every node). The history from ``query_range`` at the cluster's own interval,
in pages. What could not be read is said in the frame's notes. docs/cluster.md has it all.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from gputui.core.judgement import EngineVerdict
from gputui.core.model import DeviceInfo, Frame, NodeStatus, Note
from gputui.core.names import NoteKind, SourceKind
from gputui.core.source import SourceUnavailable
from gputui.sources.fetching import MAX_BYTES, ScrapeError, TooLarge, fetch
from gputui.sources.node_readings import NodeGpu, device_of
from gputui.sources.prometheus.alerts import (
    FIRING,
    INFO,
    alerts_of,
    annotations_of,
    rules_loaded,
    verdict_note,
)
from gputui.sources.prometheus.nodes import (
    MAX_CLUSTER_GPUS,
    MAX_NODES,
    NARROW,
    ClusterNode,
    Figures,
    Tagged,
    check_counts,
    cluster_interval,
    cluster_of,
    down_of,
    forget_target,
    intervals_of,
    lag_of,
    mark_down_targets,
    status_of,
    wanted,
)
from gputui.sources.prometheus.queries import NODE_LABELS, REF, NodeKey, Queries, display_names
from gputui.sources.prometheus.ranges import PAGE_GPUS, RangeReads
from gputui.sources.prometheus.reads import (
    REFUSED,
    WHOLE,
    Later,
    Read,
    answers,
    as_whole,
    ask_all,
    few_arenas,
    paged,
    refused_note,
    samples_of,
    tick_notes,
    with_limits,
)
from gputui.sources.prometheus.wire import Fetcher, Server, bounded, decode, mask_url, server_of

DEFAULT_STALE_S = 300.0
#: the step when the scrape interval cannot be measured (dcgm-exporter's collect interval)
DEFAULT_STEP_S = 30.0
#: the history read at start: this many readings at the cluster's cadence
HISTORY_READINGS = 40
MAX_HISTORY_S = 3600.0
#: a page of GPUs listed as they last were in the window: that query has one selector a
#: field (~15), each naming the page's nodes, so its pages are smaller (a URL of a few KB)
LAST_PAGE_GPUS = 64
#: following the screen, the whole cluster's reference series are listed in one answer up
#: to this many GPUs (at 1 KB of labels a series, it still fits the answer cap)
WHOLE_LIST_GPUS = MAX_BYTES // 1024
#: the raw samples that measure each node's scrape interval: this long, pages this large
#: (one series a node: ~2 KB of answer each)
PROBE_S = 600.0
PROBE_GPUS = 4096
#: times the history's last stretch is read again after a long read of the window
MAX_CATCH_UP = 2
#: nodes read in full when following the screen, and newly wanted ones given history a tick
FOLLOW_NODES = 32
FOLLOW_HISTORY_NODES = 8


class PrometheusSource(RangeReads):
    label = "PROMETHEUS"
    kind = SourceKind.REMOTE

    def __init__(
        self,
        url: str,
        match: str | None = None,
        timeout_s: float = 5.0,
        clock: Callable[[], float] = time.time,
        fetcher: Fetcher = fetch,
        step_s: float | None = None,
        history_s: float | None = None,
        stale_after_s: float = DEFAULT_STALE_S,
        headers: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        history_readings: int = HISTORY_READINGS,
        follow_screen: bool = False,
        at: float | None = None,
        limits_later: bool = False,
    ) -> None:
        """``limits_later``: the GPUs listed by their reference series alone, as following
        the screen lists them, their limits read with their first full reading (a
        point-in-time read of every node reads them all once, not twice)."""
        few_arenas()  # before any of its threads (the pages, the aggregates asked ahead)
        self._url = url
        self._at = at  # read the cluster as it was then (a report's end), not now
        if at is not None:
            clock = lambda: at  # noqa: E731
        self._shown = mask_url(url if "://" in url else f"http://{url}").rstrip("/")
        self._queries = Queries(match)
        self._timeout = timeout_s
        self._clock = clock
        self._fetch = fetcher
        self._step = step_s
        self._history = history_s
        self._readings = history_readings
        self._stale = stale_after_s
        self._headers = headers
        self._env = env
        self._server: Server | None = None
        self._nodes: dict[NodeKey, ClusterNode] = {}
        self._devices: list[DeviceInfo] = []
        self._interval = DEFAULT_STEP_S
        self._lag = 0.0
        self._following = follow_screen
        self._light = follow_screen or limits_later  # GPUs listed without their limits
        self._shown_nodes: Callable[[], Sequence[str]] | None = None
        self._full: set[NodeKey] = set()  # the nodes read in full last tick
        #: a point-in-time read's nodes where the engine's verdict says which matter (the
        #: history was read of those alone): the readings after it are of them alone too
        self._only: frozenset[NodeKey] | None = None
        #: the aggregates asked ahead of the first frame (at open, or kept by the backfill)
        #: and when they were asked
        self._ahead: tuple[float, Callable[[], Tagged]] | None = None
        self._notes_once: list[Note] = []
        self._census_refused = 0
        self.queries = 0  # API requests made (the benchmark reads them)
        self._count = threading.Lock()  # pages are asked for on several threads
        self.bytes = 0  # characters of answers read

    # -- calls --------------------------------------------------------------------------
    def _get(
        self, path: str, params: dict[str, str], kind: str, fresh: bool = True
    ) -> list[dict[str, Any]]:
        """An API call; ``fresh``: past any cache the server keeps (VictoriaMetrics')."""
        server = self._server
        if server is None:
            raise ScrapeError("not opened")
        if self._at is not None and path == "/api/v1/query" and "time" not in params:
            params = {**params, "time": f"{self._at:.3f}"}
        query = urllib.parse.urlencode({**params, "nocache": "1"} if fresh else params)
        with self._count:
            self.queries += 1
        try:
            text = bounded(
                self._fetch, f"{server.base}{path}?{query}", self._timeout, dict(server.headers)
            )
        except TooLarge:
            raise
        except ScrapeError as exc:
            raise ScrapeError(f"{server.shown}: {exc}") from exc
        with self._count:
            self.bytes += len(text)
        return decode(text, kind)

    def _instant(self, query: str, at: float | None = None) -> list[dict[str, Any]]:
        params = {"query": query}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return self._get("/api/v1/query", params, "vector")

    # -- opening ------------------------------------------------------------------------
    @property
    def interval_s(self) -> float:
        """The cluster's scrape interval, as measured at open."""
        return self._interval

    def follow(self, shown: Callable[[], Sequence[str]]) -> None:
        """Read in full only the nodes ``shown`` names (most wanted first) and suspects, up
        to FOLLOW_NODES: a tick's cost grows with what is shown, not with the cluster."""
        self._following = self._light = True
        self._shown_nodes = shown

    def _connect(self) -> None:
        self._server = server_of(self._url, self._env)
        if self._headers is not None:
            self._server = Server(self._server.base, self._server.shown, self._headers)

    def scrape_interval(self) -> float:
        """The cluster's scrape interval as its census says, no GPU listed."""
        self.open(listing=False)
        return self._interval

    def open(self, listing: bool = True) -> tuple[DeviceInfo, ...]:
        try:
            self._connect()
            self._census()
            if not listing:
                return ()
            found = self._list_gpus(sorted(self._nodes, key=lambda k: self._nodes[k].name), True)
        except ScrapeError as exc:
            raise SourceUnavailable(
                f"the Prometheus server cannot be read: {mask_url(str(exc))}."
            ) from exc
        if not self._devices:
            if not found and self._census_refused:
                found = f" ({self._census_refused} series refused: {REFUSED})"
            raise SourceUnavailable(
                f"the Prometheus server at {self._shown} has no {REF} series matching "
                f"{self._queries.selector(REF)}{found}."
            )
        return tuple(self._devices)

    def _census(self) -> None:
        window = self._window_s(DEFAULT_STEP_S)
        now = self._clock()
        # the census (a few series a node) is asked with the counts, read once they pass
        asked = [self._queries.counts(window), self._queries.census(window)]
        counts, answer = ask_all(self._instant, asked)
        if isinstance(counts, ScrapeError):
            raise counts
        total = Tagged().take(as_whole(counts), now).figures.get(WHOLE, {})
        check_counts(total.get("nodes"), total.get("gpus"), self._shown)
        if isinstance(answer, ScrapeError):
            raise answer
        census = Tagged().take(answer, now)
        names = display_names(census.figures)
        self._nodes = cluster_of(census.figures, census.meta, names, window)
        self._census_refused = census.refused
        if census.refused:
            self._notes_once.append(refused_note(census.refused))
        self._probe_intervals(now)
        self._interval = self._step or cluster_interval(self._nodes.values()) or DEFAULT_STEP_S
        if self._following:  # the first frame's aggregates, asked while the GPUs are listed
            window, asked_at = self._window_s(self._interval), self._clock()
            self._ahead = (asked_at, Later(lambda: self._summary(asked_at, window)).result)
        self._lag_and_down(census.figures, now)
        for node in self._nodes.values():
            if not node.live and node.down_at_start is None:
                node.down_at_start = "is down since the start (it reported earlier)"

    def _probe_intervals(self, now: float) -> None:
        """Each live node's scrape interval from its raw samples (one series a node, in
        pages): the census's estimate is kept where this cannot be read."""
        span = min(PROBE_S, self._window_s(DEFAULT_STEP_S))
        for label in NODE_LABELS:
            keys = [k for k, n in self._nodes.items() if n.live and k.label == label]

            def ask(page: list[NodeKey], label: str = label) -> list[dict[str, Any]]:
                query = self._queries.raw_samples(label, [k.value for k in page], span)
                return self._get("/api/v1/query", {"query": query}, "matrix")

            def take(result: list[dict[str, Any]], page: set[NodeKey]) -> None:
                for key, every in intervals_of(result, page, now - span - 60, now + 60).items():
                    self._nodes[key].interval_s = every

            paged(self._nodes, keys, ask, take, PROBE_GPUS)

    def _lag_and_down(self, figures: dict[NodeKey, Figures], now: float) -> None:
        """Asked at once: how far behind the server answers when not asked for fresh data
        (VM's -search.latencyOffset: its newest sample asked plainly, against with nocache),
        and the targets whose last scrape failed (``up`` 0): a node the window saw is down
        since the start, one it never saw a node known only by its target."""
        fresh = max((f["newest"] for f in figures.values() if "newest" in f), default=None)
        newest = {"query": f"max(timestamp({self._queries.selector(REF)}))"}
        down = self._queries.down_targets({n.job for n in self._nodes.values() if n.job})

        def ask(which: str) -> list[dict[str, Any]]:
            if which == "lag":
                return [] if fresh is None else self._get("/api/v1/query", newest, "vector", False)
            return [] if down is None else self._instant(down)

        lag, targets = ask_all(ask, ["lag", "down"])
        if fresh is not None and not isinstance(lag, ScrapeError):
            self._lag = lag_of(lag, fresh)
        if not isinstance(targets, ScrapeError):
            mark_down_targets(self._nodes, targets, now)

    def _list_gpus(self, keys: Sequence[NodeKey], whole: bool = False) -> str:
        """Each node's GPUs and limits (for a node down now, its series as they last were
        in the window; for a report, every node's so: a GPU that stopped reporting before
        the range's end has its own limits), as devices; what could not be listed is said
        once. Following the screen, the reference series alone (``whole``: the cluster's,
        in one answer where they fit): a node's limits come with its first full read."""
        reporting = {k for k in keys if self._nodes[k].live or self._nodes[k].reported}
        live = [k for k in keys if k in reporting]
        gone = [k for k in keys if k not in reporting and self._nodes[k].seen]
        if self._at is not None:  # a report's range: every GPU it saw, as it last was
            live, gone = [], [k for k in keys if k in reporting or self._nodes[k].seen]
        fields = REF if self._light else self._queries.device_fields
        window = self._window_s(self._interval)
        listed = Read(REF, self._clock())
        failed: list[tuple[list[NodeKey], str]] = []
        gpus = sum(max(1, self._nodes[k].seen) for k in live)
        if whole and self._light and live and gpus <= WHOLE_LIST_GPUS:
            try:  # no page of node names to match: the server's cheapest answer
                listed.take(self._instant(self._queries.selector(REF)), reporting)
                live = []
            except TooLarge:
                pass  # more than the census counted: in pages
            except ScrapeError as exc:
                live, failed = [], [(live, str(exc))]
        failed += paged(
            self._nodes,
            live,
            lambda page: self._instant(self._queries.of_nodes(fields, page)),
            listed.take,
            PAGE_GPUS,
        )
        names = fields.split("|")
        failed += paged(
            self._nodes,
            gone,
            lambda page: self._instant(self._queries.last_of_nodes(names, page, window)),
            listed.take,
            PAGE_GPUS if len(names) == 1 else LAST_PAGE_GPUS,
        )
        for key in keys:
            entries = listed.readings.get(key)
            if entries is not None and entries.gpus:
                self._add_node(self._nodes[key], entries.gpus)
                self._nodes[key].limits = not self._light
        self._notes_once += listed.notes(self._nodes, failed, "their GPUs could not be listed")
        if listed.unlabelled:
            return f" ({listed.unlabelled} series without gpu and Hostname/instance labels)"
        return ""

    def _add_node(self, node: ClusterNode, gpus: dict[int, NodeGpu]) -> list[DeviceInfo]:
        if len(self._devices) + len(gpus) > MAX_CLUSTER_GPUS:
            self._notes_once.append(
                Note(
                    NoteKind.GENERAL,
                    f"node {node.name} not added: more than {MAX_CLUSTER_GPUS:,} GPUs; {NARROW}",
                )
            )
            return []
        node.first_index = len(self._devices)
        node.gpus = tuple(sorted(gpus))
        added = [
            device_of(node.first_index + i, node.name, gpus[n]) for i, n in enumerate(node.gpus)
        ]
        node.pods = tuple(dict.fromkeys(d.pod for d in added if d.pod))
        self._devices += added
        return added

    def _window_s(self, step: float) -> float:
        if self._at is not None and self._history:
            # a report's range, whole: a node that stopped reporting hours before its end
            # is the one the report is for (the live source keeps to MAX_HISTORY_S)
            return max(step, self._history)
        window = self._history or self._readings * step
        return max(step, min(MAX_HISTORY_S, window))

    # -- each tick ----------------------------------------------------------------------
    def read(self) -> Frame:
        now = self._clock()
        notes = list(self._notes_once)
        self._notes_once.clear()
        try:
            tagged = self._aggregates(now)
        except ScrapeError as exc:
            notes.append(Note(NoteKind.NODE_DOWN, f"the Prometheus server: {exc}"))
            return Frame(time=now, gpus=(), notes=tuple(notes))
        joined = self._join(tagged)
        down = down_of(self._nodes, tagged, self._interval, now, self._stale)
        keys = self._wanted(tagged, down)
        readings = Read(REF, now)
        failed = paged(
            self._nodes,
            keys,
            lambda page: self._instant(self._queries.of_nodes(self._queries.all_fields, page)),
            readings.take,
            PAGE_GPUS,
        )
        joined += with_limits(self._nodes, self._devices, keys, readings.readings)
        late = self._late(keys, now)
        joined += [d for frame in late for d in frame.joined]
        samples = samples_of(self._nodes, now, keys, readings, notes)
        notes += readings.notes(self._nodes, failed, "not read this tick")
        notes += tick_notes(self._nodes, tagged, down)
        statuses = self._statuses(tagged, down, now)
        return Frame(
            time=now,
            gpus=tuple(samples),
            notes=tuple(notes),
            nodes=statuses,
            joined=tuple({d.index: d for d in joined}.values()),
            late=late,
        )

    def _statuses(
        self, tagged: Tagged, down: dict[NodeKey, str], now: float
    ) -> tuple[NodeStatus, ...]:
        return tuple(
            status_of(n, tagged.figures.get(k), down.get(k), tagged.evaluated or now, n.pods)
            for k, n in self._nodes.items()
        )

    def _summary(self, now: float, window: float | None = None) -> Tagged:
        tagged = Tagged()  # its queries asked at once: at 8,192 GPUs each takes ~1 s
        window = self._window_s(self._interval) if window is None else window
        for got in answers(self._instant, self._queries.summary(window)):
            tagged.take(got, now)
        return tagged

    def _aggregates(self, now: float, keep: bool = False) -> Tagged:
        """The summary: the one asked ahead when it was asked within half a scrape interval
        (the server has no newer scrape to tell: the first frame asks it once, not three
        times), else asked now. ``keep``: kept for the read that follows (the backfill)."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None and 0.0 <= now - ahead[0] <= self._step_s() / 2:
            asked, tagged = ahead[0], ahead[1]()
        else:
            asked, tagged = now, self._summary(now)
        if keep:
            self._ahead = (asked, lambda: tagged)
        return tagged

    def _join(self, tagged: Tagged) -> list[DeviceInfo]:
        """Nodes that report now and have no GPUs listed yet (a node that came up, or
        came back): listed now, their GPUs given the next indices."""
        new: list[NodeKey] = []
        for key, figure in tagged.figures.items():
            if "newest" not in figure:
                continue
            node = self._nodes.get(key)
            if node is None and len(self._nodes) < MAX_NODES:
                names = display_names([*self._nodes, key])
                meta = tagged.meta.get(key, {})
                node = self._nodes[key] = ClusterNode(
                    key, names[key], meta.get("instance"), meta.get("job"), live=True
                )
                forget_target(self._nodes, node)
            if node is not None and not node.gpus:
                node.reported = True
                node.seen = max(node.seen, int(figure.get("gpus", 1)))
                new.append(key)
        if not new:
            return []
        before = len(self._devices)
        self._list_gpus(new)
        return self._devices[before:]

    def _wanted(self, tagged: Tagged, down: dict[NodeKey, str]) -> list[NodeKey]:
        if not self._following:
            only = self._only
            return [
                k
                for k, n in self._nodes.items()
                if n.gpus and k not in down and (only is None or k in only)
            ]
        shown = tuple(self._shown_nodes()) if self._shown_nodes is not None else ()
        if not shown:  # before the screen says: the first nodes it will show
            shown = tuple(n.name for n in sorted(self._nodes.values(), key=lambda n: n.name)[:4])
        return wanted(self._nodes, shown, tagged.figures, down, FOLLOW_NODES)

    def _late(self, keys: Sequence[NodeKey], now: float) -> tuple[Frame, ...]:
        """The history of nodes wanted for the first time (a few a tick), so the advisor
        judges them at once; none when every node is read every tick."""
        new = [k for k in keys if k not in self._full][:FOLLOW_HISTORY_NODES]
        self._full = set(keys) | (self._full & set(keys))
        if not self._following or not new:
            return ()
        return self._history_frames(new, now)

    # -- history ------------------------------------------------------------------------
    def _read_keys(self, now: float) -> tuple[Tagged, dict[NodeKey, str], list[NodeKey]] | None:
        """The aggregates, the nodes down, and the nodes a history is read for."""
        try:
            tagged = self._aggregates(now, keep=True)
        except ScrapeError:
            return None
        down = down_of(self._nodes, tagged, self._interval, now, self._stale)
        keys = self._wanted(tagged, down)
        self._full = set(keys)
        return tagged, down, keys

    def backfill(self) -> tuple[Frame, ...]:
        """The history window as frames, at the cluster's scrape interval: every node's
        (or, following the screen, the first nodes it shows and the suspects')."""
        now = self._clock()
        read = self._read_keys(now)
        if read is None:
            return ()
        tagged, down, keys = read
        frames = self._history_frames(keys, now)
        # reading a large cluster's window takes a while (minutes at 1,024 nodes read in
        # full): the stretch since is read too, or the next reading would follow a gap the
        # rules cannot judge across
        for _ in range(MAX_CATCH_UP):
            later = self._clock()
            if not frames or later - frames[-1].time < 2 * self._step_s():
                break
            frames += self._history_frames(keys, later, since=frames[-1].time)
        if not self._following:
            return frames
        # the nodes not read in full reported then as now: their aggregates go with each
        # frame, so no judgement of the history takes them for silent
        statuses = self._statuses(tagged, down, now)
        return tuple(replace(frame, nodes=statuses) for frame in frames)

    def catch_up(self, since: float) -> tuple[Frame, ...]:
        """The steps after ``since`` (the history's last frame) up to now, of the nodes the
        history was read for: the stretch that judging a large history took (tens of
        seconds at 8,192 GPUs), so the next read does not follow a gap the rules cannot
        judge across. Nothing while the gap is under 1.5 steps."""
        now = self._clock()
        if not self._full or now - since < 1.5 * self._step_s():
            return ()
        keys = sorted(self._full, key=lambda k: self._nodes[k].name)
        return self._history_frames(keys, now, since=since)

    def engine_verdict(self) -> EngineVerdict | None:
        """The engine's verdict where `gputui rules` for this ``--match`` are loaded (two
        queries, at any size): the rules it evaluates, the alerts firing; else None."""
        now = self._clock()
        try:
            loaded = rules_loaded(self._instant(INFO), self._queries.match)
            if loaded is None:
                return None
            firing = self._instant(FIRING)
        except ScrapeError:
            return None
        try:  # what the engine said of each (its evidence with the figures): best effort
            said = annotations_of(self._get("/api/v1/alerts", {}, "alerts", fresh=False))
        except ScrapeError:
            said = {}
        alerts = alerts_of(firing, self._nodes, now, said, self._queries.match)
        verdict = EngineVerdict(loaded[0], alerts, loaded[1])
        self._notes_once.append(verdict_note(verdict))
        return verdict

    def close(self) -> None:
        pass
