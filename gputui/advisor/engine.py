"""The advisor: rules over the history, made calm by hysteresis.

A rule's candidate becomes a finding only after it held for ``start_after_s`` (frame time),
and a finding ends only after its candidate has been absent for ``end_after_s``. Time comes
from the frames, so the same history gives the same findings on any machine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.config import Thresholds
from gputui.model import DeviceInfo, Finding, finding_order
from gputui.names import RuleId
from gputui.sampling.history import History

# A finding of the key rule on a GPU hides findings of these rules on the same GPU:
# they say the same thing less precisely.
SUPERSEDES: Mapping[RuleId, tuple[RuleId, ...]] = {
    RuleId.THERMAL_THROTTLE: (RuleId.THERMAL_HOT, RuleId.HW_SLOWDOWN),
}


@dataclass(slots=True)
class _State:
    first: float
    last: float
    candidate: Candidate
    active: bool = False


class Advisor:
    def __init__(
        self,
        devices: Iterable[DeviceInfo],
        rules: Sequence[Rule],
        thresholds: Thresholds | None = None,
    ) -> None:
        self._devices = {d.index: d for d in devices}
        self._rules = tuple(rules)
        self._t = thresholds or Thresholds()
        self._states: dict[tuple[RuleId, int | None], _State] = {}
        #: rule id -> the last error it raised (a broken rule is skipped, never fatal)
        self.rule_errors: dict[RuleId, str] = {}
        self.findings: tuple[Finding, ...] = ()
        self._judged_at: float | None = None

    @property
    def thresholds(self) -> Thresholds:
        return self._t

    def update(self, history: History) -> tuple[Finding, ...]:
        frame = history.latest
        if frame is None:
            return self.findings
        last = self._judged_at
        # Within a tolerance of a tick's jitter: "every 2 s" must not become every 3 ticks.
        # A lost GPU is judged at once: that one cannot wait.
        early = last is not None and last <= frame.time < last + self._t.judge_every_s - 0.25
        if early and not any(s.lost for s in frame.gpus):
            return self.findings
        self._judged_at = frame.time
        ctx = Context(history=history, devices=self._devices, frame=frame, t=self._t)
        now = frame.time
        seen: dict[tuple[RuleId, int | None], Candidate] = {}
        for rule in self._rules:
            try:
                for candidate in rule.check(ctx):
                    seen.setdefault(candidate.key, candidate)
            except Exception as exc:  # a bug in one rule must not silence the others
                self.rule_errors[rule.id] = f"{type(exc).__name__}: {exc}"
        for key, candidate in seen.items():
            state = self._states.get(key)
            if state is None:
                state = self._states[key] = _State(first=now, last=now, candidate=candidate)
            state.last = now
            state.candidate = candidate
            hold = self._t.start_after_s if candidate.hold_s is None else candidate.hold_s
            if not state.active and now - state.first >= hold:
                state.active = True
        for key, state in list(self._states.items()):
            if key in seen:
                continue
            if not state.active or now - state.last >= self._t.end_after_s:
                del self._states[key]
        active = [s for s in self._states.values() if s.active]
        hidden = {
            (rule, s.candidate.gpu)
            for s in active
            for rule in SUPERSEDES.get(s.candidate.rule, ())
            if s.candidate.key in seen
        }
        self.findings = tuple(
            sorted(
                (
                    Finding(
                        rule=s.candidate.rule,
                        severity=s.candidate.severity,
                        gpu=s.candidate.gpu,
                        title=s.candidate.title,
                        evidence=s.candidate.evidence,
                        remedies=s.candidate.remedies,
                        since=s.first,
                        updated=s.last,
                    )
                    for s in active
                    if s.candidate.key not in hidden
                ),
                key=finding_order,
            )
        )
        return self.findings
