"""The cluster's nodes ranked worst first: what the cluster view and doctor both show."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gputui.core.model import DeviceInfo, Finding, Frame, NodeStatus
from gputui.core.names import Severity
from gputui.core.records import frozen

#: the name of the GPUs a local source reads (they have no node)
LOCAL = "this machine"


@frozen
class NodeRow:
    """One node: its GPUs' worst findings in index order, and the figures that rank it."""

    node: str
    gpus: tuple[int, ...]  # our GPU indices, in the node's order
    worst: tuple[Severity | None, ...]  # per GPU
    reporting: tuple[bool, ...]  # per GPU: read this tick
    util_mean: float | None
    hottest_c: float | None
    power_w: float | None
    findings: int

    @property
    def rank(self) -> tuple[int, int, int, str]:
        """Worst first: a node that stopped reporting, then by its worst severity, then by
        how many findings it has."""
        down = sum(1 for r in self.reporting if not r)
        severity = max((s.rank for s in self.worst if s is not None), default=-1)
        return (-int(down > 0), -severity, -self.findings, self.node)


def node_rows(
    devices: Sequence[DeviceInfo], frame: Frame | None, findings: Sequence[Finding]
) -> list[NodeRow]:
    worst: dict[int, Severity] = {}
    counts: dict[int, int] = {}
    for f in findings:
        if f.gpu is None:
            continue
        counts[f.gpu] = counts.get(f.gpu, 0) + 1
        if f.gpu not in worst or f.severity.rank > worst[f.gpu].rank:
            worst[f.gpu] = f.severity
    samples = {s.index: s for s in frame.gpus if not s.lost} if frame is not None else {}
    by_node: dict[str, list[DeviceInfo]] = {}
    for device in devices:
        by_node.setdefault(device.node or LOCAL, []).append(device)
    statuses = {n.node: n for n in frame.nodes} if frame is not None else {}
    rows = []
    for node, members in by_node.items():
        readings = [samples.get(d.index) for d in members]
        status = statuses.get(node)
        if status is not None and not any(r is not None for r in readings):
            rows.append(_from_status(status, members))
            continue
        utils = [s.util_gpu for s in readings if s is not None and s.util_gpu is not None]
        temps = [s.temp_c for s in readings if s is not None and s.temp_c is not None]
        powers = [s.power_w for s in readings if s is not None and s.power_w is not None]
        rows.append(
            NodeRow(
                node=node,
                gpus=tuple(d.index for d in members),
                worst=tuple(worst.get(d.index) for d in members),
                reporting=tuple(s is not None for s in readings),
                util_mean=sum(utils) / len(utils) if utils else None,
                hottest_c=max(temps) if temps else None,
                power_w=sum(powers) if powers else None,
                findings=sum(counts.get(d.index, 0) for d in members),
            )
        )
    return sorted(rows, key=lambda r: r.rank)


def _from_status(status: NodeStatus, members: Sequence[DeviceInfo]) -> NodeRow:
    """A node the source did not read in full this tick, as its aggregates rank it: a
    clock-event slowdown, an Xid or the engine's critical alert is critical, the power
    cap, PCIe replays or the engine's warning a warning (read in full, the advisor's
    findings say which GPU and why)."""
    severity: Severity | None = None
    if status.thermal_gpus or status.slowdown_gpus or status.xid or status.engine_critical:
        severity = Severity.CRITICAL
    elif status.power_cap_gpus or status.replays or status.engine_warning:
        severity = Severity.WARNING
    return NodeRow(
        node=status.node,
        gpus=tuple(d.index for d in members),
        worst=(severity,) + (None,) * (len(members) - 1),
        reporting=(status.up,) * len(members),
        util_mean=status.util_mean,
        hottest_c=status.hottest_c,
        power_w=status.power_w,
        findings=0,
    )


def is_cluster(devices: Sequence[DeviceInfo]) -> bool:
    """GPUs on more than one node: worth a summary per node."""
    return len({d.node for d in devices}) > 1


def node_dict(row: NodeRow) -> dict[str, Any]:
    """A node's summary for doctor --json."""
    worst = max((s for s in row.worst if s is not None), key=lambda s: s.rank, default=None)
    return {
        "node": row.node,
        "gpus": list(row.gpus),
        "worst": worst.value if worst is not None else None,
        "findings": row.findings,
        "not_reporting": sum(1 for r in row.reporting if not r),
        "util_mean": row.util_mean,
        "hottest_c": row.hottest_c,
        "power_w": row.power_w,
    }
