"""The configuration checks once: every rule that judges settings rather than history, over
one frame, without the live pane's hysteresis (``gputui doctor --config``: a job script
checks its node before training starts); and each check's state for a report."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gputui.advisor import RULES
from gputui.advisor.context import Context
from gputui.advisor.coverage import judge_coverage
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.core.config import Thresholds
from gputui.core.judgement import Judgement, Undecided, gpu_list
from gputui.core.model import DeviceInfo, Finding, Frame, finding_order
from gputui.core.names import RuleId
from gputui.sampling.history import History

#: the cause the catalogue files every configuration rule under
CAUSE = "3 configuration"
#: a check's state when nothing was found and nothing kept it from judging
OK = "ok"
_STATES = {
    Undecided.UNREADABLE: "not judged",
    Undecided.NOT_OFFERED: "not applicable",
    Undecided.PENDING: "watching",
}


def configuration_rules(rules: Sequence[Rule] = RULES) -> tuple[Rule, ...]:
    """The configuration rules that judge at once (settings, not history)."""
    return tuple(r for r in rules if r.cause == CAUSE and not r.needs_history)


@dataclass(frozen=True, slots=True)
class CheckState:
    """One configuration check in a report: ok, a finding's severity, or why it reached no
    verdict; where ("host", "GPUs 0-3"), and the finding's title or what it lacks."""

    rule: RuleId
    state: str
    where: str = ""
    text: str = ""

    def to_dict(self) -> dict[str, str]:
        return {
            "rule": self.rule.value,
            "state": self.state,
            "where": self.where,
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class ConfigVerdict:
    findings: tuple[Finding, ...]
    judgement: Judgement
    checks: tuple[CheckState, ...]


def check_once(
    devices: Sequence[DeviceInfo], frame: Frame, thresholds: Thresholds | None = None
) -> ConfigVerdict:
    """Every configuration check once over ``frame``: its findings as they stand (no hold),
    what could not be judged, and each check's state."""
    t = thresholds or Thresholds()
    rules = configuration_rules()
    history = History(2)
    history.add(frame)
    ctx = Context(history=history, devices={d.index: d for d in devices}, frame=frame, t=t)
    seen: dict[tuple[RuleId, int | None], Candidate] = {}
    for rule in rules:
        try:
            for candidate in rule.check(ctx):
                seen.setdefault(candidate.key, candidate)
        except Exception as exc:  # a broken check is reported, never fatal
            ctx.cannot_judge(rule.id, None, f"the check failed ({type(exc).__name__}: {exc})")
    findings = tuple(
        sorted(
            (
                Finding(
                    c.rule,
                    c.severity,
                    c.gpu,
                    c.title,
                    c.evidence,
                    c.remedies,
                    frame.time,
                    frame.time,
                )
                for c in seen.values()
            ),
            key=finding_order,
        )
    )
    judgement = judge_coverage(rules, ctx.devices, frame, history.times(), t, ctx.undecided.items())
    return ConfigVerdict(findings, judgement, check_states(rules, findings, judgement))


def check_states(
    rules: Iterable[Rule], findings: Sequence[Finding], judgement: Judgement
) -> tuple[CheckState, ...]:
    """Each rule's state: its worst finding, else what kept it from judging, else ok."""
    out = []
    for rule in rules:
        found = [f for f in findings if f.rule is rule.id]
        if found:
            worst = max(found, key=lambda f: f.severity.rank)
            gpus = [f.gpu for f in found if f.gpu is not None]
            where = ", ".join(
                part for part in ("host" if any(f.gpu is None for f in found) else "",
                                  gpu_list(gpus) if gpus else "") if part
            )  # fmt: skip
            out.append(CheckState(rule.id, str(worst.severity), where, worst.title))
            continue
        undecided = [u for u in judgement.undecided if u.rule is rule.id]
        if undecided:
            first = min(undecided, key=lambda u: list(_STATES).index(u.kind))
            gpus = sorted({u.gpu for u in undecided if u.gpu is not None and u.kind is first.kind})
            where = gpu_list(gpus) if gpus else "host"
            text = first.missing.removeprefix(f"{rule.id}: ")
            out.append(CheckState(rule.id, _STATES[first.kind], where, text))
            continue
        out.append(CheckState(rule.id, OK))
    return tuple(out)
