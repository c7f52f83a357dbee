"""`gputui doctor`: exit codes, JSON, and the catalogue document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.advisor import RULES
from gputui.advisor.catalogue import catalogue_markdown
from gputui.cli import EXIT_NO_SOURCE, main
from gputui.core import clock_events as ce
from tests.nvml_double import FakeGpu, driver, install

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
    # issue 12: the calm verdicts and the honest "cause not visible from here"
    calm = {"vram-reserved", "pcie-host-limited", "under-used"}
    # issue 17: topology
    topology = {"numa-mismatch", "pcie-shared-path", "nvlink-down", "nvlink-errors"}
    topology |= {"fabric-not-ready"}
    # a remote GPU whose readings stopped arriving (issue 13)
    remote = {"not-reporting"}
    # issue 25: the memory's health as the driver keeps it, several jobs on one GPU
    health = {"memory-health", "gpu-shared"}
    # issue 31: the configuration of the job, its environment, the node and its GPUs
    configuration = {"cpu-throttled", "cgroup-memory", "cpuset-small", "shm-small"}
    configuration |= {"open-files", "job-swapped", "no-cuda-caching", "distributed-debug"}
    configuration |= {"nccl-p2p-off", "nccl-ib-off", "omp-oversubscribed"}
    configuration |= {"visible-devices-order", "p2p-unavailable", "compute-mode"}
    configuration |= {"mode-pending", "clocks-locked", "cpu-governor", "thp-defrag"}
    configuration |= {"numa-balancing"}
    # issue 46: stuck, not slow (a hung collective, a GPU busy without work), a fan that
    # does not cool, ranks placed wrong
    stuck = {"collective-hang", "busy-no-work", "fan-fault", "ranks-crowded", "stray-contexts"}
    # issue 53: a clock held far below its maximum with no reason named
    configuration |= {"clocks-held"}
    rules = brief | calm | topology | remote | health | configuration | stuck
    assert {r.id for r in RULES} == rules


@pytest.mark.parametrize(
    "scenario",
    [
        "pytorch-plateau",
        "sweep",
        "gen5-in-gen4",
        "warm-4090",
        "hw-blip",
        "minor-compat",
        "at-power-limit",
        "decode",
        "zero-rpm",
    ],
)
def test_doctor_exits_0_on_the_calm_verdicts(scenario: str) -> None:
    assert main(["doctor", "--demo", scenario, "--gpus", "2"]) == 0


def test_doctor_help_documents_every_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    from gputui.cli import DOCTOR_EXIT_CODES, EXIT_NO_SOURCE
    from gputui.exporters.doctor import EXIT_CRITICAL, EXIT_NOT_JUDGED, EXIT_OK, EXIT_WARNING

    for number, words in (
        (EXIT_OK, "everything that can be judged here was"),
        (EXIT_WARNING, "warnings"),
        (EXIT_CRITICAL, "critical"),
        (EXIT_NO_SOURCE, "no GPUs"),
        (EXIT_NOT_JUDGED, "nothing found so far"),
    ):
        assert f"{number} {words}" in DOCTOR_EXIT_CODES  # the text says the numbers used
    with pytest.raises(SystemExit):
        main(["doctor", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    codes = ("0 everything that can be judged", "1 warnings", "2 critical", "3 no GPUs")
    for code in (*codes, "4 nothing found so far"):
        assert code in text, code


def test_doctor_before_the_rules_have_their_history_says_gathering_and_exits_4(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(
        ["doctor", "--demo", "healthy", "--gpus", "1", "--warmup", "0", "--duration", "3"]
    )
    out = capsys.readouterr().out
    assert status == 4
    assert "still judging: 26 s to go, every rule needs 30 s of" in out
    assert "nothing slows" not in out


def test_doctor_shorter_than_the_live_hold_still_reports_what_held_throughout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["doctor", "--demo", "pcie", "--gpus", "1", "--warmup", "0", "--duration", "7"]
    assert main(args) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "pcie-link-degraded" in out
    assert "held through the whole sampled window (7 s" in out


def test_doctor_lists_what_needs_a_longer_watch_beside_what_it_found(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the loader-bound GPU is busy 40 % of the time: under-used needs minutes to say so
    # (watching, listed); the starvation found decides the exit status
    args = ["doctor", "--demo", "loader-bound", "--gpus", "1", "--warmup", "0"]
    assert main([*args, "--duration", "40"]) == 1  # the starvation itself is found
    out = " ".join(capsys.readouterr().out.split())
    assert "watching (GPU 0): under-used: busy 4" in out and "not judged" not in out


def test_doctor_shorter_than_a_leaks_growth_window_is_watching_and_exits_4(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 46: 40 s of a leak minutes from out-of-memory said "nothing slows these GPUs
    down", exit 0, though memory growth is judged over a minute."""
    args = ["doctor", "--demo", "vram", "--gpus", "1", "--warmup", "0", "--duration", "40"]
    assert main(args) == 4
    out = " ".join(capsys.readouterr().out.split())
    assert "nothing slows" not in out
    assert "need a longer watch than the 40 s sampled" in out
    assert "watching (GPU 0): vram-pressure: GPU memory growing toward full" in out


