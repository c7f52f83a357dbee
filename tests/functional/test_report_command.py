"""``gputui report`` as a user runs it: from recordings of every demo scenario, from a real
Prometheus server (Debian's ``prometheus``) scraping ``gputui export --demo``, and the page
opened by a real browser (Debian's ``chromium``, headless, the network off).

Where a binary is absent its test is skipped with the reason, except in CI (CI=true), where
that is a failure unless ``.ci/run`` could not install it and said why
(``GPUTUI_NO_CHROMIUM``)."""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.cli import EXIT_NO_SOURCE, EXIT_USAGE, main
from gputui.cli.report import report_command
from gputui.core import clock_events as ce
from gputui.exporters.report.accounting import CAUSES
from gputui.formats.recording import read_recording
from gputui.sources.simulated import SCENARIOS
from tests.browser import chromium, open_page
from tests.functional.test_record_replay import record_demo
from tests.servers import free_port, prometheus_binary, start_prometheus


def _table(markdown: str) -> dict[str, list[float]]:
    """The "where the time went" table: each GPU row's shares, in CAUSES order."""
    lines = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert lines[0] == "| GPU | " + " | ".join(c.label for c in CAUSES) + " |"
    out = {}
    for line in lines[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] in ("GPU-hours", "GPU-hours lost"):
            continue
        out[cells[0]] = [0.0 if c in ("-", "<0.1 %") else float(c.split()[0]) for c in cells[1:]]
    return out


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_report_from_each_scenarios_recording(
    scenario: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.jsonl.gz"
    record_demo(path, seconds=90, scenario=scenario, gpus=2)
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert page.startswith("<!doctype html>") and "Where the time went" in page
    assert "http://" not in page.split("<script>", 1)[0]  # nothing fetched from anywhere
    assert main(["report", str(path), "--format", "md"]) == 0
    table = _table(capsys.readouterr().out)
    assert len(table) == 3  # two GPUs and the two together
    for name, shares in table.items():
        assert sum(shares) == pytest.approx(100.0, abs=0.5), name


def _share_showing(path: Path, bits: int) -> float:
    """The share of a recording's wall time (%) whose ticks' reasons on GPU 0 show
    ``bits``: what the report must count under that throttle."""
    frames = [tick.frame for tick in read_recording(path).ticks]
    held = sum(
        b.time - a.time
        for a, b in itertools.pairwise(frames)
        if (a.gpus[0].clock_reasons or 0) & bits
    )
    return 100.0 * held / (frames[-1].time - frames[0].time)


def test_a_thermal_recordings_throttled_share_is_its_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "thermal.jsonl"
    record_demo(path, seconds=400, scenario="thermal", gpus=1)
    share = _share_showing(path, ce.THERMAL_BITS | ce.HW_SLOWDOWN)
    assert main(["report", str(path), "-o", str(tmp_path / "t.md")]) == 0
    table = _table((tmp_path / "t.md").read_text())
    (shares,) = table.values()
    assert shares[CAUSES.index(next(c for c in CAUSES if c.value == "thermal"))] == (
        pytest.approx(share, abs=0.05)
    )
    assert "thermally throttled, -" in (tmp_path / "t.md").read_text()


def test_record_prints_the_command_that_makes_its_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "night run.jsonl"
    args = ["record", "--demo", "powercap", "--gpus", "1", "--interval", "0.5"]
    assert main([*args, "--duration", "1.2", "-o", str(path)]) == 0
    said = capsys.readouterr().err
    command = re.search(r"its report: (gputui report .*)", said)
    assert command, said
    # the ticks it says it wrote, not the file's lines (a line holds a block of ticks)
    recorded = re.search(r"recorded (\d+) ticks", said)
    assert recorded, said
    assert int(recorded.group(1)) == len(read_recording(path).ticks) >= 2
    argv = shlex.split(command.group(1))
    assert argv[:3] == ["gputui", "report", str(path)]
    os.chdir(tmp_path)
    assert main(argv[1:]) == 0
    assert Path(argv[-1]).read_text().startswith("<!doctype html>")


def test_report_will_not_write_over_its_recording_nor_ignore_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`report t.jsonl -o t.jsonl` wrote the HTML over the run; --since/--until/--step/
    --match with a file were silently ignored (a report that reads as filtered is not)."""
    path = tmp_path / "-night.jsonl"  # a name that reads as an option unless written ./-
    args = ["record", "--demo", "thermal", "--gpus", "1", "--interval", "0.5"]
    assert main([*args, "--duration", "1.2", "-o", str(path)]) == 0
    capsys.readouterr()
    before = path.read_bytes()
    assert main(["report", str(path), "-o", str(path)]) == EXIT_USAGE
    assert "is the recording itself" in capsys.readouterr().err
    assert path.read_bytes() == before
    for option in (["--since=-8h"], ["--step", "5"], ["--match", 'job="x"']):
        assert main(["report", str(path), *option]) == EXIT_USAGE
        assert "not for a recording file" in capsys.readouterr().err
    os.chdir(tmp_path)
    argv = shlex.split(report_command(Path("-night.jsonl")))
    assert argv[2:] == ["./-night.jsonl", "-o", "./-night.report.html"]
    assert main(argv[1:]) == 0


def test_names_given_on_the_command_line_reach_the_terminal_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file name is outside text too (a glob can hand gputui any name): the messages
    that repeat it ("recording to", "recorded", "its report", "written to") show it
    cleaned, never an escape sequence for the terminal to act on."""
    path = tmp_path / "run\x1b[2J\x1b]0;owned\x07.jsonl"
    args = ["record", "--demo", "--gpus", "1", "--interval", "0.5", "--duration", "1.2"]
    assert main([*args, "-o", str(path)]) == 0
    assert main(["report", str(path), "-o", str(tmp_path / "r\x1b[31m.html")]) == 0
    err = capsys.readouterr().err
    assert "recorded" in err and "written to" in err and "\x1b" not in err and "\x07" not in err
    markdown = tmp_path / "r.md"
    assert main(["report", str(path), "-o", str(markdown)]) == 0
    assert "\x1b" not in markdown.read_text()


def test_report_refuses_what_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report"]) == EXIT_USAGE
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a recording\n")
    assert main(["report", str(bad)]) != 0
    assert main(["report", "--prometheus", "http://127.0.0.1:9", "--since", "x"]) == EXIT_USAGE
    assert main(["report", "--prometheus", "http://127.0.0.1:9"]) == EXIT_USAGE
    assert "--since" in capsys.readouterr().err


# -- a real Prometheus server scraping `gputui export --demo` -------------------------------


def _query(url: str, promql: str) -> list[dict[str, object]]:
    query = urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=2) as answer:
        return list(json.load(answer)["data"]["result"])


