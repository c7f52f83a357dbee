"""Issue 12: a remote exporter's evidence counts distinct readings, not scrapes.

dcgm-exporter collects every 30 s by default (its -c / DCGM_EXPORTER_INTERVAL, 30000 ms):
scraped every second, it answers the same reading 30 times.
"""

from __future__ import annotations

from gputui.advisor import make_monitor
from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import SourceInfo
from gputui.core.names import RuleId, SourceKind
from gputui.sources.remote import RemoteSource
from tests.dcgm_pages import default_page, family, labels


def test_thermal_evidence_counts_readings_not_scrapes() -> None:
    clock = ManualClock(1e9)
    start = clock()

    def page() -> str:
        collection = int((clock() - start) // 30)  # a new reading every 30 s
        text = default_page(
            gpus=1,
            values={"DCGM_FI_DEV_POWER_USAGE": 600.0 + collection, "DCGM_FI_DEV_SM_CLOCK": 1200},
        )
        text += family(
            "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "r", [(labels("node-a", 0), 0x20)]
        )
        text += family("DCGM_FI_DEV_MAX_SM_CLOCK", "gauge", "m", [(labels("node-a", 0), 1980)])
        return text

    source = RemoteSource(["http://n:9400"], clock=clock, fetcher=lambda url, t: page())
    devices = source.open()
    monitor = make_monitor(devices, Config(interval_s=1.0), SourceInfo("R", SourceKind.REMOTE))
    for _ in range(91):
        monitor.ingest(source.read())
        clock.advance(1.0)
    monitor.judge_latest()  # the verdict on the 90 s scrape, as a headless command gives it
    finding = next(f for f in monitor.findings if f.rule == RuleId.THERMAL_THROTTLE)
    said = " / ".join(finding.evidence)
    # 91 scrapes, four collections (0, 30, 60, 90 s): the window stretches to hold them
    assert "clock events: thermal slowdown (SW), in 4 of 4 readings over 1 min 30 s" in said, said
    assert "100 %" not in said
