"""Hysteresis: findings start after a while, end after a while, never flicker."""

from __future__ import annotations

from dataclasses import replace

from gputui.advisor.engine import Advisor, _hidden, _State
from gputui.advisor.finding import Candidate
from gputui.core import clock_events as ce
from gputui.core.config import Thresholds
from gputui.core.names import RuleId, Severity
from tests.advisor_kit import BUSY, Sim

CAPPED = replace(BUSY, power_w=699.0, sm_clock_mhz=1600, clock_reasons=ce.SW_POWER_CAP)


def test_starts_only_after_the_condition_held() -> None:
    sim = Sim(thresholds=Thresholds(start_after_s=5.0, min_points=5))
    sim.run(20, BUSY)
    seen = [bool(sim.tick([CAPPED])) for _ in range(40)]
    first = seen.index(True)
    # the window needs half of it capped, then the finding waits start_after_s more
    assert first >= 5 and all(seen[first:])


def test_ends_only_after_the_condition_stopped_for_a_while() -> None:
    sim = Sim(thresholds=Thresholds(end_after_s=15.0))
    sim.run(60, CAPPED)
    assert "power-cap" in sim.rules()
    since = sim.findings[0].since
    states = [bool(sim.tick([BUSY])) for _ in range(60)]
    last = max(i for i, s in enumerate(states) if s)
    assert last >= 15  # it stays through the grace period ...
    assert not any(states[last + 1 :])  # ... then ends for good
    assert since < sim.now


def test_a_brief_blip_raises_nothing() -> None:
    sim = Sim()
    sim.run(60, BUSY)
    sim.run(3, replace(BUSY, temp_c=91.0, clock_reasons=ce.HW_THERMAL))
    sim.run(60, BUSY)
    assert sim.findings == ()


def test_finding_keeps_its_start_time_while_it_holds() -> None:
    sim = Sim()
    sim.run(40, CAPPED)
    since = sim.findings[0].since
    sim.run(40, CAPPED)
    assert sim.findings[0].since == since
    # judged every judge_every_s: updated by the last judgement, not necessarily the last tick
    assert sim.now - 1 - Thresholds().judge_every_s < sim.findings[0].updated <= sim.now - 1


