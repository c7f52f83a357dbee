"""A cluster's nodes as a Prometheus server knows them: who they are, how often each is
scraped, which are down and why, and what the aggregating queries say of each.

Pure functions over decoded answers (``wire``): the source (``source``) asks, these
read. Every figure is checked where it enters: a node past the caps is refused with the
cap named, a figure that is not finite is no figure, a timestamp outside the window asked
for is no reading.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from gputui.core.model import NodeStatus
from gputui.core.names import Severity
from gputui.core.numbers import median
from gputui.sources.fetching import ScrapeError
from gputui.sources.prometheus.queries import (
    REASON_FIGURES,
    REASONS_LABEL,
    TAG,
    NodeKey,
    display_names,
    node_key,
)
from gputui.sources.prometheus.wire import labels_of, point
from gputui.sources.remote import Blind

# The bounds of one cluster, whatever the server answers (docs/security.md):
MAX_NODES = 4096
MAX_CLUSTER_GPUS = 32_768  # 4,096 nodes of 8
MAX_SERIES_PER_NODE = 16_384  # 256 GPUs x 40 fields and their MIG instances
#: a node is down once its newest reading is this many of its scrape intervals behind the
#: freshest node's (and a second): its second scrape in a row is missing
DOWN_AFTER_INTERVALS = 1.5
#: an instant answer's own time may differ from ours by this much (the server's clock)
MAX_SKEW_S = 3600.0
NARROW = 'narrow the query with --match (e.g. --match \'job="dcgm",cluster="a"\')'

#: how two answers for one node (two jobs scrape it) combine, by figure
_SUM = frozenset(
    (
        "seen",
        "live",
        "gpus",
        "power",
        "thermal",
        "power_cap",
        "slowdown",
        "replays",
        "engine_critical",
        "engine_warning",
    )
)
_MIN = frozenset(("util_min", "margin"))

Figures = dict[str, float]


@dataclass
class ClusterNode:
    """One node: its identity, what the census said, its GPUs in our index order."""

    key: NodeKey
    name: str
    instance: str | None = None
    job: str | None = None
    seen: int = 0  # GPUs seen in the window
    live: bool = False  # reporting when the source opened
    interval_s: float | None = None
    first_index: int = 0
    gpus: tuple[int, ...] = ()  # its own GPU numbers, in our index order
    blind: Blind | None = None
    #: its full readings were seen once (what its exporter's counters leave blind is known)
    checked: bool = False
    #: its devices carry its limits (the device-level fields): listed with them, or read
    #: with its first full reading (following the screen, the listing is lighter)
    limits: bool = False
    #: the last Xid code seen per GPU number: a new code is a new event
    xid: dict[int, int] = field(default_factory=dict)
    #: why it was down when the source opened ("up == 0"), if it was
    down_at_start: str | None = None
    #: it has reported since the source opened (a node down at start that came back)
    reported: bool = False
    #: the Kubernetes workloads on its GPUs, in GPU order
    pods: tuple[str, ...] = ()


@dataclass
class Tagged:
    """Tagged aggregations (``queries.TAG``) by node: the figures, each node's instance and
    job, how many series were refused (labels that are not strings, no node, a time
    outside the window, a value that is no number) and the server's time of the answer."""

    figures: dict[NodeKey, Figures] = field(default_factory=dict)
    meta: dict[NodeKey, dict[str, str]] = field(default_factory=dict)
    refused: int = 0
    evaluated: float | None = None

    def take(self, result: Iterable[Mapping[str, Any]], now: float) -> Tagged:
        for series in result:
            labels = labels_of(series)
            key = node_key(labels) if labels is not None else None
            got = point(series.get("value"), now - MAX_SKEW_S, now + MAX_SKEW_S)
            if labels is None or key is None or got is None or not math.isfinite(got[1]):
                self.refused += 1
                continue
            tag, value = labels.get(TAG, ""), got[1]
            if tag == "newest" and not got[0] - 86400 <= value <= got[0] + 60:
                self.refused += 1  # a sample time a day from the query's: no reading
                continue
            figures = _figures(tag, value, labels.get(REASONS_LABEL))
            if figures is None:
                self.refused += 1
            if not figures:
                continue
            self.evaluated = max(self.evaluated or got[0], got[0])
            mine = self.figures.setdefault(key, {})
            self.meta.setdefault(key, {k: labels[k] for k in ("instance", "job") if k in labels})
            for name, figure in figures:
                old = mine.get(name)
                mine[name] = figure if old is None else _combined(name, old, figure)
            if len(self.figures) > MAX_NODES + 1:
                raise ScrapeError(f"more than {MAX_NODES:,} nodes: refused; {NARROW}")
        return self


