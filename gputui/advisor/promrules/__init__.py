"""The advisor's catalogue in the engine: the rules a Prometheus server (or vmalert, Thanos
Ruler, Mimir's ruler) evaluates over dcgm-exporter's metrics for every GPU, all the time,
with the same thresholds, the live rules' windows and holds stretched to the scrape
interval, and the finding's title, evidence and remedies as annotations
(``gputui rules``). What the engine cannot express is listed with the reason, never faked.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from gputui.advisor.coverage import never_fed
from gputui.advisor.promrules.alert import Alert, Recording
from gputui.advisor.promrules.health import last_seen, memory, silent, stragglers, xids
from gputui.advisor.promrules.heat import clocks, fans, power, thermal
from gputui.advisor.promrules.memory_pcie import pcie, vram
from gputui.advisor.promrules.promql import Terms
from gputui.advisor.promrules.stuck import stuck
from gputui.advisor.rule import Rule
from gputui.core.config import Thresholds
from gputui.core.names import RuleId
from gputui.core.records import frozen

_T = Thresholds()
#: how each rule the engine evaluates differs from the live one, in a few words
ENGINE_NOTES: Mapping[RuleId, str] = {
    RuleId.THERMAL_THROTTLE: "the HBM's own limit is not exported: the core's temperature "
    "and the thermal reasons only",
    RuleId.THERMAL_HOT: "against the slowdown limit (DCGM exports no maximum operating "
    "temperature or thermal margin gputui maps); a GeForce target temperature is not known",
    RuleId.HW_SLOWDOWN: "the critical case (an idle board's info line is context, no alert)",
    RuleId.POWER_CAP: "the warning (a board at its default limit under a heavy load works as "
    "designed: no alert)",
    RuleId.POWER_LIMIT_LOWERED: "as live",
    RuleId.CLOCKS_HELD: "as live",
    RuleId.VRAM_PRESSURE: "growth toward full, and the ceiling while the work stalls; the "
    "host-spill case reads the host's memory, which dcgm-exporter does not carry",
    RuleId.IDLE_ALLOCATED: "the memory held (>= the rule's size) stands for the process "
    "holding it, which dcgm-exporter does not name",
    RuleId.PCIE_LINK_DEGRADED: "as live (replays are their own alert)",
    RuleId.PCIE_SATURATED: "as live",
    RuleId.PCIE_ERRORS: "the counter's rate over the window (rate()), not first to last reading",
    RuleId.GPU_ERRORS: "Xids by class when the last Xid's code changes (DCGM keeps the last "
    "code: the same Xid twice in a row is one event); a lost GPU shows as not reporting",
    RuleId.MEMORY_HEALTH: "as live, from the exporter's ECC, row-remapper and retired-page "
    "counters",
    RuleId.NOT_REPORTING: "a GPU or a node the engine saw (in the hour before the rules were "
    "loaded, or since; remembered for 7 days) that stopped reporting, and a DCGM job's "
    "target whose scrape fails",
    RuleId.STRAGGLER: "peers are the GPUs that share a workload label (exported_pod, pod, "
    "hpc_job by default); the median includes the GPU itself",
    RuleId.FAN_FAULT: "a fan stopped or held low on a hot or heating board; not a fan asked "
    "to turn whose tachometer reads 0 RPM (dcgm-exporter carries the speed the driver asks "
    "for, DCGM_FI_DEV_FAN_SPEED, and no tachometer); the board's limit is its slowdown "
    "temperature (no maximum operating temperature is exported); a board that exports no "
    "fan speed is silent, as live",
    RuleId.BUSY_NO_WORK: "a GPU busy without work that shares no workload label with another "
    "GPU (those are collective-hang's, as a job's ranks are live); traffic from the PCIe and "
    "NVLink bytes (DCGM's profiling fields) where exported, none read counting as none; the "
    "engine sees no process: no 'no process is listed on it' line, the remedies say how to "
    "find the PID",
    RuleId.COLLECTIVE_HANG: "a job's ranks are the GPUs that share a workload label (as "
    f"straggler's): each that waits without work for {_T.hang_unseen_s:g} s is a warning; "
    "the engine sees no process, so it cannot tell an odd rank that idles or is gone (live: "
    f"critical after {_T.hang_s:g} s) from one at work on its CPU, a save or an evaluation "
    f"(live: a warning after {_T.hang_unseen_s:g} s): it waits the longer hold and warns; "
    "the odd rank itself has its straggler-idle or not-reporting alert",
}
#: rules an exporter can feed that the engine still leaves to gputui, and why
LEFT_TO_GPUTUI: Mapping[RuleId, str] = {
    RuleId.VRAM_RESERVED: "an info line (memory high and flat: a framework's reserve) is "
    "context, not an alert",
}

#: the reason of a rule an exporter can feed that has no engine form (a rule added to the
#: catalogue since): tests/unit/test_engine_forms.py holds none to have it
NOT_WRITTEN = "no engine form written for it yet"


@frozen
class Engine:
    """The rules for one scrape interval and ``--match``: the recording rules first."""

    recordings: tuple[Recording, ...]
    alerts: tuple[Alert, ...]

    def by_rule(self) -> dict[RuleId, tuple[str, ...]]:
        """Each catalogue rule the engine evaluates, and its alerts' names."""
        out: dict[RuleId, list[str]] = {}
        for alert in self.alerts:
            out.setdefault(alert.rule, []).append(alert.name)
        return {rule: tuple(names) for rule, names in out.items()}


def engine(terms: Terms) -> Engine:
    """The rules at the terms' scrape interval: the figures several alerts read recorded
    first (a group's rules run in order), then the alerts."""
    alerts = [
        *thermal(terms),
        *power(terms),
        *clocks(terms),
        *fans(terms),
        *vram(terms),
        *pcie(terms),
        *xids(terms),
        *memory(terms),
        *silent(terms),
        *stragglers(terms),
        *stuck(terms),
    ]
    recorded = tuple(Recording(name, expr) for name, expr in terms.recorded.items())
    return Engine(recordings=(*recorded, last_seen(terms)), alerts=tuple(alerts))


def covers(rules: Collection[RuleId]) -> bool:
    """Whether an engine that evaluates ``rules`` judges every rule an exporter's metrics
    feed (but the info lines it leaves to gputui): then a point-in-time read needs no
    history but that of the nodes its alerts name."""
    from gputui.advisor import RULES

    never = never_fed(RULES)
    return all(r.id in rules or r.id in never or r.id in LEFT_TO_GPUTUI for r in RULES)


def not_in_engine(rules: Sequence[Rule], covered: Mapping[RuleId, object]) -> dict[RuleId, str]:
    """The catalogue's rules the engine does not evaluate, and why: what dcgm-exporter's
    metrics never carry, what is context rather than an alert, and (a rule added to the
    catalogue without an engine form) that it has none yet."""
    never = never_fed(rules)
    out: dict[RuleId, str] = {}
    for rule in rules:
        if rule.id in covered:
            continue
        if rule.id in never:
            out[rule.id] = f"dcgm-exporter's metrics carry no {never[rule.id]}"
        else:
            out[rule.id] = LEFT_TO_GPUTUI.get(rule.id, NOT_WRITTEN)
    return out


__all__ = [
    "ENGINE_NOTES",
    "LEFT_TO_GPUTUI",
    "NOT_WRITTEN",
    "Alert",
    "Engine",
    "Recording",
    "Terms",
    "covers",
    "engine",
    "not_in_engine",
]
