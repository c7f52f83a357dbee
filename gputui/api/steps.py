"""The job's step time beside the GPUs: which steps were slow, which cause was active on
which GPU while they were, and the share of the slowdown each was there for. Pure: the
steps and the causes come in, a ``StepLine`` goes out.

A step is slow when it took more than ``SLOW_MARGIN`` over the baseline: the median of
recent steps taken while no cause was active (of recent steps alike until there are
``MIN_CALM`` of those). A cause is a GPU held down by a clock-event reason that the
advisor names (heat, the power cap, a hardware slowdown: known at every tick, before the
finding's hold has passed), or a finding the advisor shows. A cause active through most of
the steps that were not slow is how this job always runs, not why it slowed: it is left
out. A slow step with several causes counts for each, so shares may add up past 100 %.
"""

from __future__ import annotations

import statistics
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from gputui.core.names import RuleId
from gputui.core.records import frozen

#: a step this much over the baseline is slow
SLOW_MARGIN: Final = 0.10
#: steps taken with no cause active before they alone make the baseline
MIN_CALM: Final = 5
#: recent steps the baseline is the median of
BASELINE_STEPS: Final = 2048
#: a cause active in this share of the steps that were not slow is the job's norm
NORM_SHARE: Final = 0.5

#: the advisor's rules whose cause a tick's clock-event reasons show directly
CLOCK_CAUSES: Final[Mapping[str, frozenset[str]]] = {
    RuleId.THERMAL_THROTTLE.value: frozenset({"sw_thermal", "hw_thermal"}),
    RuleId.POWER_CAP.value: frozenset({"sw_power_cap"}),
    RuleId.HW_SLOWDOWN.value: frozenset({"hw_slowdown", "hw_power_brake"}),
}

#: a cause: a rule's id and the GPU (None: the host)
Key = tuple[str, "int | None"]


def clock_causes(gpu: int, reasons: Iterable[str]) -> set[Key]:
    """The causes a GPU's clock-event reasons at one tick show."""
    names = set(reasons)
    return {(rule, gpu) for rule, bits in CLOCK_CAUSES.items() if names & bits}


@frozen
class Cause:
    """One cause of the slow steps: a rule on a GPU (None: the host)."""

    rule: str
    gpu: int | None
    #: slow steps it was active in
    slow_steps: int
    #: the share of the slowdown (time over the baseline) taken while it was active, %
    share_pct: float

    @property
    def where(self) -> str:
        return "the host" if self.gpu is None else f"GPU {self.gpu}"


@frozen
class StepLine:
    """The steps since the last line, against the baseline."""

    steps: int
    mean_s: float | None
    baseline_s: float | None
    #: how much slower than the baseline the steps were, %
    slowdown_pct: float | None
    slow_steps: int
    causes: tuple[Cause, ...]

    def text(self) -> str:
        if not self.steps or self.mean_s is None or self.baseline_s is None:
            return "steps: none since the last line"
        head = (
            f"steps: {self.steps} at {self.mean_s:.3f} s each, "
            f"{self.slowdown_pct or 0.0:+.0f}% against the {self.baseline_s:.3f} s baseline"
        )
        if not self.slow_steps:
            return head + "; none slow"
        head += f"; {self.slow_steps} slow"
        if not self.causes:
            return head + (
                ": no cause gputui sees was active (look at the job itself: its input, "
                "its network, its storage, its code)"
            )
        parts = [
            f"{c.rule} on {c.where} in {c.slow_steps} of them ({c.share_pct:.0f}% of the slowdown)"
            for c in self.causes
        ]
        return head + ": " + "; ".join(parts)


class Timeline:
    """The causes active at each tick, oldest first, up to ``keep`` ticks."""

    def __init__(self, keep: int) -> None:
        self._times: deque[float] = deque(maxlen=keep)
        self._causes: deque[set[Key]] = deque(maxlen=keep)

    def add(self, time: float, causes: set[Key], since: Mapping[Key, float]) -> None:
        """A tick's causes; ``since``: each finding shown now and when its condition began
        to hold, marked on the ticks since then (a finding shows after its hold)."""
        self._times.append(time)
        self._causes.append(set(causes) | set(since))
        for key, begun in since.items():
            for k in range(len(self._times) - 2, -1, -1):
                if self._times[k] < begun:
                    break
                self._causes[k].add(key)

    def copy(self) -> tuple[list[float], list[set[Key]]]:
        return list(self._times), [set(c) for c in self._causes]


def at(times: Sequence[float], causes: Sequence[set[Key]], when: float) -> set[Key]:
    """The causes of the last tick at or before ``when`` (none before the first)."""
    k = bisect_right(times, when) - 1
    return causes[k] if k >= 0 else set()


class Baseline:
    """The step time that counts as normal: the median of recent calm steps."""

    def __init__(self) -> None:
        self._calm: deque[float] = deque(maxlen=BASELINE_STEPS)
        self._all: deque[float] = deque(maxlen=BASELINE_STEPS)

    def value(self, durations: Sequence[float]) -> float | None:
        pool = self._calm if len(self._calm) >= MIN_CALM else (self._all or durations)
        return statistics.median(pool) if pool else None

    def add(self, duration: float, calm: bool) -> None:
        self._all.append(duration)
        if calm:
            self._calm.append(duration)


def attribute(
    steps: Sequence[tuple[float, float]],
    times: Sequence[float],
    causes: Sequence[set[Key]],
    baseline: Baseline,
) -> StepLine:
    """The line for ``steps`` (start, end) given the ticks' ``times`` and ``causes``;
    ``baseline`` learns the steps after it judged them."""
    durations = [end - start for start, end in steps]
    base = baseline.value(durations)
    active = [at(times, causes, end) for _start, end in steps]
    if not steps or base is None:
        return StepLine(0, None, None, None, 0, ())
    mean = sum(durations) / len(durations)
    slow = [d > base * (1 + SLOW_MARGIN) for d in durations]
    line = StepLine(
        steps=len(steps),
        mean_s=mean,
        baseline_s=base,
        slowdown_pct=100.0 * (mean / base - 1) if base > 0 else None,
        slow_steps=sum(slow),
        causes=_causes(durations, slow, active, base),
    )
    for duration, is_slow, seen in zip(durations, slow, active, strict=True):
        baseline.add(duration, calm=not seen and not is_slow)
    return line


def _causes(
    durations: Sequence[float], slow: Sequence[bool], active: Sequence[set[Key]], base: float
) -> tuple[Cause, ...]:
    excess = sum(d - base for d, s in zip(durations, slow, strict=True) if s)
    fast = [seen for seen, s in zip(active, slow, strict=True) if not s]
    counted: dict[Key, list[float]] = {}
    for duration, is_slow, seen in zip(durations, slow, active, strict=True):
        if is_slow:
            for key in seen:
                counted.setdefault(key, []).append(duration - base)
    out = []
    for key, over in counted.items():
        if fast and sum(key in seen for seen in fast) >= NORM_SHARE * len(fast):
            continue
        share = 100.0 * sum(over) / excess if excess > 0 else 0.0
        out.append(Cause(key[0], key[1], len(over), share))
    out.sort(
        key=lambda c: (-c.share_pct, -c.slow_steps, c.rule, c.gpu if c.gpu is not None else -1)
    )
    return tuple(out)
