"""PromQL for a cluster's DCGM series: who a node is, selectors for pages of nodes, and
the aggregating queries that rank every node without reading every series.

A node is the value of the first of ``Hostname``, ``hostname`` and ``instance`` a series
carries, together with which one it was: a Hostname that happens to equal another node's
instance is another node (``NodeKey``), and the selectors say so (``instance="x",
Hostname=""``). Label values go into queries quoted and regex-escaped: a hostile name
matches itself and nothing else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from gputui.core.dcgm import BY_NAME
from gputui.core.sanitize import clean

#: the series gputui counts GPUs and nodes by: every dcgm-exporter counters set has it
REF = "DCGM_FI_DEV_GPU_TEMP"
NODE_LABELS = ("Hostname", "hostname", "instance")
BY = ", ".join(NODE_LABELS)
#: the label the aggregating queries tag their answers with (one query, many figures)
TAG = "gputui_figure"
#: the label a series' last value over a window is tagged with its metric's name by
#: (``Queries.last_of_nodes``)
FIELD = "gputui_field"
_REASONS = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS|DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
#: the label ``count_values`` names each node's distinct clock-event bits by (bits 2-7 of
#: the reasons, shifted down by 2), and the figures each bit counts a GPU towards: power
#: cap (bit 2), HW slowdown (3) and HW power brake (7), SW and HW thermal (5, 6)
REASONS_LABEL = "gputui_reasons"
REASON_FIGURES = (("power_cap", 0b1), ("slowdown", 0b100010), ("thermal", 0b11000))
_RE2_SPECIAL = re.compile(r"([\\.+*?()|\[\]{}^$])")


@dataclass(frozen=True, slots=True, order=True)
class NodeKey:
    """A node's identity: the label that named it and its value."""

    label: str
    value: str


def node_key(labels: Mapping[str, str]) -> NodeKey | None:
    for label in NODE_LABELS:
        value = labels.get(label)
        if value is not None and value.strip():
            return NodeKey(label, value)
    return None


def display_names(keys: Iterable[NodeKey]) -> dict[NodeKey, str]:
    """A name for each node as the screen shows it: its value cleaned (the name the GPUs'
    facts carry, which the screen hands back to say what it shows: a raw one with an escape
    in it matched none, and that node was never read), or where two nodes share a value (a
    Hostname equal to another's instance), the value and the label."""
    keys = list(keys)
    shown = {key: clean(key.value) for key in keys}
    count: dict[str, int] = {}
    for key in keys:
        count[shown[key]] = count.get(shown[key], 0) + 1
    return {
        key: shown[key]
        if count[shown[key]] == 1 or key.label == "Hostname"
        else f"{shown[key]} ({key.label})"
        for key in keys
    }


def quoted(text: str) -> str:
    """A PromQL string literal of ``text`` (Go's escapes, which JSON's are a subset of)."""
    return json.dumps(text, ensure_ascii=False)


def _literal(value: str) -> str:
    return _RE2_SPECIAL.sub(r"\\\1", value)


