"""A Prometheus HTTP API stand-in for unit tests: it answers the queries gputui sends
(``sources/prometheus/queries.py``) from a fixed set of series, the way a server would
evaluate them.

Only the query shapes gputui builds are understood: the cluster counts, the census, the
aggregating summary (freshness and GPU count per node), the lag probe, ``up == 0``, and
selectors of pages of nodes (``Hostname=~"a|b"``), instant or range, the engine's
marker and alerts (``gputui_rules_info``, ``ALERTS_FOR_STATE``, as series given; its
list of alerts is empty), and the last value
of such selectors over a window (``last_over_time``) as a server that drops the metric name
answers it (Prometheus keeps it there, but not through the other ``*_over_time``
functions: gputui must not rely on it), which ``label_replace`` may put back, and parts
joined with ``or`` matched on their labels less the name, as Prometheus does (a second
series of the same labels is dropped). Nodes in
``stopped`` reported earlier in the window, not now: only ``last_over_time`` sees them.
Anything else fails the test. The real server is exercised by the functional tests
(``tests/prom_cluster.py``).
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gputui.sources.fetching import TooLarge
from gputui.sources.prometheus.alerts import FIRING, INFO
from gputui.sources.prometheus.queries import NODE_LABELS, REF, TAG

Series = tuple[dict[str, str], float]
_NODES = re.compile(r'(Hostname|hostname|instance)=~"((?:[^"\\]|\\.)*)"')
_NAMES = re.compile(r'__name__=~"([^"]*)"')
_REPLACED = re.compile(r', "(\w+)", "((?:[^"\\]|\\.)*)", "", ""\)')


def node_of(labels: Mapping[str, str]) -> tuple[str, str] | None:
    for label in NODE_LABELS:
        if labels.get(label, "").strip():
            return label, labels[label]
    return None


@dataclass
class FakeProm:
    """A fetcher (``PrometheusSource(fetcher=...)``) over ``series`` (labels, value)."""

    series: Sequence[Series]
    #: a page of nodes' series larger than this is refused as too large (the byte cap);
    #: the counts, the census and the aggregates are a few series a node and always fit
    max_answer: int | None = None
    asked: list[str] = field(default_factory=list)
    #: nodes that stopped reporting before the query's time (within the census's window)
    stopped: frozenset[str] = frozenset()

    def __call__(self, url: str, timeout: float, headers: dict[str, str] | None = None) -> str:
        params = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        if urllib.parse.urlsplit(url).path.endswith("/api/v1/alerts"):
            self.asked.append("/api/v1/alerts")
            return json.dumps({"status": "success", "data": {"alerts": []}})
        query = params["query"][0]
        self.asked.append(query)
        now = float(params["time"][0]) if "time" in params else time.time()
        if "/query_range" in url:
            start, end = float(params["start"][0]), float(params["end"][0])
            step = float(params["step"][0])
            grid = [start + i * step for i in range(int((end - start) / step) + 1)]
            rows = [
                {"metric": labels, "values": [[t, repr(value)] for t in grid]}
                for labels, value in self._selected(query)
            ]
            return self._answer("matrix", rows)
        if query.endswith("s]"):  # raw samples: an instant query of a range selector
            rows = [
                {"metric": labels, "values": [[now - 15 * i, repr(value)] for i in (3, 2, 1, 0)]}
                for labels, value in self._selected(query)
            ]
            return self._answer("matrix", rows)
        return self._answer("vector", self._instant(query, now))

    def _answer(self, kind: str, rows: Sequence[Mapping[str, object]]) -> str:
        return json.dumps({"status": "success", "data": {"resultType": kind, "result": rows}})

    def _instant(self, query: str, now: float) -> list[dict[str, object]]:
        if f'"{TAG}", "nodes"' in query:
            nodes = {node_of(labels) for labels, _ in self._refs()}
            return [
                _tagged({}, "nodes", len(nodes), now),
                _tagged({}, "gpus", len(self._refs()), now),
            ]
        if f'"{TAG}", "seen"' in query:
            return self._per_node(now, {"seen": None, "live": None, "samples": 40.0})
        if f'"{TAG}", "newest"' in query:
            return self._per_node(now, {"newest": now, "gpus": None})
        if "last_over_time(" in query:
            return self._last_over_time(query, now)
        if f'"{TAG}", ' in query:
            return []  # the second summary query: no clock events, Xids or replays
        if query.startswith("max(timestamp("):
            return [{"metric": {}, "value": [now, repr(now)]}]
        if query.startswith("up{"):
            return []
        if query in (INFO, FIRING):  # the engine's marker and alerts: series as they are
            name = query.split("{")[0]
            return [
                {"metric": labels, "value": [now, repr(value)]}
                for labels, value in self.series
                if labels.get("__name__") == name
            ]
        return [
            {"metric": labels, "value": [now, repr(value)]}
            for labels, value in self._selected(query)
            if not self._gone(labels)
        ]

    def _gone(self, labels: Mapping[str, str]) -> bool:
        return (node_of(labels) or ("", ""))[1] in self.stopped

    def _last_over_time(self, query: str, now: float) -> list[dict[str, object]]:
        """``A or B or ...``, each part a ``last_over_time`` of a selector, perhaps inside
        ``label_replace`` calls (each sets a label to a constant)."""
        out: list[dict[str, object]] = []
        taken: set[frozenset[tuple[str, str]]] = set()
        for part in query.split(" or "):
            assert part.count("last_over_time(") == 1, part
            for labels, value in self._selected(part):
                labels = {k: v for k, v in labels.items() if k != "__name__"}  # dropped
                for label, replaced in _REPLACED.findall(part.split("last_over_time(")[1]):
                    labels[label] = json.loads(f'"{replaced}"')
                matched = frozenset((k, v) for k, v in labels.items() if k != "__name__")
                if matched not in taken:  # `or`: the labels less the name match
                    taken.add(matched)
                    out.append({"metric": labels, "value": [now, repr(value)]})
        return out

    def _refs(self, live: bool = False) -> list[Series]:
        return [
            s
            for s in self.series
            if s[0].get("__name__") == REF and not (live and self._gone(s[0]))
        ]

    def _per_node(self, now: float, figures: Mapping[str, float | None]) -> list[dict[str, object]]:
        """Each node's figures; None: its count of GPUs (seen; live and gpus: those
        reporting now). A stopped node has no figure of now (newest, live, gpus)."""
        count: dict[tuple[str, str], int] = {}
        live: dict[tuple[str, str], int] = {}
        meta: dict[tuple[str, str], dict[str, str]] = {}
        for labels, _ in self._refs():
            key = node_of(labels)
            if key is not None:
                count[key] = count.get(key, 0) + 1
                live[key] = live.get(key, 0) + (0 if self._gone(labels) else 1)
                meta[key] = {k: labels[k] for k in (*NODE_LABELS, "job") if k in labels}
        return [
            _tagged(meta[key], tag, float(counted) if value is None else value, now)
            for key in count
            for tag, value in figures.items()
            if (counted := count[key] if tag == "seen" else live[key]) or tag == "seen"
        ]

    def _selected(self, query: str) -> list[Series]:
        names = _NAMES.search(query)
        wanted = set(names.group(1).split("|")) if names else set()
        asked: set[tuple[str, str]] = set()
        for label, regex in _NODES.findall(query):
            for value in re.split(r"(?<!\\)\|", regex):
                asked.add((label, re.sub(r"\\(.)", r"\1", value)))
        found = [  # without node matchers, every node's (the whole cluster's listing)
            (labels, value)
            for labels, value in self.series
            if labels.get("__name__") in wanted and (not asked or node_of(labels) in asked)
        ]
        if self.max_answer is not None and len(found) > self.max_answer:
            raise TooLarge("answer larger than 10 MB")
        return found


def _tagged(labels: Mapping[str, str], tag: str, value: float, now: float) -> dict[str, object]:
    return {"metric": {**labels, TAG: tag}, "value": [now, repr(value)]}


def gpu_series(node: str, gpus: int, temp: float = 50.0, **extra: float) -> list[Series]:
    """A node's GPUs: a temperature each (and ``extra`` DCGM fields), Hostname-labelled."""
    out: list[Series] = []
    for gpu in range(gpus):
        labels = {"gpu": str(gpu), "Hostname": node, "instance": f"{node}:9400", "job": "dcgm"}
        out.append(({**labels, "__name__": REF}, temp))
        out += [({**labels, "__name__": name}, value) for name, value in extra.items()]
    return out
