"""The public API over real sources: the demo's node, a recording, NVML over the test
double; readings and findings as plain records; the report; what loads with it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gputui import api
from tests.live_recording import START, record_live
from tests.nvml_double import FakeNvmlLib, hgx, install


def test_the_demo_session_reads_judges_and_reports(tmp_path: Path) -> None:
    with api.open_demo("thermal", gpus=2, start=START) as session:
        assert [d.index for d in session.devices] == [0, 1]
        ticks = list(session.ticks(count=60))
        assert session.source == "SIMULATED"
    last = ticks[-1]
    assert last.time == START + 59.0
    reading = last.reading(1)
    assert reading is not None and reading.throttled and "sw_thermal" in reading.reasons
    assert reading.sm_clock_pct is not None and reading.sm_clock_pct < 80
    assert reading.temp_margin_c is not None and reading.temp_margin_c <= 0
    rules = {(f.rule, f.gpu, f.severity) for f in last.findings}
    assert ("thermal-throttle", 1, "critical") in rules
    finding = next(f for f in last.findings if f.rule == "thermal-throttle")
    assert finding.text().startswith(f"GPU {finding.gpu}: critical: Thermal throttling")
    json.dumps(last.to_dict())  # plain values all the way down
    page = session.report(tmp_path / "run.html")
    assert (tmp_path / "run.html").read_text() == page and "Thermal throttling" in page
    assert "Thermal throttling" in session.report(fmt="md")


def test_a_recording_reads_to_its_end(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_live(path, ticks=90, gpus=2)
    with api.open_recording(path) as session:
        ticks = list(session.ticks())
        assert len(ticks) == 90 and session.latest == ticks[-1]
        with pytest.raises(api.SourceEnded):
            session.read()
        assert session.findings == ticks[-1].findings


def test_nvml_narrowed_to_some_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = hgx(4)
    gpus[2].reasons = 0x4  # the power cap
    install(monkeypatch, FakeNvmlLib(gpus))
    with api.open_nvml([2, 3], processes=False) as session:
        assert [d.index for d in session.devices] == [2, 3]
        tick = session.read()
    assert [r.gpu for r in tick.readings] == [2, 3]
    assert tick.readings[0].throttled and tick.readings[0].reasons == ("sw_power_cap",)
    assert tick.readings[0].power_pct == pytest.approx(612.345 / 700 * 100)
    assert not tick.readings[1].throttled


def test_no_driver_is_said_in_a_sentence(no_driver: None) -> None:
    with pytest.raises(api.SourceUnavailable):
        api.open_nvml()


def test_the_api_loads_no_textual_and_no_framework_and_the_app_none_of_it() -> None:
    code = (
        "import sys\n"
        "import gputui, gputui.cli, gputui.launch, gputui.ui.app\n"
        "assert not [m for m in sys.modules if m.startswith(('gputui.api', 'gputui.integ'))]\n"
        "for name in list(sys.modules):\n"
        "    if name.startswith(('textual', 'gputui.ui')): del sys.modules[name]\n"
        "sys.modules['textual'] = None\n"
        "import gputui.api\n"
        "w = gputui.watch\n"
        "assert not [m for m in ('torch', 'lightning', 'transformers') if m in sys.modules]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