class Queries:
    """Every query gputui sends, built around the user's ``--match``."""

    def __init__(self, match: str | None) -> None:
        extra = (match or "").strip().removeprefix("{").removesuffix("}").strip()
        self.match = extra
        self.all_fields = "|".join(sorted(BY_NAME))
        self.device_fields = "|".join(
            [*sorted(name for name, f in BY_NAME.items() if f.on == "device"), REF]
        )

    def selector(self, names: str, extra: str = "") -> str:
        """``{__name__=~"A|B",<match>,<extra>}``."""
        parts = [f"__name__=~{quoted(names)}", self.match, extra]
        return "{" + ",".join(p for p in parts if p) + "}"

    def of_nodes(self, names: str, keys: Collection[NodeKey]) -> str:
        """The series of ``names`` on exactly these nodes: one selector per label that
        names nodes, joined with ``or``."""
        return " or ".join(self.selector(names, m) for m in _node_matchers(keys))

    def last_of_nodes(
        self, names: Sequence[str], keys: Collection[NodeKey], window_s: float
    ) -> str:
        """Each series of ``names`` on these nodes as it last was in the ``window_s`` before
        the query's time: every GPU the window saw, one that stopped reporting included,
        with the values it last had. One selector per name, the name set with
        ``label_replace`` (Prometheus and VictoriaMetrics keep it through
        ``last_over_time``, not through the other ``*_over_time`` functions; a server that
        drops it, or a multi-name selector, would leave one labelset a GPU), and tagged
        with it in ``FIELD``: ``or`` matches series by their labels less the name, so
        untagged, a GPU's second field is dropped as a duplicate of its first."""
        return " or ".join(
            f"label_replace(label_replace(last_over_time({self.selector(name, m)}"
            f'[{window_s:.0f}s]), "__name__", {quoted(name)}, "", ""), '
            f'"{FIELD}", {quoted(name)}, "", "")'
            for m in _node_matchers(keys)
            for name in names
        )

    def raw_samples(self, label: str, values: Collection[str], window_s: float) -> str:
        """The raw samples of the last ``window_s`` of each node's first GPU's reference
        series (nodes named by ``label``): their spacing is the node's scrape interval. A
        range selector cannot be joined with ``or``: one query a naming label."""
        regex = "|".join(_literal(v) for v in sorted(values))
        matchers = [f"{label}=~{quoted(regex)}", 'gpu="0"']
        matchers += [f'{earlier}=""' for earlier in NODE_LABELS[: NODE_LABELS.index(label)]]
        return f"{self.selector(REF, ','.join(matchers))}[{window_s:.0f}s]"

    def counts(self, window_s: float) -> str:
        """How many nodes and GPUs the window saw (two numbers, before anything large)."""
        seen = f"last_over_time({self.selector(REF)}[{window_s:.0f}s])"
        return (
            f'label_replace(count(count by ({BY}) ({seen})), "{TAG}", "nodes", "", "") '
            f'or label_replace(count({seen}), "{TAG}", "gpus", "", "")'
        )

    def census(self, window_s: float) -> str:
        """Per node: its GPUs seen in the window, those reporting now, its readings in the
        window (their spacing is its scrape interval), its newest reading's time, its job."""
        ref = self.selector(REF)
        window = f"[{window_s:.0f}s]"
        return _tagged(
            (
                ("seen", f"count by ({BY}, job) (last_over_time({ref}{window}))"),
                ("live", f"count by ({BY}, job) ({ref})"),
                ("samples", f"max by ({BY}, job) (count_over_time({ref}{window}))"),
                ("newest", f"max by ({BY}, job) (timestamp({ref}))"),
            )
        )

    def summary(self, window_s: float) -> list[str]:
        """The figures that rank every node, in a few queries of a few series a node:
        freshness, GPUs, hottest (and its distance to the slowdown limit), utilisation
        spread, power, how many GPUs have each kind of clock-event reason set (PromQL has
        no bitwise and: bit n of x is floor(x / 2^n) % 2; one ``count_values`` of each GPU's
        bits 2-7, so the reasons are selected once, not once a kind), the last Xid, PCIe
        replays."""
        ref = self.selector(REF) + " < 1000"
        util = self.selector("DCGM_FI_DEV_GPU_UTIL") + " <= 100"
        power = self.selector("DCGM_FI_DEV_POWER_USAGE") + " < 100000"
        slowdown = self.selector("DCGM_FI_DEV_SLOWDOWN_TEMP|gputui_temp_slowdown_celsius")
        reasons = f"max by ({BY}, gpu) ({self.selector(_REASONS)} < 1e15)"
        xid = self.selector("DCGM_FI_DEV_XID_ERRORS") + " < 1e9"
        replay = self.selector("DCGM_FI_DEV_PCIE_REPLAY_COUNTER(_total)?")
        first = (
            ("newest", f"max by ({BY}) (timestamp({self.selector(REF)}))"),
            ("gpus", f"count by ({BY}) ({self.selector(REF)})"),
            ("hottest", f"max by ({BY}) ({ref})"),
            (
                "margin",
                f"min by ({BY}) (max by ({BY}, gpu) ({slowdown} < 1000) - "
                f"max by ({BY}, gpu) ({ref}))",
            ),
            ("util_mean", f"avg by ({BY}) ({util})"),
            ("util_min", f"min by ({BY}) ({util})"),
        )
        second = (
            ("util_max", f"max by ({BY}) ({util})"),
            ("power", f"sum by ({BY}) ({power})"),
            (
                "reasons",
                f'count_values by ({BY}) ("{REASONS_LABEL}", floor({reasons} / 4) % 64 > 0)',
            ),
            ("xid", f"max by ({BY}) ({xid})"),
            ("replays", f"sum by ({BY}) (increase({replay}[{window_s:.0f}s]))"),
            # the engine's verdict, where `gputui rules` are loaded: its alerts by severity
            *(
                (f"engine_{level}", f"count by ({BY}) ({_engine_alerts(level)})")
                for level in ("critical", "warning")
            ),
        )
        return [_tagged(first), _tagged(second)]

    def down_targets(self, jobs: Collection[str]) -> str | None:
        """Targets of the jobs that carry DCGM series whose last scrape failed (``up`` 0):
        nodes down since before the window show only there."""
        if not jobs:
            return None
        regex = "|".join(_literal(j) for j in sorted(jobs))
        parts = [f"job=~{quoted(regex)}", self.match]
        return "up{" + ",".join(p for p in parts if p) + "} == 0"


def _engine_alerts(severity: str) -> str:
    return f'ALERTS{{alertstate="firing",gputui_rule!="",severity="{severity}"}}'


def _node_matchers(keys: Collection[NodeKey]) -> list[str]:
    """The matchers of these nodes: one set per label that names nodes (a node named by a
    later label has none of the earlier ones)."""
    by_label: dict[str, list[str]] = {}
    for key in keys:
        by_label.setdefault(key.label, []).append(key.value)
    out = []
    for label in NODE_LABELS:
        values = by_label.get(label)
        if not values:
            continue
        regex = "|".join(_literal(v) for v in sorted(values))
        matchers = [f"{label}=~{quoted(regex)}"]
        matchers += [f'{earlier}=""' for earlier in NODE_LABELS[: NODE_LABELS.index(label)]]
        out.append(",".join(matchers))
    return out


def _tagged(figures: Sequence[tuple[str, str]]) -> str:
    """Several aggregations in one query: each tagged with its name in ``TAG``."""
    return " or ".join(
        f'label_replace({expr}, "{TAG}", "{name}", "", "")' for name, expr in figures
    )
