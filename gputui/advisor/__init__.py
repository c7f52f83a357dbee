"""The advisor: pure rules over the history (no Textual, no NVML, no clock of its own)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gputui.advisor import cuda, health, memory, pcie, pipeline, power, thermal
from gputui.advisor.engine import Advisor
from gputui.advisor.rule import Rule
from gputui.config import Config, Thresholds
from gputui.model import DeviceInfo, SourceInfo
from gputui.sampling.monitor import Monitor

RULES: tuple[Rule, ...] = (
    *thermal.RULES,
    *power.RULES,
    *memory.RULES,
    *pcie.RULES,
    *pipeline.RULES,
    *cuda.RULES,
    *health.RULES,
)


def make_advisor(devices: Iterable[DeviceInfo], thresholds: Thresholds | None = None) -> Advisor:
    return Advisor(devices, RULES, thresholds)


def make_monitor(
    devices: Sequence[DeviceInfo],
    config: Config,
    source: SourceInfo,
    thresholds: Thresholds | None = None,
) -> Monitor:
    """A monitor whose findings come from the full rule catalogue."""
    devices = tuple(devices)
    return Monitor(devices, config, source, lambda: make_advisor(devices, thresholds))


__all__ = ["RULES", "Advisor", "Rule", "make_advisor", "make_monitor"]
