"""The Xid table, entry by entry: each code's class, severity and remedy as the advisor
says them (NVIDIA's public Xid catalogue)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gputui.core.model import XidEvent
from gputui.core.xid import UNKNOWN, XIDS, describe_xid, xid_info, xid_origin
from tests.advisor_kit import BUSY, Sim

LEVELS = ("info", "warning", "critical")


def reported(code: int, gpu_index: int = 0) -> Sim:
    sim = Sim()
    sim.run(12, BUSY)
    sim.run(1, replace(BUSY, xid_events=(XidEvent(code, sim.now - 1),)))
    sim.run(3, BUSY)  # it arrived once; the rule keeps it in view for xid_window_s
    return sim


@pytest.mark.parametrize("code", sorted(XIDS))
def test_every_xid_in_the_table_is_reported_at_its_severity_with_its_remedies(code: int) -> None:
    info = XIDS[code]
    assert info.meaning and info.level in LEVELS and info.remedies
    found = [f for f in reported(code).findings if f.rule == "gpu-errors"]
    if info.origin == "benign":
        assert found == []  # cleanup after another error: nothing on its own
        return
    (f,) = found
    assert f.severity == info.level
    assert f"Xid {code} ({info.meaning}; {info.origin})" in f.evidence[0]
    assert f.remedies[0] == info.remedies[0].format(gpu=0)  # copyable, this GPU's index
    assert "{gpu}" not in " ".join(f.remedies)


@pytest.mark.parametrize("code", [13, 31, 43, 68, 69, 109])
def test_application_xids_point_at_the_program_never_at_the_hardware(code: int) -> None:
    (f,) = reported(code).findings
    assert f.severity == "warning" and "look at the program first" in f.title
    text = " ".join(f.remedies)
    assert "program" in text and "RMA" not in text and "Drain the node" not in text


def test_xid_63_a_recorded_remap_is_a_warning_to_reset_when_idle() -> None:
    (f,) = reported(63).findings
    assert f.severity == "warning"
    assert f.remedies[0].startswith("Reset the GPU when it is idle (nvidia-smi -r -i 0")


def test_xid_64_a_failed_remap_is_an_rma_candidate() -> None:
    (f,) = reported(64).findings
    assert f.severity == "critical" and any("RMA" in r for r in f.remedies)


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (48, "memory is in an unknown state"),
        (79, "no longer answers on PCIe"),
        (74, "nvidia-smi nvlink -s -i 0"),
        (119, "GSP firmware stopped answering"),
        (120, "GSP firmware stopped answering"),
        (95, "memory is in an unknown state"),
    ],
)
def test_hardware_classes_get_their_own_remedies(code: int, words: str) -> None:
    (f,) = reported(code).findings
    assert f.severity == "critical" and words in f.remedies[0]


def test_an_unknown_xid_is_checked_as_hardware_rather_than_ignored() -> None:
    assert 9999 not in XIDS
    assert xid_info(9999) is UNKNOWN and xid_origin(9999) == "hardware"
    assert describe_xid(9999) == "see NVIDIA's Xid catalogue"
    (f,) = reported(9999).findings
    assert f.severity == "warning" and f.title == "Hardware errors on this GPU"


def test_the_worst_xid_sets_the_severity_and_its_remedies_come_first() -> None:
    sim = Sim()
    sim.run(12, BUSY)
    events = (XidEvent(31, sim.now - 2), XidEvent(79, sim.now - 1))
    sim.run(1, replace(BUSY, xid_events=events))
    (f,) = sim.findings
    assert f.severity == "critical" and f.title == "Hardware errors on this GPU"
    assert f.remedies[0] == XIDS[79].remedies[0]
