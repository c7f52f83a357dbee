"""The cluster gate (issue 53): a clock held far below its maximum with no reason named, a
node that stopped reporting however long ago, and the rules a source of exporter metrics
can never feed, listed as not applicable to it rather than holding a verdict at "not
judged"."""

from __future__ import annotations

from dataclasses import replace

from gputui.advisor import RULES, make_advisor
from gputui.advisor.coverage import THIS_SOURCE, context_lines, never_fed
from gputui.advisor.engine import Advisor
from gputui.core import clock_events as ce
from gputui.core.judgement import Undecided
from gputui.core.model import Frame, GpuSample, NodeStatus
from gputui.core.names import RULES_NEEDING_HOST, RuleId
from gputui.sampling.history import History
from tests.advisor_kit import BUSY, H100, IDLE, Sim

HELD = replace(BUSY, sm_clock_mhz=1095)


def _held(sim: Sim) -> list[str]:
    return [f.rule for f in sim.findings if f.rule == RuleId.CLOCKS_HELD]


def test_a_busy_gpu_held_far_below_its_maximum_with_no_reason_named_is_a_warning() -> None:
    sim = Sim()
    sim.run(40, HELD)
    (found,) = [f for f in sim.findings if f.rule == RuleId.CLOCKS_HELD]
    assert found.severity == "warning"
    assert found.evidence[0].startswith("SM clock 1095 / 1980 MHz max (55 %) while busy")
    assert "names no cause in 31 of 31 readings" in found.evidence[1]
    assert any("nvidia-smi -i 0 -rgc" in r for r in found.remedies)
    assert any("BMC" in r for r in found.remedies)


def test_a_held_clock_with_a_cause_named_or_unknown_reasons_is_not_this_rule() -> None:
    for reasons in (ce.SW_POWER_CAP, ce.SW_THERMAL, ce.HW_POWER_BRAKE, ce.SYNC_BOOST):
        sim = Sim()
        sim.run(40, replace(HELD, clock_reasons=reasons))
        assert not _held(sim), reasons
    sim = Sim()
    sim.run(40, replace(HELD, clock_reasons=None))
    assert not _held(sim)
    missing = {(i.rule, i.kind) for i in sim.advisor.judgement.undecided}
    assert (RuleId.CLOCKS_HELD, Undecided.UNREADABLE) in missing  # never "all clear"


def test_a_clock_at_its_boost_or_an_idle_gpu_is_calm() -> None:
    for gpu in (replace(BUSY, sm_clock_mhz=1900), IDLE, replace(HELD, util_gpu=40.0)):
        sim = Sim()
        sim.run(40, gpu, processes=())
        assert not _held(sim), gpu


def test_the_applications_clocks_bit_alone_names_no_cause() -> None:
    """Drivers set it on busy GPUs at their default clocks: not a reason for 55 %."""
    sim = Sim()
    sim.run(40, replace(HELD, clock_reasons=ce.APPLICATIONS_CLOCKS))
    assert _held(sim)


def test_a_lowered_application_clock_says_the_same_more_precisely() -> None:
    sim = Sim()
    sim.run(40, replace(HELD, app_sm_clock_mhz=1095))
    assert "clocks-limited" in sim.rules() and not _held(sim)


def _remote(count: int) -> list[GpuSample]:
    return [replace(BUSY, index=i) for i in range(count)]


def test_a_node_down_since_before_the_history_is_a_finding_at_once() -> None:
    devices = [replace(H100, index=i, node="node-a", node_index=i) for i in range(2)]
    advisor = make_advisor(devices, remote=True)
    history = History(100)
    down = NodeStatus(node="node-z", up=False, down="is down since the start (up == 0)")
    history.add(Frame(time=1.0, gpus=tuple(_remote(2)), nodes=(NodeStatus("node-a"), down)))
    advisor.update(history, force=True)
    (found,) = [f for f in advisor.findings if f.rule == RuleId.NOT_REPORTING]
    assert found.gpu is None and found.severity == "warning"
    assert found.title == "1 node(s) not reporting: node-z"
    assert found.evidence == ("node node-z is down since the start (up == 0)",)


def test_a_down_node_whose_gpus_are_listed_is_said_per_gpu_not_twice() -> None:
    devices = [replace(H100, index=i, node=f"node-{i}", node_index=0) for i in range(2)]
    advisor = make_advisor(devices, remote=True)
    history = History(100)
    statuses = (NodeStatus("node-0"), NodeStatus("node-1", up=False, down="stopped reporting"))
    for t in range(12):
        history.add(Frame(time=float(t), gpus=tuple(_remote(1)), nodes=statuses))
        advisor.update(history)
    found = [f for f in advisor.findings if f.rule == RuleId.NOT_REPORTING]
    assert [f.gpu for f in found] == [1]


def test_rules_an_exporter_can_never_feed_are_not_applicable_to_it() -> None:
    never = never_fed(RULES)
    assert set(RULES_NEEDING_HOST) <= set(never)
    assert "persistence mode" in never[RuleId.PERSISTENCE_OFF]
    assert "settings" in never[RuleId.CPU_GOVERNOR]
    # what an exporter's counters can carry, once configured, is not among them
    fed = {RuleId.THERMAL_THROTTLE, RuleId.POWER_CAP, RuleId.CLOCKS_HELD, RuleId.PCIE_ERRORS}
    assert not fed & set(never)


def test_a_healthy_remote_gpu_with_every_counter_is_judged_completely() -> None:
    device = replace(H100, node="node-a", node_index=0)
    local, remote = Advisor([device], RULES), make_advisor([device], remote=True)
    history = History(100)
    for t in range(40):
        history.add(Frame(time=float(t), gpus=(replace(BUSY, power_w=560.0 + t % 3),)))
        local.update(history)
        remote.update(history)
    assert not remote.findings
    judgement = remote.judgement
    assert judgement.complete, judgement.not_judged
    lines = context_lines(judgement)
    (said,) = [line for line in lines if line.startswith(THIS_SOURCE)]
    assert "input-starved" in said and "persistence-off" in said
    # the same history from a local source: the host's rules lack the host's readings
    assert not local.judgement.complete
