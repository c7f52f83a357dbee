"""`gputui doctor`: exit codes, JSON, and the catalogue document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.advisor import RULES
from gputui.advisor.catalogue import catalogue_markdown
from gputui.cli import EXIT_NO_SOURCE, main
from tests.nvml_double import install

DOCS = Path(__file__).resolve().parents[2] / "docs" / "advisor.md"


def test_doctor_thermal_exits_2_naming_thermal_throttle(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--demo", "thermal"]) == 2
    out = capsys.readouterr().out
    assert "CRITICAL" in out and "thermal-throttle" in out
    assert "slowdown at 89 °C" in out


@pytest.mark.parametrize(
    ("scenario", "status"),
    [("healthy", 0), ("idle", 0), ("powercap", 1), ("starved", 1), ("vram", 2)],
)
def test_doctor_exit_status_by_severity(scenario: str, status: int) -> None:
    assert main(["doctor", "--demo", scenario, "--gpus", "1"]) == status


def test_doctor_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--demo", "pcie", "--gpus", "2", "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["exit_status"] == 1
    rules = {(f["rule"], f["gpu"]) for f in document["findings"]}
    assert rules == {(r, g) for r in ("pcie-link-degraded", "pcie-saturated") for g in (0, 1)}
    finding = document["findings"][0]
    assert finding["evidence"] and finding["remedies"] and finding["severity"] == "warning"


def test_doctor_without_driver(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install(monkeypatch, None)
    assert main(["doctor"]) == EXIT_NO_SOURCE
    assert "No NVIDIA driver" in capsys.readouterr().err


def test_snapshot_carries_the_findings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "--demo", "thermal", "--gpus", "1"]) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [f["rule"] for f in findings] == ["thermal-throttle"]


def test_catalogue_document_is_current() -> None:
    assert DOCS.read_text() == catalogue_markdown(), (
        "run: python -m gputui.advisor.catalogue > docs/advisor.md"
    )


def test_every_rule_of_the_brief_is_in_the_catalogue() -> None:
    brief = {
        "thermal-throttle",
        "thermal-hot",
        "power-cap",
        "power-limit-lowered",
        "hw-slowdown",
        "clocks-limited",
        "vram-pressure",
        "host-memory-pressure",
        "pcie-link-degraded",
        "pcie-saturated",
        "pcie-errors",
        "input-starved",
        "io-bound",
        "cuda-launch-blocking",
        "cuda-driver-mismatch",
        "persistence-off",
        "gpu-errors",
        "straggler",
        "idle-allocated",
    }
    assert {r.id for r in RULES} == brief
