"""How far a verdict reaches: what the advisor could judge, and what it could not and why.

"No findings" is a verdict only over what was seen. A rule without a reading is one of
three things, never a clean bill of health by silence: **not judged** (the reading should
be there and is not: ``doctor`` exits 4), **not applicable** (the board, driver or machine
does not offer it at all), **watching** (the verdict needs a longer watch than was
sampled: ``doctor`` exits 4 too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from gputui.core.model import DeviceInfo, GpuSample
from gputui.core.model_checks import clean_text_fields
from gputui.core.names import RuleId, Severity
from gputui.core.records import frozen
from gputui.core.units import fmt_duration


class Undecided(str, Enum):
    """A rule without a verdict: a reading that should be there is missing (``doctor``
    exits 4), the board does not offer it (the rule does not apply), or the verdict needs a
    longer watch than was sampled (an abandoned allocation after minutes: exit 4 too)."""

    UNREADABLE = "not-judged"
    NOT_OFFERED = "not-applicable"
    PENDING = "watching"


def not_offered(sample: GpuSample, device: DeviceInfo) -> frozenset[str]:
    """The readings the board, driver or machine does not offer at all."""
    return frozenset(sample.unsupported) | frozenset(device.unsupported)


#: the JSON key each kind is listed under
_KEYS = {
    Undecided.UNREADABLE: "not_judged",
    Undecided.NOT_OFFERED: "not_applicable",
    Undecided.PENDING: "watching",
}


@frozen
class NotJudged:
    rule: RuleId
    gpu: int | None  # None: the host
    missing: str
    kind: Undecided = Undecided.UNREADABLE

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule.value, "gpu": self.gpu, "missing": self.missing}


@frozen
class Judgement:
    """How far the advisor's verdict reaches at one moment."""

    seen_s: float  # history actually sampled
    needed_s: float  # the history the rules need before "nothing found" means anything
    #: every rule that reached no verdict somewhere, whatever the reason (``kind``)
    undecided: tuple[NotJudged, ...] = ()
    readings: int = 0
    #: the time between readings: a reading covers the interval before it (utilisation,
    #: power and the reasons' share are the driver's view of the last period), so 30
    #: readings a second apart saw 30 s of the GPU, over 29 s between the first and last
    step_s: float = 0.0

    @property
    def covered_s(self) -> float:
        """The time the readings saw: their span and the interval the first one covers."""
        return self.seen_s + self.step_s if self.readings > 1 else 0.0

    @property
    def not_judged(self) -> tuple[NotJudged, ...]:
        """The rules that could not judge a reading that should be there."""
        return self.of(Undecided.UNREADABLE)

    def of(self, kind: Undecided) -> tuple[NotJudged, ...]:
        return tuple(item for item in self.undecided if item.kind is kind)

    @property
    def gathering(self) -> bool:
        # a quarter second of slack for the sampler's jitter
        return self.readings == 0 or self.covered_s + 0.25 < self.needed_s

    @property
    def watching(self) -> tuple[NotJudged, ...]:
        """The verdicts that need a longer watch than was sampled: a condition seen that
        must hold longer before it is called (a leak's growth, a hang)."""
        return self.of(Undecided.PENDING)

    @property
    def complete(self) -> bool:
        """Everything that can be judged here was: enough history, no rule lacked a
        reading that should be there, and no verdict waits for a longer watch (rules that
        do not apply to this board do not count against it)."""
        return not self.gathering and not self.not_judged and not self.watching

    def gathering_text(self) -> str:
        """'still judging: 18 s to go, every rule needs 30 s of readings'."""
        left = max(0.0, self.needed_s - self.covered_s)
        return (
            f"still judging: {fmt_duration(left)} to go, every rule needs "
            f"{fmt_duration(self.needed_s)} of readings"
        )

    def missing_on(self, gpu: int) -> str | None:
        """'not judged: utilisation (MIG mode)' for a GPU that some rule could not judge."""
        missing: list[str] = []
        for item in self.not_judged:
            if item.gpu == gpu and item.missing not in missing:
                missing.append(item.missing)
        return "not judged: " + "; ".join(missing) if missing else None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "complete": self.complete,
            "gathering": self.gathering,
            "sampled_s": round(self.seen_s, 3),
            "step_s": round(self.step_s, 3),
            "needed_s": self.needed_s,
        }
        for kind, key in _KEYS.items():
            out[key] = [item.to_dict() for item in self.of(kind)]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Judgement:
        return cls(
            seen_s=float(data.get("sampled_s", 0.0)),
            needed_s=float(data.get("needed_s", 0.0)),
            undecided=tuple(
                NotJudged(RuleId(i["rule"]), i.get("gpu"), str(i.get("missing", "")), kind)
                for kind, key in _KEYS.items()
                for i in data.get(key, ())
            ),
            readings=2 if data.get("sampled_s") is not None else 0,
            step_s=float(data.get("step_s", 0.0)),
        )


def _places(items: Sequence[NotJudged]) -> str:
    gpus = sorted({i.gpu for i in items if i.gpu is not None})
    where = ["host"] if any(i.gpu is None for i in items) else []
    if gpus:
        where.append(gpu_list(gpus))
    return ", ".join(where)


def gpu_list(gpus: Sequence[int]) -> str:
    """[0, 1, 2, 3, 6] -> 'GPUs 0-3, 6'; [2] -> 'GPU 2'."""
    ordered = sorted(set(gpus))
    runs: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        runs.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ("GPU " if len(ordered) == 1 else "GPUs ") + ", ".join(runs)


def grouped(items: Sequence[NotJudged]) -> list[tuple[str, str]]:
    """(where, what) with one line for what several GPUs lack alike: ('GPUs 0-7',
    'numa-mismatch: ...'), in the order first seen."""
    by_text: dict[str, list[NotJudged]] = {}
    for item in items:
        by_text.setdefault(item.missing, []).append(item)
    return [(_places(same), text) for text, same in by_text.items()]


@frozen
class EngineAlert:
    """An alert the engine fires (``gputui rules`` loaded in the Prometheus server, read
    from its ``ALERTS`` series): a catalogue rule's, on one GPU (our index) or, ``gpu``
    None, a node as a whole, firing since ``since``."""

    rule: RuleId
    severity: Severity
    gpu: int | None
    node: str
    name: str  # the alerting rule's name
    since: float | None = None
    #: its annotations as the engine rendered them (its evidence with the figures, its
    #: remedies), where the server lists its active alerts
    description: str = ""
    remedies: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        clean_text_fields(self)


@frozen
class EngineVerdict:
    """What the engine judged for every GPU at once: the catalogue rules its loaded rules
    evaluate, the alerts they fire, and the scrape interval they were written for."""

    rules: frozenset[RuleId]
    alerts: tuple[EngineAlert, ...]
    scrape_s: float
