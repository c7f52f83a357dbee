"""The engine's verdict, where `gputui rules` are loaded in the Prometheus server (or
written to it by vmalert or Thanos Ruler): the marker series that says which rules it
evaluates (``gputui_rules_info``) and the alerts they fire now (``ALERTS``, with
``ALERTS_FOR_STATE``'s time each became active), one query each however many nodes.
An alert's labels name its node and GPU as the series it came from did."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gputui.core.judgement import EngineAlert, EngineVerdict
from gputui.core.model import Note
from gputui.core.names import NoteKind, RuleId, Severity
from gputui.sources.prometheus.nodes import ClusterNode
from gputui.sources.prometheus.queries import NodeKey, node_key
from gputui.sources.prometheus.wire import labels_of, point

#: the marker series `gputui rules` writes (``exporters.rules_file.INFO``)
INFO = "gputui_rules_info"
#: the engine's active alerts (firing, or pending: the condition holds over its window,
#: not yet for its ``for:``, which a point-in-time test does not wait for), valued by
#: when each became active
FIRING = 'ALERTS_FOR_STATE{gputui_rule!=""}'
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
) -> tuple[EngineAlert, ...]:
    """The active alerts on the nodes the source knows, each on its GPU (our index) or on
    its node as a whole, with what the engine said of it (``said``); alerts of other
    nodes, unknown rules or a broken labelset left out."""
    out: dict[tuple[str, str, int | None], EngineAlert] = {}
    for series in result:
        labels = labels_of(series) or {}
        rule, severity = (
            _RULES.get(labels.get("gputui_rule", "")),
            _SEVERITIES.get(labels.get("severity", "")),
        )
        key = node_key(labels)
        node = nodes.get(key) if key is not None else None
        if rule is None or severity is None or node is None:
            continue
        gpu: int | None = None
        number = labels.get("gpu")
        if number is not None:
            if not number.isdigit() or int(number) not in node.gpus:
                continue
            gpu = node.first_index + node.gpus.index(int(number))
        got = point(series.get("value"), now - 400 * 86400, now + 3600)
        name = labels.get("alertname", rule.value)
        description, remedies = (said or {}).get(_said_key(labels), ("", ()))
        alert = EngineAlert(
            rule, severity, gpu, node.name, name, got[1] if got else None, description, remedies
        )
        out.setdefault((name, node.name, gpu), alert)
    return tuple(out.values())


def verdict_note(verdict: EngineVerdict) -> Note:
    firing = len(verdict.alerts)
    return Note(
        NoteKind.GENERAL,
        f"the engine's rules (gputui rules, {verdict.scrape_s:g} s scrape) judge "
        f"{len(verdict.rules)} rules for every GPU here: {firing} alert(s) active; gputui "
        "reads the history only of the nodes they name",
    )
