"""The advisor: pure rules over the history (no Textual, no NVML, no clock of its own)."""

from __future__ import annotations

from collections.abc import Iterable

from gputui.advisor import cuda, health, memory, pcie, pipeline, power, thermal
from gputui.advisor.engine import Advisor
from gputui.advisor.finding import Finding, Severity
from gputui.advisor.rule import Rule
from gputui.config import Thresholds
from gputui.model import DeviceInfo

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


__all__ = ["RULES", "Advisor", "Finding", "Rule", "Severity", "make_advisor"]
