"""The advisor: pure rules over the history (no Textual, no NVML, no clock of its own)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gputui.advisor import (
    configuration,
    cooling,
    cuda,
    environment,
    hang,
    health,
    memory,
    node_settings,
    pcie,
    pipeline,
    placement,
    power,
    sharing,
    thermal,
    topology,
)
from gputui.advisor.coverage import describe
from gputui.advisor.engine import Advisor
from gputui.advisor.rule import Rule
from gputui.core.config import Config, Thresholds
from gputui.core.judgement import Judgement
from gputui.core.model import DeviceInfo, Finding, SourceInfo
from gputui.core.names import SourceKind
from gputui.sampling.monitor import Monitor

RULES: tuple[Rule, ...] = (
    *thermal.RULES,
    *cooling.RULES,
    *power.RULES,
    *memory.RULES,
    *pcie.RULES,
    *pipeline.RULES,
    *hang.RULES,
    *sharing.RULES,
    *placement.RULES,
    *cuda.RULES,
    *health.RULES,
    *topology.RULES,
    *configuration.RULES,
    *environment.RULES,
    *node_settings.RULES,
)


def make_advisor(
    devices: Iterable[DeviceInfo], thresholds: Thresholds | None = None, remote: bool = False
) -> Advisor:
    """``remote``: the source reads exporter metrics (dcgm-exporter's pages, a Prometheus
    server): the rules it can never feed are not applicable to it."""
    return Advisor(devices, RULES, thresholds, remote=remote)


def make_monitor(
    devices: Sequence[DeviceInfo],
    config: Config,
    source: SourceInfo,
    thresholds: Thresholds | None = None,
) -> Monitor:
    """A monitor whose findings come from the full rule catalogue."""
    devices = tuple(devices)
    remote = source.kind is SourceKind.REMOTE
    return Monitor(devices, config, source, lambda: make_advisor(devices, thresholds, remote))


def judgement_of(monitor: Monitor) -> Judgement:
    """How far the monitor's verdict reaches (history sampled, rules that could not judge)."""
    return monitor.judgement


def point_in_time_findings(monitor: Monitor) -> tuple[Finding, ...]:
    """The findings of a point-in-time test: conditions that held through the whole
    sampled window count even when it was shorter than the live pane's hold."""
    return monitor.point_in_time_findings()


__all__ = [
    "RULES",
    "Advisor",
    "Judgement",
    "Rule",
    "describe",
    "judgement_of",
    "make_advisor",
    "make_monitor",
    "point_in_time_findings",
]