def test_doctor_on_a_hung_job_names_the_rank_the_others_wait_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["doctor", "--demo", "hang", "--gpus", "4"]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "collective-hang (GPUs 0-3) Probable hang: the job's ranks wait in a collective" in out
    assert "for rank 3" in out and "straggler" not in out
    assert "py-spy dump --native --pid" in out and "NCCL_DEBUG=INFO" in out


def test_live_snapshot_in_the_first_seconds_does_not_say_no_findings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["snapshot", "--demo", "healthy", "--gpus", "1", "--warmup", "0"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["findings"] == [] and document["judgement"]["gathering"] is True
    report = tmp_path / "s.md"
    args = ["snapshot", "--demo", "healthy", "--gpus", "1", "--warmup", "0", "-o", str(report)]
    assert main(args) == 0
    text = report.read_text()
    assert "No findings" not in text
    assert "No verdict yet (still judging: 25 s to go, every rule needs 30 s of readings)" in text


def test_readme_and_the_catalogue_list_every_exit_status_as_doctor_means_it() -> None:
    from gputui.core.prose import DOCTOR_EXITS

    root = Path(__file__).resolve().parent.parent.parent
    for page in (root / "README.md", root / "docs" / "advisor.md"):
        text = page.read_text()
        for status, meaning in DOCTOR_EXITS:
            assert f"| {status} | {meaning} |" in text, (page.name, status)


def test_a_reader_that_goes_away_is_no_verdict() -> None:
    """`gputui doctor | head -1`: the reader leaves before the report is written. Rich
    exited 1 there, doctor's "warnings", so a gate that reads the status saw a verdict
    nobody reached; 141 (128 + SIGPIPE, as a shell says it) is none of them."""
    import subprocess
    import sys

    argv = [sys.executable, "-m", "gputui", "doctor", "--demo", "thermal", "--duration", "1"]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # the reader is gone before the first line
    err = child.stderr.read().decode()
    assert child.wait(timeout=60) == 141 and "Traceback" not in err, err


def test_a_live_snapshot_of_a_throttling_gpu_holds_the_finding(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A GPU at 91 °C with HW slowdown and thermal slowdown set, read live (the fake
    driver): the file attached to a ticket names it, though it was sampled for less than
    the live screen's hold (issue 50: "No verdict yet, still judging: 27 s to go")."""
    gpus = [FakeGpu(), FakeGpu(temperature=91, reasons=ce.HW_SLOWDOWN | ce.SW_THERMAL)]
    install(monkeypatch, driver(550, gpus))
    assert main(["snapshot", "--interval", "0.25"]) == 0
    document = json.loads(capsys.readouterr().out)
    found = {(f["rule"], f["gpu"]) for f in document["findings"]}
    assert ("hw-slowdown", 1) in found or ("thermal-throttle", 1) in found, found
    assert not any(gpu == 0 for _, gpu in found if gpu is not None)
    held = next(f for f in document["findings"] if f["gpu"] == 1)
    assert any("held through the whole sampled window" in line for line in held["evidence"])
    report = tmp_path / "s.md"
    assert main(["snapshot", "--interval", "0.25", "-o", str(report)]) == 0
    text = report.read_text()
    assert "GPU 1" in text and ("hw-slowdown" in text or "thermal-throttle" in text)
