"""Names defined once, and the formats that carry them: typed in memory, plain in files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.advisor import RULES
from gputui.core import dcgm
from gputui.core.config import Thresholds
from gputui.core.model import DeviceInfo, Finding, Frame, GpuSample, SourceInfo
from gputui.core.names import Metric, NoteKind, RuleId, Severity, SourceKind
from gputui.formats.recording import read_recording
from gputui.formats.snapshot import parse_snapshot
from gputui.formats.values import parse_frame
from gputui.sampling.history import GPU_METRICS
from gputui.sampling.replay_control import ReplayController
from gputui.sources.recorded import ReplaySource
from tests.factories import demo_monitor


def test_names_print_and_serialise_as_their_values() -> None:
    assert str(RuleId.THERMAL_THROTTLE) == "thermal-throttle"
    assert f"{Severity.CRITICAL:>10}" == "  critical"
    assert json.dumps({"kind": SourceKind.LIVE}) == '{"kind": "live"}'
    assert Severity.CRITICAL.rank > Severity.WARNING.rank > Severity.INFO.rank


def test_every_metric_is_a_sample_field() -> None:
    sample = GpuSample(index=0, temp_c=71.0)
    assert set(GPU_METRICS) == set(Metric)
    assert GPU_METRICS[Metric.TEMP_C](sample) == 71.0


def test_a_finding_round_trips_with_its_types() -> None:
    finding = Finding(RuleId.POWER_CAP, Severity.WARNING, 3, "t", ("e",), ("r",), 1.0, 2.0)
    data = json.loads(json.dumps(finding.to_dict()))
    assert data["rule"] == "power-cap" and data["severity"] == "warning"
    back = Finding.from_dict(data)
    assert back == finding and back.rule is RuleId.POWER_CAP


def test_rule_prose_states_the_configured_numbers() -> None:
    default, custom = Thresholds(), Thresholds(window_s=45.0, vram_warning_pct=92.0)
    by_id = {rule.id: rule for rule in RULES}
    assert "of the last 30 s" in by_id[RuleId.THERMAL_THROTTLE].when_it_fires(default)
    assert "of the last 45 s" in by_id[RuleId.THERMAL_THROTTLE].when_it_fires(custom)
    assert "92 %" in by_id[RuleId.VRAM_PRESSURE].when_it_fires(custom)
    assert ">= 1 GiB" in by_id[RuleId.IDLE_ALLOCATED].when_it_fires(default)
    for rule in RULES:  # every template formats, no placeholder left behind
        for text in (rule.when_it_fires(default), rule.what_it_reads(default)):
            assert "{" not in text and "}" not in text, rule.id


def test_every_dcgm_field_round_trips_and_names_a_model_field() -> None:
    sample, device = GpuSample(index=0), DeviceInfo(index=0, name="x")
    for field in dcgm.FIELDS:
        target = sample if field.on == "sample" else device
        assert hasattr(target, field.attr), field.name
        value: float | bool = 40960 * dcgm.MIB if field.scale == dcgm.MIB else 87
        value = True if field.flag else value
        back = field.to_model(field.to_exposition(value))
        assert back == pytest.approx(value), field.name
    # the old name of a renamed field still reads
    old = dcgm.BY_NAME["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"]
    assert old is dcgm.BY_NAME["DCGM_FI_DEV_CLOCKS_EVENT_REASONS"]


def test_version_1_notes_read_back_with_their_kinds() -> None:
    frame = parse_frame(
        {
            "time": 1.0,
            "gpus": [],
            "notes": [
                "2 GPU process(es) are not visible in this PID namespace (a container?)",
                "node a is down: timed out",
                "something else",
            ],
        }
    )
    assert [n.kind for n in frame.notes] == [
        NoteKind.PID_NAMESPACE,
        NoteKind.NODE_DOWN,
        NoteKind.GENERAL,
    ]


def test_a_version_1_recording_still_replays(tmp_path: Path) -> None:
    header = {
        "schema": "gputui.record",
        "version": 1,
        "gputui_version": "0.1.0",
        "source": {"label": "NVML", "kind": "live", "detail": None},
        "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3"}],
        "interval_s": 1.0,
    }
    tick = {
        "frame": {"time": 5.0, "gpus": [{"index": 0, "temp_c": 60.0}], "notes": ["x"]},
        "findings": [
            {
                "rule": "thermal-hot",
                "severity": "warning",
                "gpu": 0,
                "title": "t",
                "evidence": [],
                "remedies": [],
                "since": 1.0,
                "updated": 5.0,
            }
        ],
    }
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(header) + "\n" + json.dumps(tick) + "\n")
    recording = read_recording(path)
    assert recording.header.source == SourceInfo("NVML", SourceKind.LIVE)
    assert recording.ticks[0].findings[0].rule is RuleId.THERMAL_HOT
    assert recording.ticks[0].frame.notes[0].text == "x"


def test_a_version_1_snapshot_still_reads() -> None:
    from gputui.formats.snapshot import dumps, snapshot_of

    document = snapshot_of(demo_monitor("thermal", seconds=10))
    document["version"] = 1
    document["latest"]["notes"] = ["an old note"]
    snap = parse_snapshot(dumps(document))
    assert snap.version == 1 and snap.latest is not None
    assert snap.latest.notes[0].kind is NoteKind.GENERAL


def _frames(n: int) -> list[Frame]:
    return [Frame(time=100.0 + i, gpus=(GpuSample(index=0, util_gpu=float(i)),)) for i in range(n)]


def test_the_replay_controller_steps_seeks_and_paces() -> None:
    monitor = demo_monitor("idle", seconds=0, gpus=1)
    source = ReplaySource(_frames(600), monitor.devices, 1.0)
    replay = ReplayController(source, monitor)
    assert replay.step() and monitor.latest is not None and monitor.latest.time == 100.0
    shown = replay.seek_to(400.0)
    assert shown == 400.0 and len(monitor.history) == 301  # frames 100-400 s: history rebuilt
    assert replay.seek_by(-1000) == 100.0  # never before the first frame...
    assert replay.seek_to(10_000) == 699.0  # ... nor past the last, which is shown
    assert not replay.step() and replay.at_end
    assert replay.change_speed(1000) == 64.0 and replay.change_speed(1e-9) == 0.125


def test_nested_readings_round_trip_through_a_frame() -> None:
    from gputui.core.model import XidEvent
    from gputui.formats.values import frame_dict

    sample = GpuSample(
        index=0,
        util_samples=(100.0, 0.0, 95.0),
        violation_power_s=12.5,
        xid_events=(XidEvent(79, 10.0), XidEvent(48, 11.0)),
    )
    frame = Frame(time=11.0, gpus=(sample,))
    back = parse_frame(json.loads(json.dumps(frame_dict(frame))))
    assert back == frame
    assert back.gpus[0].xid_events[0] == XidEvent(79, 10.0)