def _figures(tag: str, value: float, bits: str | None) -> list[tuple[str, float]] | None:
    """A tagged answer's figures: itself, or for the count of GPUs with a set of clock-event
    bits (``reasons``), that count for each kind the bits hold; None: no figure."""
    if tag != "reasons":
        return [(tag, value)]
    try:
        number = float(bits) if bits is not None else math.nan
    except ValueError:
        return None
    if not number.is_integer() or not 0 < number < 64:
        return None
    return [(kind, value) for kind, mask in REASON_FIGURES if int(number) & mask]


def _combined(tag: str, old: float, value: float) -> float:
    if tag in _SUM:
        return old + value
    return min(old, value) if tag in _MIN else max(old, value)


def check_counts(nodes: float | None, gpus: float | None, shown: str) -> None:
    """Refuse a cluster past the caps before anything large is asked for."""
    if nodes is not None and nodes > MAX_NODES:
        raise ScrapeError(
            f"{shown} has {nodes:,.0f} nodes with DCGM series, more than gputui reads at once "
            f"({MAX_NODES:,}); {NARROW}"
        )
    if gpus is not None and gpus > MAX_CLUSTER_GPUS:
        raise ScrapeError(
            f"{shown} has {gpus:,.0f} GPUs with DCGM series, more than gputui reads at once "
            f"({MAX_CLUSTER_GPUS:,}); {NARROW}"
        )


def cluster_of(
    figures: Mapping[NodeKey, Figures],
    meta: Mapping[NodeKey, dict[str, str]],
    names: Mapping[NodeKey, str],
    window_s: float,
) -> dict[NodeKey, ClusterNode]:
    """The census as nodes: GPUs seen, reporting or not, and each one's scrape interval
    (its readings in the window: ``window_s`` over their count)."""
    nodes: dict[NodeKey, ClusterNode] = {}
    for key, figure in figures.items():
        seen = int(figure.get("seen", 0))
        if seen <= 0:
            continue
        samples = figure.get("samples")
        interval = window_s / samples if samples is not None and samples >= 3 else None
        nodes[key] = ClusterNode(
            key=key,
            name=names[key],
            instance=meta.get(key, {}).get("instance"),
            job=meta.get(key, {}).get("job"),
            seen=seen,
            live=figure.get("live", 0) > 0,
            interval_s=round(interval, 1) if interval is not None else None,
        )
    return nodes


def intervals_of(
    result: Iterable[Mapping[str, Any]], page: Collection[NodeKey], start: float, end: float
) -> dict[NodeKey, float]:
    """Each node's scrape interval from its raw samples (an instant query of a range
    selector): the median time between them, to a tenth of a second. Exact where the
    census's count over a window is not (a node whose history is younger than the window)."""
    gaps: dict[NodeKey, list[float]] = {}
    for series in result:
        labels = labels_of(series)
        key = node_key(labels) if labels is not None else None
        values = series.get("values")
        if key is None or key not in page or not isinstance(values, list):
            continue
        times = sorted(got[0] for pair in values if (got := point(pair, start, end)) is not None)
        gaps.setdefault(key, []).extend(b - a for a, b in pairwise(times) if b > a)
    return {key: round(median(found), 1) for key, found in gaps.items() if len(found) >= 2}