def test_most_severe_first() -> None:
    sim = Sim()
    sim.run(40, lambda i: replace(CAPPED, ecc_volatile_uncorrected=i // 10))
    # uncorrectable errors (critical) before a cap at the default limit (info: normal)
    assert [f.severity for f in sim.findings] == ["critical", "info"]


def test_a_failing_rule_does_not_silence_the_others() -> None:
    from gputui.advisor import RULES, Advisor
    from gputui.advisor.rule import Rule
    from gputui.core.model import Frame
    from gputui.sampling.history import History
    from tests.advisor_kit import H100, TRAINER

    def broken(ctx: object) -> list[object]:
        raise ZeroDivisionError("bug")

    advisor = Advisor([H100], (Rule("broken", "-", "-", "-", "-", broken), *RULES))  # type: ignore[arg-type]
    history = History(100)
    for i in range(40):
        history.add(Frame(time=float(i), gpus=(CAPPED,), processes=(TRAINER,)))
        advisor.update(history)
    assert "power-cap" in {f.rule for f in advisor.findings}
    assert advisor.rule_errors == {"broken": "ZeroDivisionError: bug"}


def test_the_readings_a_gpu_has_are_read_as_the_slow_way_reads_them() -> None:
    """The coverage's readers (one attrgetter a place, made once a set of names) find the
    same readings as asking each name in turn, on every demo scenario's GPUs, with and
    without a host reading, and for names no record has."""
    from gputui.advisor import RULES
    from gputui.advisor.coverage import _options, _present_of, _readings_present
    from gputui.core.model import DeviceInfo, GpuSample
    from gputui.sources.simulated.scenarios import SCENARIOS
    from tests.factories import demo_monitor

    names = frozenset(
        {n for rule in RULES for options in _options(rule) for n in options}
        | {"mem_used_pct", "no_such_reading", "host.no_such_reading", "host.hostname"}
    )
    checked = 0
    for scenario in SCENARIOS:
        monitor = demo_monitor(scenario, seconds=3, gpus=2)
        frame = monitor.latest
        assert frame is not None
        devices = {d.index: d for d in monitor.devices}
        for sample in (*frame.gpus, GpuSample(index=0)):
            device = devices.get(sample.index, DeviceInfo(0, ""))
            for host in (frame.host, None):
                assert _present_of(names, sample, device, host) == _readings_present(
                    names, sample, device, host
                )
                checked += 1
    assert checked > 50


def test_a_shown_finding_about_a_gpus_pace_hides_under_used_until_it_ends() -> None:
    """A straggler still shown (held on after its condition went, until it ends) explains
    its GPU's under-use: "cause not visible" beside it contradicts it."""

    def candidate(rule: RuleId, severity: Severity) -> Candidate:
        return Candidate(rule, severity, 5, "t", (), ())

    under = candidate(RuleId.UNDER_USED, Severity.INFO)
    shown = _State(0.0, 10.0, candidate(RuleId.STRAGGLER, Severity.WARNING), active=True)
    assert (RuleId.UNDER_USED, 5) in _hidden({under.key: under}, [shown])
    # a finding about the board's settings explains no pace
    lowered = _State(0.0, 10.0, candidate(RuleId.POWER_LIMIT_LOWERED, Severity.WARNING), True)
    assert (RuleId.UNDER_USED, 5) not in _hidden({under.key: under}, [lowered])


def test_a_shown_finding_keeps_its_words_while_they_flap_and_grows_more_severe_at_once() -> None:
    """A leak at the ceiling whose growth comes and goes said "growing toward full" and
    "at its ceiling" by turns, every 2-8 s: the pane reworded itself at every judgement.
    A shown finding changes its words or steps down only once the change held
    ``end_after_s``; it grows more severe at once."""
    from gputui.advisor import Advisor
    from gputui.advisor.rule import Rule
    from gputui.core.model import Frame
    from gputui.sampling.history import History
    from tests.advisor_kit import H100

    now: list[tuple[Severity, str]] = []

    def flapping(ctx: object) -> list[Candidate]:
        severity, title = now[-1]
        return [Candidate(RuleId.VRAM_PRESSURE, severity, 0, title, ("evidence",), ())]

    rule = Rule(RuleId.VRAM_PRESSURE, "-", "-", "-", "-", flapping, needs_history="")
    advisor = Advisor([H100], (rule,))
    history = History(1000)
    said: list[tuple[str, str] | None] = []

    def run(seconds: int, state: object) -> None:
        for _ in range(seconds):
            second = len(said)
            now.append(state(second) if callable(state) else state)  # type: ignore[arg-type]
            history.add(Frame(time=float(second), gpus=(BUSY,)))
            found = advisor.update(history)
            said.append((found[0].severity.value, found[0].title) if found else None)

    crit = Severity.CRITICAL
    run(60, (crit, "growing"))
    assert said[-1] == ("critical", "growing")
    run(60, lambda s: (crit, "growing" if (s // 4) % 2 else "ceiling"))  # by turns
    assert set(said[60:120]) == {("critical", "growing")}
    run(40, (crit, "ceiling"))  # now it holds
    changed = said.index(("critical", "ceiling"))
    assert 120 + 15 <= changed <= 120 + 15 + 3
    run(40, (Severity.WARNING, "ceiling"))  # milder: after it held
    milder = said.index(("warning", "ceiling"))
    assert 160 + 15 <= milder <= 160 + 15 + 3
    run(10, (crit, "ceiling"))  # more severe: at the next judgement
    assert said.index(("critical", "ceiling"), 200) <= 200 + 2


def test_judged_every_few_seconds_but_a_new_xid_or_a_lost_gpu_at_once() -> None:
    from gputui.core.model import GpuSample, XidEvent

    sim = Sim()
    every = sim.advisor.thresholds.judge_every_s
    sim.run(13, BUSY)
    start = sim.now - 13
    judged = sim.advisor.judged_at
    assert judged is not None and judged == start + every * (12 // every)
    sim.run(1, BUSY)  # not yet due: the verdict stands
    assert sim.advisor.judged_at == judged
    sim.run(1, replace(BUSY, xid_events=(XidEvent(48, sim.now),)))
    assert sim.advisor.judged_at == sim.now - 1  # the Xid's frame, judged at once
    sim.run(1, BUSY)
    judged = sim.advisor.judged_at
    sim.tick([GpuSample(index=0, lost=True)], ())
    assert sim.advisor.judged_at == sim.now - 1 != judged


def test_a_headless_command_gives_the_verdict_on_its_last_reading() -> None:
    from gputui.advisor import make_monitor
    from gputui.core.config import Config
    from gputui.core.model import Finding, Frame, SourceInfo
    from gputui.core.names import SourceKind
    from gputui.sampling.history import History
    from tests.advisor_kit import H100

    monitor = make_monitor([H100], Config(), SourceInfo("S", SourceKind.SIMULATED))
    for t in range(7):
        monitor.ingest(Frame(time=float(t), gpus=(BUSY,)))
    advisor = monitor.advisor
    assert isinstance(advisor, Advisor)
    assert advisor.judged_at == 4.0
    monitor.judge_latest()
    assert advisor.judged_at == 6.0
    judged: list[float] = []
    update = advisor.update

    def counted(history: History, force: bool = False) -> tuple[Finding, ...]:
        judged.append(history.latest.time if history.latest else -1.0)
        return update(history, force)

    advisor.update = counted  # type: ignore[method-assign]
    monitor.point_in_time_findings()  # doctor asks again: the last reading is judged once
    assert judged == [] and advisor.judged_at == 6.0


def test_a_monitor_may_make_its_advisor_when_it_first_judges() -> None:
    """The live app's monitor (``later``): its first paint shows a glance without loading
    the rules; the advisor is made at the first frame judged, and knows every GPU."""
    from gputui.advisor import make_advisor
    from gputui.core.config import Config
    from gputui.core.model import Frame, SourceInfo
    from gputui.core.names import SourceKind
    from gputui.sampling.monitor import Monitor
    from tests.advisor_kit import H100

    made: list[Advisor] = []
    later = Thresholds(min_points=3)

    def judge() -> Advisor:
        made.append(make_advisor([H100], later))
        return made[-1]

    monitor = Monitor([H100], Config(), SourceInfo("S", SourceKind.SIMULATED), judge, later=later)
    other = replace(H100, index=1, uuid="GPU-joined")
    monitor.ingest(Frame(time=0.0, gpus=(BUSY,), joined=(other,)), advise=False)  # a glance
    assert made == [] and monitor.findings == () and monitor.thresholds is later
    assert monitor.judgement.gathering and not monitor.judgement.not_judged
    assert len(monitor.history) == 1
    for t in range(1, 7):
        monitor.ingest(Frame(time=float(t), gpus=(BUSY, replace(BUSY, index=1))))
    assert len(made) == 1 and monitor.advisor is made[0]
    assert {1, 0} <= set(made[0]._devices)  # the GPU that joined before it was made
    assert made[0].judged_at is not None and monitor.judgement.readings > 0
    assert monitor.thresholds is later
