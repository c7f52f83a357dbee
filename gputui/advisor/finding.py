"""A rule's verdict on one judgement, before the engine's hysteresis makes it a Finding."""

from __future__ import annotations

from gputui.core.names import RuleId, Severity
from gputui.core.records import frozen


@frozen
class Candidate:
    """The condition holds now, with this evidence."""

    rule: RuleId
    severity: Severity
    gpu: int | None  # None: the host
    title: str
    evidence: tuple[str, ...]
    remedies: tuple[str, ...]
    #: seconds the condition must hold before it shows; None: the configured default
    hold_s: float | None = None
    #: seconds it must be gone before a shown finding ends, where longer than the
    #: configured default (a condition that swings around its line: calm, not flickering)
    end_s: float | None = None
    #: when the condition began, where the rule read it from the history itself (a hang
    #: counted from its first tick of spinning): the finding's ``since``, and its hold
    #: counted from there; None: from the first judgement that saw it
    since: float | None = None

    @property
    def key(self) -> tuple[RuleId, int | None]:
        return (self.rule, self.gpu)