def cluster_interval(nodes: Iterable[ClusterNode]) -> float | None:
    """The cluster's scrape interval: the median of its nodes'."""
    intervals = [n.interval_s for n in nodes if n.interval_s is not None]
    return median(intervals) if intervals else None


def down_reason(
    node: ClusterNode,
    figure: Figures | None,
    freshest: float | None,
    interval_s: float,
    evaluated: float,
    stale_after_s: float,
) -> str | None:
    """Why ``node`` counts as down this tick, or None: no series now, its newest reading
    two of its scrapes behind the freshest node's, or older than ``stale_after_s`` by the
    server's own clock (so a skewed local clock flags none and hides none)."""
    newest = figure.get("newest") if figure is not None else None
    if newest is None:
        if node.down_at_start and not node.reported:
            return node.down_at_start
        return "stopped reporting"
    every = node.interval_s or interval_s
    behind = (freshest - newest) if freshest is not None else 0.0
    if behind > DOWN_AFTER_INTERVALS * every + 1.0:
        return (
            f"stopped reporting: its newest reading is {behind:.0f} s behind the other nodes' "
            f"(scraped every {every:g} s)"
        )
    if evaluated - newest > stale_after_s:
        return f"stopped reporting {evaluated - newest:.0f} s ago"
    return None


def suspicion(figure: Figures | None) -> Severity | None:
    """What the aggregates alone say of a node, to rank it and to read the worst in full
    first: a thermal or HW slowdown reason, an Xid or the engine's critical alert is likely
    critical; the power cap, PCIe replays, a GPU within 3 °C of its slowdown limit or the
    engine's warning a warning."""
    if not figure:
        return None
    if any(figure.get(tag, 0) > 0 for tag in ("thermal", "slowdown", "xid", "engine_critical")):
        return Severity.CRITICAL
    margin = figure.get("margin")
    if (
        figure.get("engine_warning", 0) > 0
        or figure.get("power_cap", 0) > 0
        or figure.get("replays", 0) > 0
        or (margin is not None and margin <= 3)
    ):
        return Severity.WARNING
    return None


def status_of(
    node: ClusterNode,
    figure: Figures | None,
    down: str | None,
    evaluated: float,
    pods: tuple[str, ...] = (),
) -> NodeStatus:
    f = figure or {}

    def count(tag: str) -> int | None:
        value = f.get(tag)
        return int(value) if value is not None and 0 <= value <= 1_000_000 else None

    newest = f.get("newest")
    return NodeStatus(
        node=node.name,
        up=down is None,
        down=down,
        gpus=count("gpus"),
        age_s=max(0.0, evaluated - newest) if newest is not None else None,
        interval_s=node.interval_s,
        hottest_c=f.get("hottest"),
        util_mean=f.get("util_mean"),
        util_min=f.get("util_min"),
        util_max=f.get("util_max"),
        power_w=f.get("power"),
        thermal_gpus=count("thermal"),
        power_cap_gpus=count("power_cap"),
        slowdown_gpus=count("slowdown"),
        xid=count("xid"),
        replays=f.get("replays"),
        engine_critical=count("engine_critical"),
        engine_warning=count("engine_warning"),
        pods=pods,
    )


def wanted(
    nodes: Mapping[NodeKey, ClusterNode],
    shown: Sequence[str],
    figures: Mapping[NodeKey, Figures],
    down: Mapping[NodeKey, str],
    limit: int,
) -> list[NodeKey]:
    """The nodes to read in full this tick, at most ``limit``: those the screen shows (in
    its order), then the ones the aggregates suspect, worst first. Down nodes have
    nothing to read."""
    by_name = {n.name: key for key, n in nodes.items()}
    out: list[NodeKey] = []
    for name in shown:
        key = by_name.get(name)
        if key is not None and key not in down and key not in out and nodes[key].gpus:
            out.append(key)
    suspects = sorted(
        (key for key in nodes if key not in down and nodes[key].gpus and key not in out),
        key=lambda k: (-_rank(suspicion(figures.get(k))), nodes[k].name),
    )
    out += [k for k in suspects if suspicion(figures.get(k)) is not None]
    return out[:limit]


