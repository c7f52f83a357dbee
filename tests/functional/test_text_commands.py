"""The text surfaces as a pipe or a file sees them: `gputui doctor` and `gputui snapshot
--format markdown` run as commands, their output read line by line."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.cells import cell_len

from gputui.cli import EXIT_NO_SOURCE, main
from tests.nvml_double import FakeNvmlLib, install

ROOT = Path(__file__).resolve().parents[2]
#: gputui's own styles, had they leaked as Rich markup
MARKUP = re.compile(r"\[/?(bold|dim|red|yellow|green|cyan)\b[^\]]*\]|\[/\]")


def _gputui(*args: str, columns: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "LINES")}
    if columns is not None:
        env["COLUMNS"] = columns
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "gputui", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def _assert_clean(text: str) -> list[str]:
    lines = text.splitlines()
    assert lines
    for line in lines:
        assert line == line.rstrip(), f"trailing space: {line!r}"
        assert "\x1b" not in line  # a pipe gets no colour
        assert not MARKUP.search(line), line
    return lines


def _hanging(lines: list[str], bullet: str, indent: int) -> int:
    """Check that a line continuing one that starts with ``bullet`` starts its text
    exactly at ``indent``; return how many there were."""
    seen = 0
    for above, line in itertools.pairwise(lines):
        if above.startswith(bullet) and line.startswith(" " * (len(bullet) - 1)):
            if line.lstrip().startswith(bullet.strip()):
                continue  # the next bullet
            assert line.startswith(" " * indent) and line[indent] != " ", (above, line)
            seen += 1
    return seen


def test_doctor_piped_wraps_at_80_columns_with_hanging_indents() -> None:
    run = _gputui("doctor", "--demo", "--duration", "2")
    assert run.returncode in (1, 2), run.stderr
    lines = _assert_clean(run.stdout)
    assert max(cell_len(line) for line in lines) <= 80
    assert max(cell_len(line) for line in lines) > 70  # it does use the width
    assert _hanging(lines, "    · ", 6) + _hanging(lines, "    → ", 6) > 0
    title = next(i for i, line in enumerate(lines) if line.startswith("CRITICAL "))
    assert lines[title + 1].startswith(" " * 9) and lines[title + 1][9] != " "
    assert lines[1].startswith(" " * 15) and lines[1][15] != " "  # header: under "source"


def test_doctor_piped_follows_columns() -> None:
    run = _gputui("doctor", "--demo", "--duration", "2", columns="120")
    lines = _assert_clean(run.stdout)
    assert 80 < max(cell_len(line) for line in lines) <= 120
    assert any(line.endswith("clock events") for line in lines)  # the table's own column


def test_doctor_demo_does_not_call_simulated_history_sampled() -> None:
    started = time.monotonic()
    run = _gputui("doctor", "--demo", "healthy", "--gpus", "1", "--duration", "2")
    took = time.monotonic() - started
    text = " ".join(run.stdout.split())
    assert run.returncode == 0, run.stderr
    # all of it is simulated at once: no claim of minutes sampled
    assert "sampled 2 min" not in text and not re.search(r"\bsampled \d", text)
    assert "simulated 2 s after 2 min 00 s of simulated warm-up (demo: nothing sampled live)" in (
        text
    )
    assert "nothing slows these GPUs down right now (over the 2 min 02 s of simulated" in text
    assert took < 120  # a bound for the machine, not the claim: the claim is the words


def test_doctor_demo_without_warmup_says_simulated_too() -> None:
    run = _gputui("doctor", "--demo", "healthy", "--gpus", "1", "--duration", "3", "--warmup", "0")
    text = " ".join(run.stdout.split())
    assert "simulated 3 s (demo: nothing sampled live)" in text


@pytest.mark.parametrize("to_file", [True, False])
def test_snapshot_markdown_rows_whole_and_items_hanging(to_file: bool, tmp_path: Path) -> None:
    target = tmp_path / "state.md"
    args = ["snapshot", "--demo", "--format", "markdown"]
    run = _gputui(*args, *(["-o", str(target)] if to_file else []))
    assert run.returncode == 0, run.stderr
    text = target.read_text() if to_file else run.stdout
    lines = _assert_clean(text)
    rows = [line for line in lines if line.startswith("|")]
    assert len(rows) == 2 + 4 + 2 + 4  # GPUs and processes: header, rule, one line each
    assert all(row.endswith("|") for row in rows)
    item = 0
    for line in lines:
        if line.startswith("|"):
            continue
        stripped = line.lstrip(" ")
        if stripped.startswith("- "):
            item = len(line) - len(stripped) + 2
        elif line.startswith(" "):
            assert line.startswith(" " * item) and line[item] != " ", line
        else:
            item = 0
        assert cell_len(line) <= 80 or " " not in stripped.removeprefix("- "), line
    joined = " ".join(text.split())
    assert "simulated 2 min 00 s of warm-up (demo: nothing sampled live)" in joined


def test_doctor_json_without_a_driver_is_one_json_document(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install(monkeypatch, None)
    assert main(["doctor", "--json"]) == EXIT_NO_SOURCE
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert document["exit_status"] == EXIT_NO_SOURCE
    assert document["devices"] == [] and document["findings"] == []
    assert "No NVIDIA driver" in document["error"]
    assert "No NVIDIA driver" in err  # a person reading the terminal is told too


def test_doctor_json_with_no_readable_gpu_is_one_json_document(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install(monkeypatch, FakeNvmlLib([]))
    assert main(["doctor", "--json", "--duration", "0"]) == EXIT_NO_SOURCE
    document = json.loads(capsys.readouterr().out)
    assert document["devices"] == [] and document["error"]


def test_doctor_json_subprocess_stdout_is_only_json_when_no_gpu_is_read() -> None:
    # a remote source that cannot be reached: no GPU, on any machine
    run = _gputui("doctor", "--json", "--source", "http://127.0.0.1:9/metrics", "--duration", "0")
    assert run.returncode == EXIT_NO_SOURCE, run.stderr
    document = json.loads(run.stdout)
    assert document["exit_status"] == EXIT_NO_SOURCE and document["error"]
    assert run.stderr.startswith("gputui: ")
