"""The rules at the pace a cluster's readings come: a Prometheus server's scrapes every 15,
30 or 60 s, read every tick or as a history at the scrape interval (issue 26)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gputui.advisor.cadence import at_cadence, window_for
from gputui.core.config import Thresholds
from gputui.core.model import GpuSample
from gputui.core.names import RuleId
from gputui.sampling.monitor import Monitor
from tests.advisor_kit import BUSY, H100, Sim

REMOTE = replace(H100, node="node-07")
THROTTLED = replace(BUSY, temp_c=88.0, sm_clock_mhz=1410, clock_reasons=0x60)


def _run(sim: Sim, scrape_s: float, tick_s: float, seconds: float, sick: int = -1) -> None:
    """Ticks every ``tick_s`` that see a new reading every ``scrape_s`` (power moves)."""
    elapsed = 0.0
    while elapsed < seconds:
        reading = int(elapsed // scrape_s)
        base = THROTTLED if reading >= sick >= 0 or sick < 0 else BUSY
        sim.tick([replace(base, power_w=560.0 + reading % 7)], processes=(), host=None)
        sim.now += tick_s - 1.0  # tick() adds one second
        elapsed += tick_s


@pytest.mark.parametrize("scrape_s", [15.0, 30.0, 60.0])
def test_a_throttled_gpu_is_found_at_the_scrape_interval(scrape_s: float) -> None:
    sim = Sim(devices=(REMOTE,))
    _run(sim, scrape_s, tick_s=scrape_s, seconds=12 * scrape_s)
    finding = next(f for f in sim.findings if f.rule == RuleId.THERMAL_THROTTLE)
    assert sim.advisor.cadence_s == scrape_s
    said = " / ".join(finding.evidence)
    assert "readings over" in said and "thermal" in said


def test_ticks_faster_than_the_scrapes_count_readings_not_ticks() -> None:
    sim = Sim(devices=(REMOTE,))
    _run(sim, scrape_s=15.0, tick_s=5.0, seconds=180.0)
    assert sim.advisor.cadence_s == 15.0
    assert RuleId.THERMAL_THROTTLE in sim.rules()


def test_a_gpu_whose_readings_stop_is_not_judged_never_all_clear() -> None:
    sim = Sim(devices=(REMOTE,))
    _run(sim, scrape_s=15.0, tick_s=15.0, seconds=300.0)
    # the exporter goes on answering its last collection: the same values, tick after tick
    for _ in range(12):
        sim.tick([replace(BUSY, power_w=560.0)], processes=(), host=None)
        sim.now += 14.0
    undecided = sim.advisor.judgement.not_judged
    assert any("too few readings to judge" in item.missing for item in undecided)
    assert not sim.advisor.judgement.complete


def test_windows_stretch_to_hold_the_readings_a_rule_needs() -> None:
    t = Thresholds()
    at_15 = at_cadence(t, 15.0)
    assert at_15.window_s == window_for(t, 15.0) == (t.min_points + 0.5) * 15.0
    assert at_15.end_after_s >= 30.0
    assert at_cadence(t, 1.0) == t  # a local GPU read every second: as configured


def _gap_then_one(gap_s: float) -> Sim:
    """Five minutes of a throttled GPU scraped every 15 s, then no reading for ``gap_s``
    (the server missed scrapes, or reading a large cluster took that long), then one."""
    sim = Sim(devices=(REMOTE,))
    _run(sim, scrape_s=15.0, tick_s=15.0, seconds=300.0)
    last = sim.history.times()[-1]
    sim.now = last + gap_s - 1.0  # tick() adds one second
    sim.tick([replace(THROTTLED, power_w=571.0)], processes=(), host=None)
    return sim


def test_one_missed_scrape_changes_no_verdict() -> None:
    sim = _gap_then_one(30.0)
    assert RuleId.THERMAL_THROTTLE in sim.rules()
    assert not any("too few readings" in item.missing for item in sim.advisor.judgement.not_judged)


@pytest.mark.parametrize("gap_s", [45.0, 53.0, 68.0, 90.0, 200.0])
def test_a_rule_left_with_too_few_readings_says_so_never_all_clear(gap_s: float) -> None:
    # the false all-clear of doctor at 1,024 nodes: the first full read came 53 s after the
    # history it had read, and the throttled GPUs were neither found nor named unjudged
    sim = _gap_then_one(gap_s)
    said = {item.rule for item in sim.advisor.judgement.not_judged if "too few" in item.missing}
    found = sim.rules()
    assert RuleId.THERMAL_THROTTLE in found | said
    assert not sim.advisor.judgement.complete or RuleId.THERMAL_THROTTLE in found


def test_a_run_in_which_no_gpu_answered_exits_3_not_still_judging() -> None:
    """Every node down for the whole doctor run (a Prometheus server whose targets all
    stopped): "still judging" (4) says waiting helps, and it never will; 3 is doctor's
    "no GPUs could be read", and the verdict says so."""
    from gputui.advisor import judgement_of, make_monitor
    from gputui.core.config import Config
    from gputui.core.model import Frame, SourceInfo
    from gputui.core.names import SourceKind
    from gputui.exporters.doctor import report_lines, run_status

    def monitor_of(gpus: tuple[GpuSample, ...]) -> Monitor:
        monitor = make_monitor((REMOTE,), Config(), SourceInfo("P", SourceKind.REMOTE, ""))
        for second in range(40):
            monitor.ingest(Frame(time=1_000.0 + second, gpus=gpus))
        return monitor

    silent = monitor_of(())
    assert run_status(silent, (), judgement_of(silent)) == 3
    text = "\n".join(line.plain for line in report_lines(silent, width=100))
    assert "no GPU answered during the run" in text and "(exit 3)" in text
    read = monitor_of((BUSY,))
    assert run_status(read, (), judgement_of(read)) != 3
