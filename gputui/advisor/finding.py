"""What the advisor says: a finding with its evidence (numbers) and remedies (text)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["info", "warning", "critical"]
SEVERITY_RANK: dict[str, int] = {"info": 0, "warning": 1, "critical": 2}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A rule's verdict on one tick: the condition holds now, with this evidence."""

    rule: str
    severity: Severity
    gpu: int | None  # None: the host
    title: str
    evidence: tuple[str, ...]
    remedies: tuple[str, ...]
    #: seconds the condition must hold before it shows; None: the configured default
    hold_s: float | None = None

    @property
    def key(self) -> tuple[str, int | None]:
        return (self.rule, self.gpu)


@dataclass(frozen=True, slots=True)
class Finding:
    """A finding shown to the user: a candidate that held long enough, and since when."""

    rule: str
    severity: Severity
    gpu: int | None
    title: str
    evidence: tuple[str, ...]
    remedies: tuple[str, ...]
    since: float  # when the condition started to hold (frame time)
    updated: float  # the last frame time the condition held

    @property
    def key(self) -> tuple[str, int | None]:
        return (self.rule, self.gpu)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "gpu": self.gpu,
            "title": self.title,
            "evidence": list(self.evidence),
            "remedies": list(self.remedies),
            "since": self.since,
            "updated": self.updated,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        return cls(
            rule=data["rule"],
            severity=data["severity"],
            gpu=data["gpu"],
            title=data["title"],
            evidence=tuple(data["evidence"]),
            remedies=tuple(data["remedies"]),
            since=float(data["since"]),
            updated=float(data["updated"]),
        )


def sort_key(finding: Finding) -> tuple[int, int, str]:
    """Most severe first, then by GPU (host last), then by rule."""
    gpu = finding.gpu if finding.gpu is not None else 1 << 20
    return (-SEVERITY_RANK[finding.severity], gpu, finding.rule)
