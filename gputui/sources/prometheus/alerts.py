"""The engine's verdict, where `gputui rules` are loaded in the Prometheus server (or
written to it by vmalert or Thanos Ruler): the marker series that says which rules it
evaluates (``gputui_rules_info``) and the alerts they fire now (``ALERTS``, with
``ALERTS_FOR_STATE``'s time each became active), one query each however many nodes.
An alert's labels name its node and GPU as the series it came from did."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from gputui.core.judgement import EngineAlert, EngineVerdict
from gputui.core.model import Note
from gputui.core.names import NoteKind, RuleId, Severity
from gputui.core.sanitize import clean
from gputui.sources.prometheus.nodes import ClusterNode
from gputui.sources.prometheus.queries import NODE_LABELS, NodeKey
from gputui.sources.prometheus.wire import labels_of, point

#: the marker series `gputui rules` writes: these rules are loaded, and which
INFO = "gputui_rules_info"
#: the engine's active alerts (firing, or pending: the condition holds over its window,
#: not yet for its ``for:``, which a point-in-time test does not wait for), valued by
#: when each became active
FIRING = 'ALERTS_FOR_STATE{gputui_rule!=""}'
#: the label each alert of a rules file written for a ``--match`` carries (a digest of
#: it: an alert's labels are templates, the selector's text is not for them), so two
#: files for two selections on one server keep their alerts apart
MATCH_LABEL = "gputui_match"
_RULES = {rule.value: rule for rule in RuleId}
_SEVERITIES = {s.value: s for s in Severity}


def rules_loaded(
    result: Iterable[Mapping[str, Any]], match: str
) -> tuple[frozenset[RuleId], float] | None:
    """The catalogue rules the engine evaluates and the scrape interval they were written
    for, where a marker for this ``--match`` is there (rules for another selection judge
    other nodes); None where none is."""
    for series in result:
        labels = labels_of(series) or {}
        if labels.get("match", "") != match:
            continue
        rules = frozenset(_RULES[r] for r in labels.get("rules", "").split(",") if r in _RULES)
        every = labels.get("scrape_interval", "").removesuffix("s")
        try:
            scrape_s = float(every)
        except ValueError:
            continue
        if rules:
            return rules, scrape_s
    return None


def match_tag(match: str) -> str:
    """The ``MATCH_LABEL`` value of the rules for ``match``: none for no selection (a
    label with an empty value is no label), so a file written before the label existed
    reads as it did."""
    return hashlib.sha256(match.encode()).hexdigest()[:12] if match else ""


_Said = tuple[str, tuple[str, ...]]


def annotations_of(result: Iterable[Mapping[str, Any]]) -> dict[tuple[str, ...], _Said]:
    """The rendered description and remedies of each active gputui alert the server lists
    (/api/v1/alerts), by its alert name, node and GPU labels."""
    out: dict[tuple[str, ...], _Said] = {}
    for alert in result:
        labels, notes = alert.get("labels"), alert.get("annotations")
        if alert.get("state") not in ("firing", "pending") or not isinstance(labels, dict):
            continue
        if not isinstance(notes, dict):
            continue
        description, remedies = notes.get("description"), notes.get("remedies")
        if isinstance(description, str) and isinstance(remedies, str):
            out[_said_key(labels)] = (description, tuple(remedies.splitlines()[:8]))
    return out


def _said_key(labels: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(labels.get(k, "")) for k in ("alertname", "Hostname", "instance", "gpu"))


def alerts_of(
    result: Iterable[Mapping[str, Any]],
    nodes: Mapping[NodeKey, ClusterNode],
    now: float,
    said: Mapping[tuple[str, ...], _Said] | None = None,
    match: str = "",
) -> tuple[EngineAlert, ...]:
    """The active alerts of the rules for ``match``, each on its GPU (our index) or on its
    node as a whole, with what the engine said of it (``said``). A node is found by any
    name its alert carries (an exporter's target is named by ``instance`` alone, a node
    remembered by the silence rules by its ``Hostname`` too); an alert on a node the
    source holds no GPUs of (gone before the window it read, or past what it lists) is
    about that node as a whole, for a node gone is the news. Alerts of another file's
    selection, unknown rules or a broken labelset are left out."""
    known = _known(nodes)
    tag = match_tag(match)
    out: dict[tuple[str, str, int | None], EngineAlert] = {}
    for series in result:
        labels = labels_of(series) or {}
        rule, severity = (
            _RULES.get(labels.get("gputui_rule", "")),
            _SEVERITIES.get(labels.get("severity", "")),
        )
        node, name = _node_of(labels, known)
        if rule is None or severity is None or name is None:
            continue
        if node is None and labels.get(MATCH_LABEL, "") != tag:
            continue
        gpu: int | None = None
        number = labels.get("gpu")
        if node is not None and number is not None:
            if not number.isdigit() or int(number) not in node.gpus:
                continue
            gpu = node.first_index + node.gpus.index(int(number))
        elif number is not None:
            name = f"{name} GPU {clean(number)}"
        got = point(series.get("value"), now - 400 * 86400, now + 3600)
        alertname = labels.get("alertname", rule.value)
        description, remedies = (said or {}).get(_said_key(labels), ("", ()))
        alert = EngineAlert(
            rule, severity, gpu, name, alertname, got[1] if got else None, description, remedies
        )
        out.setdefault((alertname, name, gpu), alert)
    return tuple(out.values())


def _known(nodes: Mapping[NodeKey, ClusterNode]) -> dict[NodeKey, ClusterNode]:
    """Each node under its key and its target's ``instance``; a node that reports under
    its own name before one known only by its target."""
    known: dict[NodeKey, ClusterNode] = {}
    for node in sorted(nodes.values(), key=lambda n: not n.gpus):
        known.setdefault(node.key, node)
        if node.instance:
            known.setdefault(NodeKey("instance", node.instance), node)
    return known


def _node_of(
    labels: Mapping[str, str], known: Mapping[NodeKey, ClusterNode]
) -> tuple[ClusterNode | None, str | None]:
    """The node an alert is on, by the first of its names the source knows, and the name
    to show: the node's, or where none is known, the first name it carries (cleaned)."""
    names = [NodeKey(k, v) for k in NODE_LABELS if (v := labels.get(k, "")).strip()]
    for key in names:
        if key in known:
            return known[key], known[key].name
    return None, clean(names[0].value) if names else None


def verdict_note(verdict: EngineVerdict) -> Note:
    firing = len(verdict.alerts)
    return Note(
        NoteKind.GENERAL,
        f"the engine's rules (gputui rules, {verdict.scrape_s:g} s scrape) judge "
        f"{len(verdict.rules)} rules for every GPU here: {firing} alert(s) active; gputui "
        "reads the history only of the nodes they name",
    )