def _rank(severity: Severity | None) -> int:
    return -1 if severity is None else severity.rank


def grouped_down(down: Sequence[tuple[str, str]], shown: int = 3) -> list[str]:
    """Down nodes as lines: one each while few, then one line for the rest."""
    if len(down) <= shown:
        return [f"node {name} {why}" for name, why in down]
    head = [f"node {name} {why}" for name, why in down[: shown - 1]]
    rest = [name for name, _why in down[shown - 1 :]]
    names = ", ".join(rest[:3]) + (f" and {len(rest) - 3} more" if len(rest) > 3 else "")
    return [*head, f"{len(rest)} more nodes are down: {names}"]


def pages_of(
    nodes: Mapping[NodeKey, ClusterNode], keys: Sequence[NodeKey], gpus_a_page: int
) -> list[list[NodeKey]]:
    """``keys`` in pages of about ``gpus_a_page`` GPUs (a node is never split)."""
    pages: list[list[NodeKey]] = []
    page: list[NodeKey] = []
    held = 0
    for key in keys:
        size = max(1, nodes[key].seen, len(nodes[key].gpus))
        if page and held + size > gpus_a_page:
            pages.append(page)
            page, held = [], 0
        page.append(key)
        held += size
    if page:
        pages.append(page)
    return pages


def mark_down_targets(
    nodes: dict[NodeKey, ClusterNode], result: Iterable[Mapping[str, Any]], now: float
) -> None:
    """``up == 0`` targets (``result``): a node the window saw is marked down since the
    start; one it never saw joins as a node known only by its target (within MAX_NODES)."""
    by_instance = {n.instance: n for n in nodes.values() if n.instance}
    why = "is down since the start (its target's up == 0)"
    for series in result:
        labels = labels_of(series) or {}
        instance = labels.get("instance")
        if instance is None or point(series.get("value"), now - 3600, now + 3600) is None:
            continue
        node = by_instance.get(instance)
        if node is not None:
            if not node.live:
                node.down_at_start = why
            continue
        if len(nodes) < MAX_NODES:
            key = NodeKey("instance", instance)
            name = display_names([*nodes, key])[key]
            nodes[key] = ClusterNode(key, name, instance, labels.get("job"), down_at_start=why)


def forget_target(nodes: dict[NodeKey, ClusterNode], node: ClusterNode) -> None:
    """A node known only by its target (up == 0 at start) that now reports under its own
    name is the same machine: one row, not two."""
    for key, other in list(nodes.items()):
        same = key.label == "instance" and other.instance == node.instance
        if same and not other.gpus and key != node.key:
            del nodes[key]


def down_of(
    nodes: Mapping[NodeKey, ClusterNode],
    tagged: Tagged,
    interval_s: float,
    now: float,
    stale_after_s: float,
) -> dict[NodeKey, str]:
    """The nodes down this tick and why (``down_reason``); the others in the aggregates
    are marked as having reported."""
    figures = tagged.figures
    freshest = max((f["newest"] for f in figures.values() if "newest" in f), default=None)
    out: dict[NodeKey, str] = {}
    for key, node in nodes.items():
        why = down_reason(
            node, figures.get(key), freshest, interval_s, tagged.evaluated or now, stale_after_s
        )
        if why is not None:
            out[key] = why
        elif key in figures:
            node.reported = True
    return out


def lag_of(result: Sequence[Mapping[str, Any]], fresh: float) -> float:
    """How far the newest sample a server gives when not asked for fresh data (``result``,
    one number) is behind the freshest one it has (``fresh``): 0 where it cannot say."""
    got = point(result[0].get("value"), fresh - 86400, fresh + 86400) if result else None
    if got is None or not math.isfinite(got[1]):
        return 0.0
    return max(0.0, fresh - got[1])