EXPORT = [sys.executable, "-m", "gputui", "export", "--demo", "thermal"]
EXPORT += ["--gpus", "2", "--interval", "1"]


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = prometheus_binary()
    export_port = free_port()
    exporter = subprocess.Popen(
        [*EXPORT, "--listen", f"127.0.0.1:{export_port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    work = tmp_path_factory.mktemp("prometheus")
    url, server = start_prometheus(binary, work, "gputui", [f"127.0.0.1:{export_port}"])
    try:
        deadline = time.monotonic() + 30
        while True:  # twelve seconds of two GPUs scraped
            try:
                counted = _query(url, "count_over_time(DCGM_FI_DEV_GPU_TEMP[1m])")
                if len(counted) == 2 and all(int(r["value"][1]) >= 12 for r in counted):  # type: ignore[index]
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("prometheus did not scrape gputui export within 30 s")
            time.sleep(0.5)
        yield url
    finally:
        for process in (server, exporter):
            process.terminate()
            process.wait(timeout=10)


def test_a_report_from_a_real_prometheus_server(
    prometheus: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["report", "--prometheus", prometheus, "--match", 'job="gputui"', "--since=-1m"]
    assert main([*base, "--step", "1", "--format", "md"]) == 0
    captured = capsys.readouterr()
    table = _table(captured.out)
    assert len(table) == 3
    for name, shares in table.items():
        assert sum(shares) == pytest.approx(100.0, abs=0.5), name
        assert shares[CAUSES.index(next(c for c in CAUSES if c.value == "not-running"))] < 100
    assert "read every 1 s from the server" in captured.out
    assert re.search(r"Wall time: \d+ s \(\d+ ticks, every 1 s\)", captured.out)
    page = tmp_path / "p.html"
    assert main([*base, "-o", str(page)]) == 0
    html = page.read_text()
    data = json.loads(html.split('id="gputui-data">', 1)[1].split("</script>", 1)[0])
    assert [g["index"] for g in data["gpus"]] == [0, 1]
    temps = data["gpus"][0]["charts"][2]["series"][0]["values"]
    assert [v for v in temps if v is not None]  # the scraped temperatures, drawn
    # the last 30 days of a server that holds a minute: that minute, at a fine step, not a
    # month at a coarse one (one reading in 2,600 s: "nothing found", and not running)
    month = ["report", "--prometheus", prometheus, "--match", 'job="gputui"', "--since=-30d"]
    assert main([*month, "--format", "md"]) == 0
    captured = capsys.readouterr()
    step = re.search(r"read every (\d+) s from the server", captured.out + captured.err)
    assert step and int(step.group(1)) <= 2, captured.err
    # a range with no readings at all says so, with its moments
    empty = ["report", "--prometheus", prometheus, "--since=-30d", "--until=-29d"]
    assert main(empty) == EXIT_NO_SOURCE
    assert "the range asked" in capsys.readouterr().err


# -- a real browser ---------------------------------------------------------------------------


def _browser() -> None:
    if chromium() is not None:
        return
    why = os.environ.get("GPUTUI_NO_CHROMIUM")
    if os.environ.get("CI") == "true" and not why:
        pytest.fail("CI must have chromium (.ci/run installs Debian's, or says why it could not)")
    pytest.skip(f"no chromium (apt-get install chromium){': ' + why if why else ''}")


CHECKS = {
    "canvases": "document.querySelectorAll('#charts canvas').length",
    "charts": "document.querySelectorAll('#charts .uplot').length",
    "rows": "document.querySelectorAll('.scroll table tbody tr').length",
    "pickers": "document.querySelectorAll('#gpu-picker button').length",
    "title": "document.title",
}


def test_the_page_opens_offline_in_a_real_browser(tmp_path: Path) -> None:
    _browser()
    path = tmp_path / "mix.jsonl.gz"
    record_demo(path, seconds=300, scenario="mix", gpus=4)
    page = tmp_path / "mix.html"
    assert main(["report", str(path), "-o", str(page)]) == 0
    result = open_page(page, CHECKS)
    assert result.requests == []  # the page asked for nothing
    assert result.errors == []
    values = result.values
    assert values["title"] == "gputui report: recording mix.jsonl.gz"
    assert values["pickers"] == 4 and values["rows"] == 4 + 1 + 2
    assert values["charts"] >= 7 and values["canvases"] >= values["charts"]
    assert result.screenshot.startswith(b"\x89PNG") and len(result.screenshot) > 50_000


def test_time_at_the_power_limit_is_power_capped_not_busy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two GPUs at their default limit, the SW power cap set and the SM clock a quarter down
    all run: the advisor calls it normal for the board (info), and the time is still power
    capped, as its reasons say (issue 50: 100 % "busy, unthrottled")."""
    path = tmp_path / "capped.jsonl"
    record_demo(path, seconds=300, scenario="at-power-limit", gpus=2)
    share = _share_showing(path, ce.SW_POWER_CAP)
    assert share > 90.0
    assert main(["report", str(path), "--format", "md"]) == 0
    text = capsys.readouterr().out
    table = _table(text)
    power = CAUSES.index(next(c for c in CAUSES if c.value == "power"))
    busy = CAUSES.index(next(c for c in CAUSES if c.value == "busy"))
    for name in ("0", "1"):
        row = next(shares for gpu, shares in table.items() if gpu.startswith(f"GPU {name}:"))
        assert row[power] == pytest.approx(share, abs=0.5), row
        assert row[busy] < 100.0 - share + 0.5, row
    assert "power capped, -2" in text  # the SM clock given up, 24 % of it
