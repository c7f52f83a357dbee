"""The report counts time spent hung as lost, under its own cause: a job whose ranks wait
in a collective that never completes read 100 % busy, and none of it is work."""

from __future__ import annotations

import pytest

from gputui.core.manual_clock import ManualClock
from gputui.core.model import SourceInfo
from gputui.core.names import SourceKind
from gputui.exporters.report import Cause, Collector, Run, account, report_text
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from gputui.sources.simulated.stuck import HANG_AT_S

START = 1_800_000_000.0


def run_of(scenario: str, seconds: int, gpus: int) -> Run:
    clock = ManualClock(START)
    sim = SimulatedSource(resolve_scenarios(scenario, gpus), clock=clock)
    devices = sim.open()
    collector = Collector(
        devices, SourceInfo("SIMULATED", SourceKind.SIMULATED, scenario), 1.0, origin="test"
    )
    for _ in range(seconds):
        collector.add(sim.read())
        clock.advance(1.0)
    return collector.finish()


def test_a_hung_jobs_time_is_lost_under_its_own_cause_on_every_rank() -> None:
    run = run_of("hang", 360, 4)
    accounting = account(run)
    hung_s = run.end - run.start - HANG_AT_S
    for index, acc in accounting.gpus.items():
        # from when the ranks began to spin, not from when the hang was called two
        # minutes later; the spinning ranks' 100 % is not "busy"
        assert acc.seconds[Cause.HUNG] == pytest.approx(hung_s, abs=2.0), index
        assert acc.lost_s[Cause.HUNG] == pytest.approx(acc.seconds[Cause.HUNG])
        assert acc.seconds[Cause.BUSY] == pytest.approx(HANG_AT_S, abs=2.0)
        assert acc.seconds[Cause.STRAGGLER] == 0.0 and acc.seconds[Cause.IDLE_HELD] == 0.0
    worst = accounting.gpus[0].worst[Cause.HUNG]
    assert worst.figure.startswith("100 % utilisation, 13") and worst.figure.endswith("no work")
    assert accounting.gpus[3].worst[Cause.HUNG].figure.startswith("0 % utilisation")
    total = accounting.total
    assert total.lost_s[Cause.HUNG] == pytest.approx(4 * hung_s, abs=8.0)


def test_the_reports_name_the_hung_time() -> None:
    run = run_of("hang", 200, 2)
    text = report_text(run, "md")
    assert "hung (busy without work)" in text
    assert "collective-hang" in text
    page = report_text(run, "html")
    assert 'class="c-hung"' in page or "c-hung" in page


def test_memory_bound_decode_is_busy_not_hung() -> None:
    accounting = account(run_of("decode", 360, 2))
    for acc in accounting.gpus.values():
        assert acc.seconds[Cause.HUNG] == 0.0
        assert acc.share(Cause.BUSY) > 0.99
