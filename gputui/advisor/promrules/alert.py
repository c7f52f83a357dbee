"""A rule of the catalogue as the engine evaluates it: an alerting rule (or a recording
rule it reads), with the finding's title, evidence and remedies as its annotations."""

from __future__ import annotations

import re
from collections.abc import Mapping

from gputui.advisor.promrules.promql import NODE
from gputui.core.names import RuleId, Severity
from gputui.core.records import frozen

#: the templates annotations use: the alert's GPU, its node, its value
GPU = "{{ $labels.gpu }}"
WHERE = f"{{{{ $labels.{NODE} }}}}"


def value(decimals: int = 0) -> str:
    """The alert's value in an annotation: ``{{ $value | printf "%.0f" }}``."""
    return f'{{{{ $value | printf "%.{decimals}f" }}}}'


_LABEL = re.compile(r"\{\{ \$labels\.(\w+) \}\}")
_VALUE = re.compile(r'\{\{ \$value \| printf "%\.(\d)f" \}\}')


def render(template: str, labels: Mapping[str, str], value: float | None = None) -> str:
    """An annotation as the engine renders it (the two forms the rules use), for a report
    that did not get the engine's own rendering: without the alert's value, "?"."""
    text = _LABEL.sub(lambda m: labels.get(m.group(1), ""), template)
    figure = (lambda m: f"{value:.{int(m.group(1))}f}") if value is not None else (lambda m: "?")
    return _VALUE.sub(figure, text)


def on_node(command: str) -> str:
    """A remedy's command as it runs on the alert's node, for its GPU number there."""
    return f"On {WHERE}: {command}"


@frozen
class Alert:
    """One alerting rule. ``expr`` is the condition and its value the key figure the
    evidence names; ``for_s`` the hold the live rule waits (at least one scrape interval:
    two evaluations in a row), ``keep_s`` how long it stays after the condition goes."""

    rule: RuleId
    name: str
    severity: Severity
    expr: str
    for_s: float
    keep_s: float
    title: str
    evidence: str
    remedies: tuple[str, ...]
    #: about a whole node (it stopped reporting), not one of its GPUs
    node_level: bool = False

    @property
    def labels(self) -> dict[str, str]:
        return {"severity": self.severity.value, "gputui_rule": self.rule.value}

    @property
    def annotations(self) -> dict[str, str]:
        where = WHERE if self.node_level else f"GPU {GPU} on {WHERE}"
        return {
            "summary": f"{self.title} ({where})",
            "description": self.evidence,
            "remedies": "\n".join(self.remedies),
        }


@frozen
class Recording:
    """One recording rule: a series the alerts (and dashboards) read."""

    name: str
    expr: str
