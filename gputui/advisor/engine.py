"""The advisor: rules over the history, made calm by hysteresis.

A rule's candidate becomes a finding only after it held for ``start_after_s`` (frame time),
and a finding ends only after its candidate has been absent for ``end_after_s``. Time comes
from the frames, so the same history gives the same findings on any machine.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from gputui.advisor.cadence import at_cadence, cadence_of
from gputui.advisor.context import Context, DriverSamples, ProcessCpuTick
from gputui.advisor.coverage import judge_coverage, never_fed, too_few_readings
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.core.config import Thresholds
from gputui.core.judgement import EngineVerdict, Judgement, Undecided
from gputui.core.model import DeviceInfo, Finding, ProcessSample, finding_order
from gputui.core.names import RULES_NEEDING_HOST, RuleId, Severity
from gputui.core.records import record
from gputui.core.units import fmt_duration
from gputui.sampling.history import History

# A finding of the key rule on a GPU hides findings of these rules on the same GPU:
# they say the same thing less precisely.
SUPERSEDES: Mapping[RuleId, tuple[RuleId, ...]] = {
    RuleId.THERMAL_THROTTLE: (RuleId.THERMAL_HOT, RuleId.HW_SLOWDOWN),
    # a hung job's ranks are neither stragglers nor idle holders: they wait for one rank
    RuleId.COLLECTIVE_HANG: (
        RuleId.STRAGGLER,
        RuleId.IDLE_ALLOCATED,
        RuleId.UNDER_USED,
        RuleId.BUSY_NO_WORK,
    ),
    # a fan that does not cool is why the board runs hot
    RuleId.FAN_FAULT: (RuleId.THERMAL_HOT,),
    # a clock held with no reason named, where the lock or the setting is seen
    RuleId.CLOCKS_LOCKED: (RuleId.CLOCKS_HELD,),
    RuleId.CLOCKS_LIMITED: (RuleId.CLOCKS_HELD,),
}
#: the source's cadence is measured again after this much frame time
CADENCE_EVERY_S = 30.0
#: findings that say nothing of how fast a GPU works now: never a straggler's cause, and
#: no explanation of an under-used GPU (a lowered limit slows only a GPU that reaches it:
#: power-cap says when; a hot board before it throttles; the board's health and settings)
NOT_ITS_PACE: frozenset[RuleId] = frozenset(
    {
        RuleId.POWER_LIMIT_LOWERED,
        RuleId.THERMAL_HOT,
        RuleId.PERSISTENCE_OFF,
        RuleId.MEMORY_HEALTH,
        RuleId.CUDA_DRIVER_MISMATCH,
        RuleId.MODE_PENDING,
        RuleId.NOT_REPORTING,
        RuleId.IDLE_ALLOCATED,
        RuleId.FAN_FAULT,
    }
)


@record
class _State:
    first: float
    last: float
    #: what the finding says (once shown, held calm: ``_calm``)
    candidate: Candidate
    active: bool = False
    #: once shown: the condition in other words or milder, and since when it has been
    other: Candidate | None = None
    other_since: float = 0.0


def _calm(state: _State, new: Candidate, now: float, t: Thresholds) -> Candidate:
    """What a shown finding says now. A condition that grows more severe says so at once;
    one that steps down or changes its words (a leak at the ceiling whose growth comes and
    goes: "growing toward full", "at its ceiling", back every few seconds) says so once it
    has held ``end_after_s``, as a finding ends: a pane that rewords itself at every
    judgement is flicker, not news. Until then the finding keeps its words, refreshed each
    time the condition says them again."""
    shown = state.candidate
    if (
        not state.active
        or (new.severity, new.title) == (shown.severity, shown.title)
        or new.severity.rank > shown.severity.rank
    ):
        state.other = None
        return new
    other = state.other
    if other is None or (other.severity, other.title) != (new.severity, new.title):
        state.other_since = now
    state.other = new
    if now - state.other_since >= t.end_after_s:
        state.other = None
        return new
    return shown


class Advisor:
    def __init__(
        self,
        devices: Iterable[DeviceInfo],
        rules: Sequence[Rule],
        thresholds: Thresholds | None = None,
        *,
        remote: bool = False,
    ) -> None:
        """``remote``: the source reads exporter metrics (``never_fed``)."""
        self._devices = {d.index: d for d in devices}
        self._rules = tuple(rules)
        self._t = thresholds or Thresholds()
        #: the rules this source can never feed (processes through an exporter, ...), and
        #: the rest, which judge
        self._never = never_fed(self._rules) if remote else {}
        self._fed = tuple(r for r in self._rules if r.id not in self._never)
        self.engine: EngineVerdict | None = None
        self._states: dict[tuple[RuleId, int | None], _State] = {}
        #: rule id -> the last error it raised (a broken rule is skipped, never fatal)
        self.rule_errors: dict[RuleId, str] = {}
        self.findings: tuple[Finding, ...] = ()
        self._judged_at: float | None = None
        #: how far the verdict reaches: history sampled, rules that could not judge
        self.judgement = Judgement(seen_s=0.0, needed_s=self._needed_s())
        self._first_time: float | None = None
        self._driver_samples: dict[int, deque[DriverSamples]] = {}
        self._process_cpu: dict[int, deque[ProcessCpuTick]] = {}
        self._kept_at: float | None = None  # the frame whose samples were kept last
        self._ready_at: float | None = None  # the first judgement with enough readings
        #: the source's cadence (``advisor.cadence``) and the frame time it was measured
        self.cadence_s = 0.0
        self._cadence_at: float | None = None

    def _needed_s(self) -> float:
        return max((r.history_needed_s(self._t) for r in self._fed), default=0.0)

    @property
    def thresholds(self) -> Thresholds:
        return self._t

    @property
    def judged_at(self) -> float | None:
        """The frame time of the last judgement."""
        return self._judged_at

    def update(self, history: History, force: bool = False) -> tuple[Finding, ...]:
        """Judge the history (every ``judge_every_s`` of frame time; ``force``: now)."""
        frame = history.latest
        if frame is None:
            return self.findings
        if self._kept_at is None or frame.time > self._kept_at:  # each frame once
            self.keep(frame.time, [(s.index, s.util_samples) for s in frame.gpus], frame.processes)
        # A lost GPU or a new Xid is judged at once: news that cannot wait.
        if not (force or self.due(frame.time) or any(s.lost or s.xid_events for s in frame.gpus)):
            return self.findings
        self._judged_at = now = frame.time
        t = self._at_cadence(history, now)
        ctx = Context(
            history=history,
            devices=self._devices,
            frame=frame,
            t=t,
            driver_samples=self._driver_samples,
            process_cpu=self._process_cpu,
            cadence_s=self.cadence_s,
        )
        if self._first_time is None or now < self._first_time:
            self._first_time = now
        if self._ready_at is None and len(history) >= self._t.min_points:
            self._ready_at = now
        seen = self._candidates(ctx)
        self._unread_processes(ctx, frame.processes_unread)
        self._hold(seen, now, t)
        self.judgement = self._coverage(ctx, seen, history.times())
        hidden = _hidden(seen, [s for s in self._states.values() if s.active])
        self.findings = tuple(
            sorted(
                (
                    _finding(s)
                    for s in self._states.values()
                    if s.active and s.candidate.key not in hidden
                ),
                key=finding_order,
            )
        )
        return self.findings

    def due(self, now: float) -> bool:
        """Whether a frame at ``now`` is judged (``update`` without force, no GPU lost and
        no new Xid in it): ``judge_every_s`` after the last judgement, within a tolerance
        of a tick's jitter ("every 4 s" must not become every 5 ticks)."""
        last = self._judged_at
        return last is None or not last <= now < last + self._t.judge_every_s - 0.25

    def keep(
        self,
        now: float,
        utilisation: Iterable[tuple[int, tuple[float, ...]]],
        processes: Sequence[ProcessSample],
    ) -> None:
        """What the advisor keeps of every frame, judged or not (``update`` does it once a
        frame): each GPU's (index) driver utilisation samples and each process's CPU."""
        self._kept_at = now
        self._keep_driver_samples(now, utilisation)
        self._keep_process_cpu(now, processes)

    def set_engine(self, verdict: EngineVerdict | None) -> None:
        """The engine's verdict (``from_engine``): the rules it evaluates are its word, the
        rest judged here; None: every rule judged here."""
        self.engine = verdict

    def _here(self) -> tuple[Rule, ...]:
        """The rules judged here: those the source feeds, less the engine's and the info
        lines it leaves to gputui (a point-in-time read with its verdict reads no history
        for them: ``from_engine.left_to_gputui``)."""
        if self.engine is None:
            return self._fed
        from gputui.advisor.from_engine import left_to_gputui  # only a cluster's doctor

        left = left_to_gputui(self.engine)
        return tuple(r for r in self._fed if r.id not in self.engine.rules and r.id not in left)

    def _coverage(
        self,
        ctx: Context,
        seen: Mapping[tuple[RuleId, int | None], Candidate],
        times: Sequence[float],
    ) -> Judgement:
        """How far the verdict reaches. With the engine's verdict, its rules judged every
        GPU with their own windows; the info lines it leaves to gputui are context where
        the history was not read."""
        here, never, verdict = self._here(), dict(self._never), self.engine
        if verdict is not None:
            from gputui.advisor.from_engine import left_to_gputui  # only a cluster's doctor

            never.update(left_to_gputui(verdict))
        judgement = judge_coverage(
            self._fed,
            self._devices,
            ctx.frame,
            times,
            ctx.t,
            [*ctx.undecided.items(), *self._held_back(seen, ctx.frame.time, ctx.t)],
            too_few_readings(here, ctx, seen),
            never,
        )
        if verdict is None:
            return judgement
        needed = max((r.history_needed_s(ctx.t) for r in here), default=0.0)
        return dataclasses.replace(judgement, needed_s=needed)

    def _candidates(self, ctx: Context) -> dict[tuple[RuleId, int | None], Candidate]:
        """What every rule says now, one candidate per (rule, GPU): the engine's alerts
        for the rules it evaluates, where its verdict is read."""
        seen: dict[tuple[RuleId, int | None], Candidate] = {}
        if self.engine is not None:
            from gputui.advisor.from_engine import engine_candidates  # only a cluster's doctor

            ctx.asking[0] = None
            said, errors = engine_candidates(ctx, self.engine, {r.id: r for r in self._fed})
            seen.update(said)
            self.rule_errors.update(errors)
        for rule in self._here():
            ctx.asking[0] = rule.id
            try:
                for candidate in rule.check(ctx):
                    seen.setdefault(candidate.key, candidate)
            except Exception as exc:  # a bug in one rule must not silence the others
                self.rule_errors[rule.id] = f"{type(exc).__name__}: {exc}"
        ctx.asking[0] = None  # what is asked after the rules is no rule's window
        _name_straggler_causes(seen)
        return seen

    def _unread_processes(self, ctx: Context, gpus: Sequence[int]) -> None:
        """GPUs whose process list the driver refused: no process known there is no
        verdict of "none", so the rules that read processes did not judge them."""
        if not gpus:
            return
        reading = [r.id for r in self._fed if r.id in RULES_NEEDING_HOST]
        for gpu in gpus:
            for rule in reading:
                ctx.cannot_judge(rule, gpu, "the driver did not give this GPU's process list")

    def _at_cadence(self, history: History, now: float) -> Thresholds:
        """The thresholds with their windows at the source's own pace, the cadence measured
        anew every ``CADENCE_EVERY_S`` of frame time (and until it is known)."""
        due = self._cadence_at is None or now - self._cadence_at >= CADENCE_EVERY_S
        if due or not self.cadence_s:
            self.cadence_s = cadence_of(history, self._devices)
            self._cadence_at = now
        return at_cadence(self._t, self.cadence_s)

    def add_devices(self, devices: Iterable[DeviceInfo]) -> None:
        """GPUs that joined after the start (a node that came up): judged from now on; a
        known GPU's newer facts replace its old ones."""
        for device in devices:
            self._devices[device.index] = device

    def _hold(
        self, seen: dict[tuple[RuleId, int | None], Candidate], now: float, t: Thresholds
    ) -> None:
        """The hysteresis: a condition shows once it held ``start_after_s`` (or its own
        hold), and goes once it has been gone ``end_after_s`` (two readings at least)."""
        for key, candidate in seen.items():
            state = self._states.get(key)
            if state is None:
                first = now if candidate.since is None else min(now, candidate.since)
                state = self._states[key] = _State(first=first, last=now, candidate=candidate)
            state.last = now
            state.candidate = _calm(state, candidate, now, t)
            hold = t.start_after_s if candidate.hold_s is None else candidate.hold_s
            if not state.active and now - state.first >= hold:
                state.active = True
        for key, state in list(self._states.items()):
            if key in seen:
                continue
            end = max(t.end_after_s, state.candidate.end_s or 0.0)
            if not state.active or now - state.last >= end:
                del self._states[key]

    def _held_back(
        self, seen: Mapping[tuple[RuleId, int | None], Candidate], now: float, t: Thresholds
    ) -> list[tuple[tuple[RuleId, int | None], tuple[str, Undecided]]]:
        """Conditions seen now that must hold longer than the usual start delay before
        they are called (a rule's own window: memory growth, a straggler) and have not yet:
        watching, not "nothing found"."""
        out = []
        for key, state in self._states.items():
            c = state.candidate
            if state.active or key not in seen or c.hold_s is None or c.hold_s <= t.start_after_s:
                continue
            evidence = "; ".join(c.evidence[:2])
            why = (
                f"{c.title} ({evidence}): seen for {fmt_duration(now - state.first)}, "
                f"called after {fmt_duration(c.hold_s)}"
            )
            out.append((key, (why, Undecided.PENDING)))
        return out

    def _keep_driver_samples(
        self, now: float, utilisation: Iterable[tuple[int, tuple[float, ...]]]
    ) -> None:
        """Every frame's driver utilisation samples, as counts: the advisor judges every
        few seconds, but a stall between two judgements must still count."""
        t = self._t
        keep = max(t.under_used_s, t.window_s) * 1.1
        for index, values in utilisation:
            if not values:
                continue
            busy = sum(1 for v in values if v > t.sample_busy_pct)
            waiting = sum(1 for v in values if v <= t.starved_idle_util_pct)
            ring = self._driver_samples.setdefault(index, deque())
            ring.append((now, busy, waiting, len(values), sum(values)))
            while ring and ring[0][0] < now - keep:
                ring.popleft()

    def _keep_process_cpu(self, now: float, processes: Sequence[ProcessSample]) -> None:
        """Each GPU process's CPU, every frame, over the window: a starved job is judged on
        its loaders' CPU over the window, not one tick's reading."""
        keep = self._t.window_s * 1.1
        seen = set()
        for proc in processes:
            if proc.pid in seen or proc.cpu_percent is None:
                continue  # a process on several GPUs: one reading a frame
            seen.add(proc.pid)
            ring = self._process_cpu.setdefault(proc.pid, deque())
            ring.append(
                (
                    now,
                    proc.cpu_percent,
                    proc.workers_cpu_percent,
                    proc.workers_active,
                    proc.children,
                )
            )
            while ring and ring[0][0] < now - keep:
                ring.popleft()
        for pid in [p for p, ring in self._process_cpu.items() if p not in seen]:
            ring = self._process_cpu[pid]
            while ring and ring[0][0] < now - keep:
                ring.popleft()
            if not ring:
                del self._process_cpu[pid]

    def point_in_time(self) -> tuple[Finding, ...]:
        """The findings for a point-in-time test (``gputui doctor``).

        The live pane waits ``start_after_s`` before it shows a condition, to stay calm; a
        short doctor run may end before that. Here a condition that held at every judgement
        since the rules could first judge (through the whole sampled window) counts too,
        and its evidence says over how long (and the judgement no longer lists it as
        watched for).
        """
        if self._ready_at is None or self._judged_at is None:
            return self.findings
        start = self._ready_at + self._t.judge_every_s
        shown = {f.key for f in self.findings}
        extra = []
        for state in self._states.values():
            c = state.candidate
            if state.active or c.key in shown or state.last < self._judged_at:
                continue
            if state.first > start:
                continue  # it began during the run: not held through the window
            held = self._judged_at - (self._first_time or state.first)
            hold = fmt_duration(c.hold_s or self._t.start_after_s)
            note = (
                f"held through the whole sampled window ({fmt_duration(held)}; the live pane "
                f"shows it after {hold})"
                if held > 0
                else f"found over the window its rule reads, judged once at the end of the "
                f"history read (the live pane shows it after {hold})"
            )
            finding = _finding(state)
            extra.append(replace(finding, evidence=(*finding.evidence, note)))
        hidden = {
            (rule, f.gpu) for f in (*self.findings, *extra) for rule in SUPERSEDES.get(f.rule, ())
        }
        # what it reports is no longer watched for
        reported = {f.key for f in extra}
        undecided = self.judgement.undecided
        kept = tuple(
            u
            for u in undecided
            if u.kind is not Undecided.PENDING or (u.rule, u.gpu) not in reported
        )
        if len(kept) != len(undecided):
            self.judgement = replace(self.judgement, undecided=kept)
        return tuple(
            sorted((f for f in (*self.findings, *extra) if f.key not in hidden), key=finding_order)
        )


