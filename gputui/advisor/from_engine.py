"""The engine's verdict as the advisor's candidates: where `gputui rules` are loaded in the
cluster's Prometheus server, the rules it evaluates are judged there for every GPU all the
time, and a point-in-time read takes their alerts instead of reading every node's history.

An alert on a GPU whose history gputui read is the live rule's candidate where the live
rule finds it too (its evidence in numbers), else the engine form's title and remedies,
its evidence what the engine held and since when. Either way the engine has held it for
its ``for:``: it shows at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate
from gputui.advisor.promrules import LEFT_TO_GPUTUI, Terms, engine
from gputui.advisor.promrules.alert import Alert, render
from gputui.advisor.rule import Rule
from gputui.core.judgement import EngineAlert, EngineVerdict
from gputui.core.names import RuleId
from gputui.core.units import fmt_duration

Key = tuple[RuleId, int | None]


def engine_candidates(
    ctx: Context, verdict: EngineVerdict, rules: Mapping[RuleId, Rule]
) -> tuple[dict[Key, Candidate], dict[RuleId, str]]:
    """The candidates of the engine's alerts, and the rules whose live check raised (to
    say as a broken rule is said)."""
    forms = {a.name: a for a in engine(Terms(verdict.scrape_s)).alerts}
    by_rule: dict[RuleId, list[EngineAlert]] = {}
    for alert in verdict.alerts:
        by_rule.setdefault(alert.rule, []).append(alert)
    out: dict[Key, Candidate] = {}
    errors: dict[RuleId, str] = {}
    for rule_id, alerts in by_rule.items():
        live: dict[Key, Candidate] = {}
        rule = rules.get(rule_id)
        if rule is not None and any(a.gpu is not None for a in alerts):
            try:
                live = {c.key: c for c in rule.check(ctx)}
            except Exception as exc:  # a broken rule: the engine's word stands
                errors[rule_id] = f"{type(exc).__name__}: {exc}"
        for alert in (a for a in alerts if a.gpu is not None):
            found = live.get((rule_id, alert.gpu))
            said = _said(alert, ctx.frame.time)
            if found is None:
                found = _from_form(alert, forms.get(alert.name), ctx)
            out[(rule_id, alert.gpu)] = replace(
                found, evidence=(*found.evidence, said), hold_s=0.0, end_s=None
            )
        nodes = [a for a in alerts if a.gpu is None]
        if nodes:
            out[(rule_id, None)] = _nodes(rule_id, nodes, forms, ctx.frame.time)
    return out, errors


def _said(alert: EngineAlert, now: float) -> str:
    since = f", since {fmt_duration(max(0.0, now - alert.since))} ago" if alert.since else ""
    return f"the engine's alert {alert.name} fires{since} (gputui rules)"


def _labels(alert: EngineAlert, ctx: Context) -> dict[str, str]:
    device = ctx.devices.get(alert.gpu) if alert.gpu is not None else None
    number = device.node_index if device is not None else None
    return {"gputui_node": alert.node, "gpu": str(number if number is not None else "")}


def _from_form(alert: EngineAlert, form: Alert | None, ctx: Context) -> Candidate:
    """The engine's own words where the server rendered them, else its form's."""
    labels = _labels(alert, ctx)
    title = form.title if form is not None else f"{alert.rule}: the engine's alert fires"
    remedies = alert.remedies or (
        tuple(render(r, labels) for r in form.remedies) if form is not None else ()
    )
    condition = alert.description or (render(form.evidence, labels) if form is not None else "")
    return Candidate(
        rule=alert.rule,
        severity=alert.severity,
        gpu=alert.gpu,
        title=title,
        evidence=(condition,) if condition else (),
        remedies=remedies,
    )


def _nodes(
    rule: RuleId, alerts: Iterable[EngineAlert], forms: Mapping[str, Alert], now: float
) -> Candidate:
    """Alerts on nodes as a whole (they stopped reporting), as one candidate: a node
    counted once however many of its alerts fire (its target down, its GPUs silent)."""
    alerts = list(alerts)
    nodes = list(dict.fromkeys(a.node for a in alerts))
    names = ", ".join(nodes[:5]) + (f" and {len(nodes) - 5} more" if len(nodes) > 5 else "")
    form = forms.get(alerts[0].name)
    worst = max(alerts, key=lambda a: a.severity.rank)
    return Candidate(
        rule=rule,
        severity=worst.severity,
        gpu=None,
        title=f"{len(nodes)} node(s) not reporting: {names}"
        if rule is RuleId.NOT_REPORTING
        else f"{form.title if form else rule}: {names}",
        evidence=tuple(f"node {a.node}: {_said(a, now)}" for a in alerts[:5]),
        remedies=form.remedies if form is not None else (),
        hold_s=0.0,
    )


def left_to_gputui(verdict: EngineVerdict) -> dict[RuleId, str]:
    """Rules the engine leaves out that a point-in-time read with its verdict does not
    read the history for (info lines: context, not a verdict), and why."""
    return {
        rule: f"{why}: not judged where the engine's verdict is read (doctor reads the "
        "history only of the nodes its alerts name)"
        for rule, why in LEFT_TO_GPUTUI.items()
        if rule not in verdict.rules
    }
