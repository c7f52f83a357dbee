"""Evidence is never impossible: no "69 s of the last 59 s", no share over 100 %, no
"7 of 5", no window longer than the history behind it. Checked over every simulated
scenario, the real H200 recordings and a remote exporter's pages, at every judgement."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from gputui.advisor import make_monitor, point_in_time_findings
from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import Finding, Frame, SourceInfo
from gputui.core.names import SourceKind
from gputui.formats.recording import read_recording
from gputui.sampling.monitor import Monitor
from gputui.sources.remote import RemoteSource
from gputui.sources.simulated import SCENARIOS, SimulatedSource, resolve_scenarios
from tests.dcgm_pages import default_page

_DURATION = r"(?:(\d+) h )?(?:(\d+) min )?(\d+(?:\.\d+)?) s\b"
H200 = Path(__file__).resolve().parent.parent / "fixtures" / "h200"


def seconds(match: tuple[str | None, ...]) -> float:
    hours, minutes, secs = match
    return 3600 * float(hours or 0) + 60 * float(minutes or 0) + float(secs or 0)


def impossible(line: str, history_s: float) -> list[str]:
    """What in one line of evidence cannot be true of a history of ``history_s``."""
    wrong = []
    for found in re.finditer(rf"{_DURATION} of the last {_DURATION}", line):
        part, whole = seconds(found.groups()[:3]), seconds(found.groups()[3:])
        if part > whole + 0.5:
            wrong.append(f"{part:g} s of {whole:g} s")
    for found in re.finditer(rf"(?:over|of) the last {_DURATION}", line):
        window = seconds(found.groups())
        if window > history_s + 1.0:
            wrong.append(f"a {window:g} s window over {history_s:g} s of history")
    for found in re.finditer(r"\b(\d+) of (\d+)\b(?! °C| MHz| W| GiB)", line):
        part, whole = int(found.group(1)), int(found.group(2))
        if part > whole:
            wrong.append(f"{part} of {whole}")
    for found in re.finditer(r"(?:in|set in|below \d+ % in|busy) (\d+(?:\.\d+)?) %", line):
        if float(found.group(1)) > 100.0:
            wrong.append(f"a share of {found.group(1)} %")
    return wrong


def judged(frames: Iterable[Frame], monitor: Monitor) -> Iterator[tuple[Finding, float]]:
    """Every finding at every tick, with the history behind it."""
    first: float | None = None
    for frame in frames:
        first = frame.time if first is None else first
        for finding in monitor.ingest(frame):
            yield finding, frame.time - first
    span = monitor.history.times()
    for finding in point_in_time_findings(monitor):
        yield finding, span[-1] - span[0] if span else 0.0


def check(findings: Iterable[tuple[Finding, float]]) -> None:
    seen = 0
    for finding, history_s in findings:
        seen += 1
        for line in finding.evidence:
            assert not impossible(line, history_s), (finding.rule, line, history_s)
    assert seen, "no finding was checked: the test shows nothing"


def test_the_checker_catches_what_was_once_shown() -> None:
    assert impossible("held down by the power limit 69 s of the last 59 s", 59.0)
    assert impossible("set in 130 % of the last 30 s", 30.0)
    assert impossible("7 of 5 readings", 30.0)
    assert impossible("SM clock over the last 5 min 00 s", 60.0)
    assert not impossible("held down by the power limit 1 min 00 s of the last 1 min 00 s", 60)
    assert not impossible("SM clock 1497 / 1980 MHz max over the last 29 s", 30.0)


# The calm scenarios raise nothing but info lines (tests/unit/test_advisor_scenarios.py).
_CALM = ("healthy", "idle", "sweep", "warm-4090", "hw-blip", "zero-rpm")


@pytest.mark.parametrize("scenario", [*(s for s in SCENARIOS if s not in _CALM), "mix"])
def test_every_scenarios_evidence_stays_within_its_window(scenario: str) -> None:
    clock = ManualClock(1_800_000_000.0)
    source = SimulatedSource(resolve_scenarios(scenario, 4), clock=clock)
    devices = source.open()
    monitor = make_monitor(devices, Config(), SourceInfo("SIMULATED", SourceKind.SIMULATED))

    def frames() -> Iterator[Frame]:
        for _ in range(200):
            yield source.read()
            clock.advance(1.0)

    check(judged(frames(), monitor))


@pytest.mark.parametrize("name", ["heavy", "starved-workers", "starved-main"])
def test_real_h200_recordings_evidence_stays_within_its_window(name: str) -> None:
    recording = read_recording(H200 / f"{name}.jsonl.gz")
    monitor = make_monitor(recording.header.devices, Config(), SourceInfo("R", SourceKind.REPLAY))
    check(judged((tick.frame for tick in recording.ticks), monitor))


def test_a_remote_exporters_evidence_stays_within_its_window() -> None:
    clock = ManualClock(1_800_000_000.0)
    tick = [0]

    def page(url: str, timeout: float) -> str:
        # an exporter that collects every 30 s: its readings repeat between collections
        step = tick[0] // 30
        return default_page(
            gpus=2,
            values={
                "DCGM_FI_DEV_GPU_TEMP": 90 + step % 2,
                "DCGM_FI_DEV_POWER_USAGE": 690.0 + step,
                "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": 0x60,  # thermal, SW and HW
                "DCGM_FI_DEV_SM_CLOCK": 1300 + step,
            },
        )

    source = RemoteSource(["http://node-a:9400"], clock=clock, fetcher=page)
    devices = source.open()
    monitor = make_monitor(devices, Config(), SourceInfo("REMOTE", SourceKind.REMOTE))

    def frames() -> Iterator[Frame]:
        for _ in range(150):
            yield source.read()
            clock.advance(1.0)
            tick[0] += 1

    try:
        check(judged(frames(), monitor))
    finally:
        source.close()
