"""Each simulated scenario yields exactly the findings it stands for, steadily."""

from __future__ import annotations

import pytest

from gputui.advisor import make_advisor
from gputui.core.manual_clock import ManualClock
from gputui.core.names import RuleId
from gputui.sampling.history import History
from gputui.sources.simulated import SimulatedSource, resolve_scenarios

EXPECTED = {
    "healthy": set(),
    "idle": set(),
    "thermal": {"thermal-throttle"},
    # a limit set below the default: capped, and the lowered limit named
    "powercap": {"power-cap", "power-limit-lowered"},
    "vram": {"vram-pressure"},
    "pcie": {"pcie-link-degraded", "pcie-saturated"},
    "starved": {"input-starved"},
    "loader-bound": {"input-starved"},
    # the calm verdicts: at most an info line
    "pytorch-plateau": {"vram-reserved"},
    "sweep": set(),
    "gen5-in-gen4": {"pcie-host-limited"},
    "warm-4090": set(),
    "hw-blip": set(),
    "minor-compat": {"cuda-driver-mismatch"},
    "at-power-limit": {"power-cap"},  # info: a board at its default limit under load
    # stuck, not slow: the whole job's GPUs, the waiting rank and the one it waits for
    "hang": {"collective-hang"},
    "fan-stopped": {"fan-fault"},
    # ... and their look-alikes: memory-bound decode is work; fans stop at idle on purpose
    "decode": {"vram-reserved"},
    "zero-rpm": set(),
}
CALM = (
    "pytorch-plateau",
    "sweep",
    "gen5-in-gen4",
    "warm-4090",
    "hw-blip",
    "minor-compat",
    "at-power-limit",
    "decode",
    "zero-rpm",
)


def simulate(scenario: str, gpus: int, seconds: int) -> list[set[tuple[RuleId, int | None]]]:
    """The findings' keys at each second; every rule judged by the end (the simulation
    fills every reading a rule needs), none raised."""
    clock = ManualClock(1_800_000_000.0)
    source = SimulatedSource(resolve_scenarios(scenario, gpus), clock=clock)
    advisor = make_advisor(source.open())
    history = History(3600)
    timeline = []
    for _ in range(seconds):
        history.add(source.read())
        findings = advisor.update(history)
        if scenario in CALM:
            assert all(f.severity == "info" for f in findings), findings
        timeline.append({f.key for f in findings})
        clock.advance(1.0)
    assert not advisor.rule_errors
    assert advisor.judgement.complete, advisor.judgement
    return timeline


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_scenario_yields_exactly_its_findings(scenario: str) -> None:
    timeline = simulate(scenario, 2, 240)
    expected = {(rule, gpu) for rule in EXPECTED[scenario] for gpu in range(2)}
    assert timeline[-1] == expected
    # calm: once a finding has started it stays (no flicker) ...
    for key in expected:
        first = next(i for i, keys in enumerate(timeline) if key in keys)
        assert all(key in keys for keys in timeline[first:]), key
    # ... and nothing else ever showed up along the way
    extra = set().union(*timeline) - expected
    transient_ok = {("thermal-hot", g) for g in range(2)}  # on its way to throttling
    # the rank the others wait for, idle: "waits on something" (info) until the hang is
    # called, which then says what
    transient_ok |= {("under-used", 1)} if scenario == "hang" else set()
    assert extra <= transient_ok, extra


def test_default_mix_findings_match_each_gpus_scenario() -> None:
    timeline = simulate("mix", 8, 180)
    by_gpu: dict[int | None, set[str]] = {}
    for rule, gpu in timeline[-1]:
        by_gpu.setdefault(gpu, set()).add(rule)
    scenarios = resolve_scenarios("mix", 8)
    for gpu, scenario in enumerate(scenarios):
        got = by_gpu.get(gpu, set()) - {"straggler"}
        assert got == EXPECTED[scenario], (gpu, scenario, got)
    # the GPUs slower than their peers in the same job are named as stragglers
    stragglers = {gpu for rule, gpu in timeline[-1] if rule == "straggler"}
    assert stragglers == {
        i for i, s in enumerate(scenarios) if s in ("thermal", "powercap", "pcie")
    }
    assert None not in by_gpu  # the host is fine


def test_thermal_finding_appears_within_a_minute() -> None:
    timeline = simulate("thermal", 1, 60)
    assert ("thermal-throttle", 0) in timeline[-1]


def test_gen5_card_in_a_gen4_host_reports_both_maxima() -> None:
    source = SimulatedSource(resolve_scenarios("gen5-in-gen4", 1), clock=ManualClock(0.0))
    (device,) = source.open()
    assert (device.pcie_gpu_max_gen, device.pcie_max_gen) == (5, 4)
    assert source.read().gpus[0].pcie_gen == 4


def test_crowded_ranks_are_named_on_the_gpu_they_crowd() -> None:
    timeline = simulate("crowded", 4, 120)
    assert timeline[-1] == {("ranks-crowded", 0)}


def test_a_hang_is_called_on_every_gpu_of_the_job_and_no_rank_is_a_straggler() -> None:
    timeline = simulate("hang", 4, 200)
    assert timeline[-1] == {("collective-hang", g) for g in range(4)}
    assert not [key for keys in timeline for key in keys if key[0] == "straggler"]
