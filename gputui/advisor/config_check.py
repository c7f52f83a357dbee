"""The configuration checks once: every rule that judges settings rather than history, over
one frame, without the live pane's hysteresis (``gputui doctor --config``: a job script
checks its node before training starts); and each check's state for a report."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from gputui.advisor import RULES
from gputui.advisor.context import Context
from gputui.advisor.coverage import judge_coverage
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.core.config import Thresholds
from gputui.core.judgement import Judgement, Undecided, gpu_list
from gputui.core.model import DeviceInfo, Finding, Frame, finding_order
from gputui.core.names import PROCESS_ONLY, SETTINGS_ONLY, NoteKind, RuleId
from gputui.core.records import frozen
from gputui.sampling.history import History

#: the cause the catalogue files every configuration rule under
CAUSE = "3 configuration"
#: a check's state when nothing was found and nothing kept it from judging
OK = "ok"
#: a check's state where the source reads none of what it looks at
NOT_READ = "not read"
#: the checks of the GPUs' modes, by the device facts they read (one read is enough)
DEVICE_FACTS: dict[RuleId, tuple[str, ...]] = {
    RuleId.COMPUTE_MODE: ("compute_mode",),
    RuleId.MODE_PENDING: ("mig_pending", "ecc_pending"),
}
_STATES = {
    Undecided.UNREADABLE: "not judged",
    Undecided.NOT_OFFERED: "not applicable",
    Undecided.PENDING: "watching",
}


#: what each configuration check looks at, in a few words, for the report's list of checks
CHECKED = {
    RuleId.POWER_LIMIT_LOWERED: "power limit against the board's default",
    RuleId.CUDA_LAUNCH_BLOCKING: "CUDA_LAUNCH_BLOCKING in the job's environment",
    RuleId.CUDA_DRIVER_MISMATCH: "the CUDA runtime against the driver",
    RuleId.PERSISTENCE_OFF: "persistence mode",
    RuleId.CPU_THROTTLED: "CPU quota of the job's cgroup and its throttling",
    RuleId.CGROUP_MEMORY: "memory limit of the job's cgroup, its OOM kills",
    RuleId.CPUSET_SMALL: "the job's cpuset against its workers",
    RuleId.SHM_SMALL: "/dev/shm in the job's mount namespace",
    RuleId.OPEN_FILES: "the job's open-files limit",
    RuleId.JOB_SWAPPED: "the job's memory in swap",
    RuleId.NO_CUDA_CACHING: "PYTORCH_NO_CUDA_MEMORY_CACHING",
    RuleId.DISTRIBUTED_DEBUG: "TORCH_DISTRIBUTED_DEBUG",
    RuleId.NCCL_P2P_OFF: "NCCL_P2P_DISABLE against the GPUs' direct paths",
    RuleId.NCCL_IB_OFF: "NCCL_IB_DISABLE against InfiniBand/RoCE ports",
    RuleId.OMP_OVERSUBSCRIBED: "OMP_NUM_THREADS against the job's threads and CPUs",
    RuleId.VISIBLE_DEVICES_ORDER: "CUDA_VISIBLE_DEVICES order against the CPU binding",
    RuleId.P2P_UNAVAILABLE: "peer-to-peer between the GPUs of a job",
    RuleId.COMPUTE_MODE: "compute mode, processes waiting for a GPU",
    RuleId.MODE_PENDING: "ECC and MIG modes pending a reset",
    RuleId.CLOCKS_LOCKED: "graphics clocks locked below the maximum",
    RuleId.CPU_GOVERNOR: "CPU frequency governor",
    RuleId.THP_DEFRAG: "transparent huge pages' defrag",
    RuleId.NUMA_BALANCING: "automatic NUMA balancing",
}


def configuration_rules(rules: Sequence[Rule] = RULES) -> tuple[Rule, ...]:
    """The configuration rules that judge at once (settings, not history)."""
    return tuple(r for r in rules if r.cause == CAUSE and not r.needs_history)


@frozen
class CheckState:
    """One configuration check in a report: ok, a finding's severity, or why it reached no
    verdict; where ("host", "GPUs 0-3"), and the finding's title or what it lacks."""

    rule: RuleId
    state: str
    where: str = ""
    text: str = ""

    @property
    def checked(self) -> str:
        """What the check looks at, in a few words ("" for a rule without a label)."""
        return CHECKED.get(self.rule, "")

    def to_dict(self) -> dict[str, str]:
        return {
            "rule": self.rule.value,
            "checked": self.checked,
            "state": self.state,
            "where": self.where,
            "text": self.text,
        }


@frozen
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
    checks = check_states(rules, findings, judgement, unread_checks(frame, devices))
    return ConfigVerdict(findings, judgement, checks)


def settings_read(frame: Frame | None) -> bool:
    """Whether the source read the node's and the jobs' settings (a local one does)."""
    return frame is not None and (frame.settings is not None or bool(frame.jobs))


def unread_checks(frame: Frame | None, devices: Iterable[DeviceInfo]) -> frozenset[RuleId]:
    """The checks whose inputs the source did not read: found nothing because they were
    given nothing. The settings (``settings_read``); the processes' environments, where the
    source says it reads no processes and no job's own settings; a GPU mode no GPU's facts
    hold (a remote exporter's page carries none)."""
    if frame is None:
        return SETTINGS_ONLY | PROCESS_ONLY | frozenset(DEVICE_FACTS)
    unread: set[RuleId] = set()
    read = settings_read(frame)
    if not read:
        unread |= SETTINGS_ONLY
        if any(note.kind is NoteKind.RULES_BLIND for note in frame.notes):
            unread |= PROCESS_ONLY
    devices = tuple(devices)
    for rule, facts in DEVICE_FACTS.items():
        if devices and all(
            getattr(device, fact) is None and fact not in device.unsupported
            for device in devices
            for fact in facts
        ):
            unread.add(rule)
    return frozenset(unread)


def check_states(
    rules: Iterable[Rule],
    findings: Sequence[Finding],
    judgement: Judgement,
    unread: Collection[RuleId] = frozenset(),
) -> tuple[CheckState, ...]:
    """Each rule's state: its worst finding, else what kept it from judging, else ok (or
    "not read", for a check whose inputs the source did not read: ``unread_checks``)."""
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
        if rule.id in unread:
            out.append(CheckState(rule.id, NOT_READ))  # the report says why, once
            continue
        out.append(CheckState(rule.id, OK))
    return tuple(out)
