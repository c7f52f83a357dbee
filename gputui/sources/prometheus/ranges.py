"""The history a Prometheus source reads with range queries (``query_range``, in pages of
nodes): frames for the screen and a report's range, columns for a point-in-time read, the
stretch a lagging server holds back read as instant queries. A part of
``source.PrometheusSource``, which holds the nodes, the queries and the calls."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gputui.core.model import DeviceInfo, Frame, Note
from gputui.core.source import ColumnHistory
from gputui.sources.fetching import ScrapeError
from gputui.sources.prometheus.columns import Columns, history_names
from gputui.sources.prometheus.nodes import ClusterNode, Tagged
from gputui.sources.prometheus.queries import REF, NodeKey, Queries
from gputui.sources.prometheus.reads import History, Read, history_notes, paged, with_limits

MIN_STEP_S = 1.0
#: what one page of nodes may hold: GPUs for readings, GPU-points for the history (an
#: answer of ~250 bytes a series and ~25 a point: pages of a few MB, under the 10 MB cap)
PAGE_GPUS = 256
PAGE_POINTS = 120_000


def range_page(points: int) -> int:
    """GPUs a page of range answers holds: ~PAGE_POINTS GPU-points (about 24 fields a GPU,
    as dcgm-exporter's defaults), and no more GPUs than an instant page (a range of a step
    or two is a series' labels above all: 4,000 GPUs of them were 65 MB of answer)."""
    return max(1, min(PAGE_GPUS, PAGE_POINTS // (points * 24)))


class RangeReads:
    """The range reads of a Prometheus source, over what the source holds."""

    _nodes: dict[NodeKey, ClusterNode]
    _devices: list[DeviceInfo]
    _queries: Queries
    _notes_once: list[Note]
    _clock: Callable[[], float]
    _lag: float
    _step: float | None
    _interval: float
    _full: set[NodeKey]
    _only: frozenset[NodeKey] | None

    if TYPE_CHECKING:

        def _get(
            self, path: str, params: dict[str, str], kind: str, fresh: bool = True
        ) -> list[dict[str, Any]]: ...

        def _instant(self, query: str, at: float | None = None) -> list[dict[str, Any]]: ...

        def _window_s(self, step: float) -> float: ...

        def _read_keys(
            self, now: float
        ) -> tuple[Tagged, dict[NodeKey, str], list[NodeKey]] | None: ...

    def _step_s(self) -> float:
        return max(MIN_STEP_S, float(round(self._step or self._interval)))

    def history_columns(
        self, only: Collection[str] | None = None, since: float | None = None
    ) -> ColumnHistory:
        """The history window as columns of every node that reports, or of those ``only``
        names (a point-in-time read: no frame built for it; the readings after it are of
        them alone too), of the readings the history keeps: ``Columns.finish``.
        ``since``: the steps after that time (the stretch reading the window took), of the
        nodes read then."""
        now = self._clock()
        start, end, step = self._grid(now)
        if since is None:
            read = self._read_keys(now)
            keys = (
                [k for k in read[2] if only is None or self._nodes[k].name in only] if read else []
            )
            self._full = set(keys)
            self._only = None if only is None else frozenset(keys)
        else:  # as ``catch_up``: nothing while the gap is under 1.5 steps
            keys = sorted(self._full, key=lambda k: self._nodes[k].name)
            start = max(start, since + step) if now - since >= 1.5 * step else math.inf
        if not keys or start > end:
            return [], {}, {}, 0
        names = history_names()
        columns = Columns(start, end, step, round((end - start) / step) + 1)
        failed = paged(
            self._nodes,
            keys,
            lambda page: self._query_range(self._queries.of_nodes(names, page), start, end, step),
            lambda got, page: columns.take(got, page, self._nodes),
            range_page(columns.points),
        )
        at = end + step  # the stretch a lagging server's range queries hold back
        while self._lag and at <= now and at <= end + self._lag + step:
            columns.grow(columns.points + 1)
            paged(
                self._nodes,
                keys,
                lambda page, t=at: self._instant(self._queries.of_nodes(names, page), t),  # type: ignore[misc]
                lambda got, page, t=at: columns.take_instant(t, got, page, self._nodes),  # type: ignore[misc]
                PAGE_GPUS,
            )
            at += step
        if failed or columns.dropped:
            self._notes_once += history_notes(self._nodes, failed, columns.dropped)
        return columns.finish()

    def _grid(self, now: float) -> tuple[float, float, float]:
        """The history window before ``now`` on the step grid: start, end, step."""
        step = self._step_s()
        end = math.floor((now - self._lag) / step) * step
        return end - math.floor(self._window_s(step) / step) * step, end, step

    def _history_frames(
        self, keys: Sequence[NodeKey], now: float, since: float | None = None
    ) -> tuple[Frame, ...]:
        """The window before ``now`` (or, with ``since``, the steps after that time)."""
        start, end, step = self._grid(now)
        if since is not None:
            start = max(start, since + step)
            if start > end:
                return ()
        history, failed = self._read_range(keys, start, end, step)
        at = end + step  # the stretch a lagging server's range queries hold back
        while self._lag and at <= now and at <= end + self._lag + step:
            tail = Read(REF, at)
            paged(
                self._nodes,
                keys,
                lambda page, t=at: self._instant(  # type: ignore[misc]
                    self._queries.of_nodes(self._queries.all_fields, page), t
                ),
                tail.take,
                PAGE_GPUS,
            )
            history.add_read(at, tail, self._nodes)
            at += step
        if failed or history.dropped:
            self._notes_once += history_notes(self._nodes, failed, history.dropped)
        frames = history.frames()
        newest = {key: series for key, (_, series) in history.newest.items()}
        if frames and (limits := with_limits(self._nodes, self._devices, keys, newest)):
            return (replace(frames[0], joined=tuple(limits)), *frames[1:])
        return frames

    def range_frames(self, start: float, end: float, step: float) -> tuple[Frame, ...]:
        """Every node's frames from ``start`` to ``end`` (to the millisecond, as the server
        takes them), ``step`` apart, in pages; ScrapeError for what could not be read."""
        keys = sorted(self._nodes, key=lambda k: self._nodes[k].name)
        history, failed = self._read_range(keys, round(start, 3), round(end, 3), step)
        if failed:
            raise ScrapeError(f"{len(failed)} page(s) of nodes not read ({failed[0][1]})")
        return history.frames()

    def _read_range(
        self, keys: Sequence[NodeKey], start: float, end: float, step: float
    ) -> tuple[History, list[tuple[list[NodeKey], str]]]:
        """The nodes' range from ``start`` to ``end`` on the step grid, in pages sized so
        no answer nears the cap; the pages that failed, and why."""
        points = round((end - start) / step) + 1
        history = History(start, end, step, points)
        failed = paged(
            self._nodes,
            keys,
            lambda page: self._range(page, start, end, step),
            lambda result, page: history.take(result, page, self._nodes),
            range_page(points),
        )
        return history, failed

    def _range(
        self, page: list[NodeKey], start: float, end: float, step: float
    ) -> list[dict[str, Any]]:
        return self._query_range(
            self._queries.of_nodes(self._queries.all_fields, page), start, end, step
        )

    def _query_range(
        self, query: str, start: float, end: float, step: float
    ) -> list[dict[str, Any]]:
        params = {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        return self._get("/api/v1/query_range", params, "matrix")

    def data_span(self, start: float, end: float) -> tuple[float, float] | None:
        """Where in ``start``-``end`` the server holds readings (a thousand coarse steps of
        one count); None where it holds none. A report of the last 100 days of a cluster
        that ran an hour reads that hour at a fine step, not 100 days at a coarse one."""
        step = max(1.0, math.ceil((end - start) / 1000))
        counted = self._query_range(f"count({self._queries.selector(REF)})", start, end, step)
        times = [
            float(point[0])
            for series in counted
            for point in series.get("values", ())
            if isinstance(point, list) and point
        ]
        if not times:
            return None
        return max(start, min(times) - step), min(end, max(times) + step)