def _hidden(
    seen: dict[tuple[RuleId, int | None], Candidate], active: list[_State]
) -> set[tuple[RuleId, int | None]]:
    """Findings another one says more precisely: those a rule supersedes on its GPU, and
    "under-used, cause not visible" where another rule explains it."""
    hidden = {
        (rule, s.candidate.gpu)
        for s in active
        for rule in SUPERSEDES.get(s.candidate.rule, ())
        if s.candidate.key in seen
    }
    # what is seen now, and what is still shown (held on until it ends): a straggler shown
    # explains its GPU's under-use as long as it is shown
    present = [*seen.values(), *(s.candidate for s in active)]
    explain = [c for c in present if _paces(c) and c.rule is not RuleId.UNDER_USED]
    hidden |= {(RuleId.UNDER_USED, c.gpu) for c in explain}
    if any(c.gpu is None for c in explain):
        hidden |= {(RuleId.UNDER_USED, c.gpu) for c in present}
    return hidden


def _paces(candidate: Candidate) -> bool:
    """Whether a candidate may explain how fast its GPU works: a warning or worse about
    its pace, not its health or settings."""
    return candidate.severity.rank >= Severity.WARNING.rank and candidate.rule not in NOT_ITS_PACE


def _name_straggler_causes(seen: dict[tuple[RuleId, int | None], Candidate]) -> None:
    """A straggler names what was found on it: the job runs at that GPU's pace, and its
    own cause is what to fix first."""
    for key, candidate in list(seen.items()):
        if candidate.rule is not RuleId.STRAGGLER:
            continue
        causes = [
            c
            for c in seen.values()
            if c.gpu == candidate.gpu
            and c.rule not in (RuleId.STRAGGLER, RuleId.UNDER_USED)
            and _paces(c)
        ]
        if not causes:
            continue
        names = ", ".join(f"{c.rule} ({c.title})" for c in causes[:2])
        seen[key] = replace(
            candidate,
            evidence=(*candidate.evidence, f"found on this GPU: {names}"),
            remedies=(
                f"Fix GPU {candidate.gpu}'s {causes[0].rule} first: the whole job runs at this "
                f"GPU's pace ({causes[0].remedies[0]})"
                if causes[0].remedies
                else f"Fix GPU {candidate.gpu}'s {causes[0].rule} first",
                *candidate.remedies[1:],
            ),
        )


def _finding(s: _State) -> Finding:
    return Finding(
        rule=s.candidate.rule,
        severity=s.candidate.severity,
        gpu=s.candidate.gpu,
        title=s.candidate.title,
        evidence=s.candidate.evidence,
        remedies=s.candidate.remedies,
        since=s.first,
        updated=s.last,
    )
