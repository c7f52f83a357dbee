"""The text surfaces' layout: hanging indents, no trailing spaces, no markup read from
outside text, table rows whole, and history that is simulated called simulated."""

from __future__ import annotations

import dataclasses
import io
import re
from typing import Any

import pytest
from rich.cells import cell_len
from rich.console import Console

from gputui.advisor import make_monitor
from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import DeviceInfo, Frame, GpuSample, Note, SourceInfo
from gputui.core.names import NoteKind, SourceKind
from gputui.core.prose import simulated_span, spans, starts_no_unit, wrap
from gputui.exporters.doctor import render_report, report_lines, sampled_text, wrapped
from gputui.exporters.markdown import WIDTH, markdown_report, may_start_line
from gputui.formats.snapshot import snapshot_of
from gputui.sampling.monitor import Monitor
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from tests.factories import demo_monitor

ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: what Rich markup of gputui's own styles would look like, leaked
MARKUP = re.compile(r"\[/?(bold|dim|red|yellow|green|cyan|italic)?\b[^\]]*\]|\[/\]")
LONG = (
    "clock events: thermal slowdown (HW), thermal slowdown (SW), set in 100 % of the last "
    "30 s while the fans ran at 100 % and the room was warm"
)


def _printed(monitor: Monitor, width: int = 80, **kw: float) -> list[str]:
    out = io.StringIO()
    render_report(monitor, Console(file=out, width=width), **kw)
    return out.getvalue().splitlines()


def _assert_laid_out(lines: list[str], width: int) -> None:
    for line in lines:
        assert line == line.rstrip(), f"trailing space: {line!r}"
        assert cell_len(line) <= width, f"{cell_len(line)} > {width}: {line!r}"


# -- prose: the wrapping both reports share -------------------------------------------
def test_wrap_hangs_continuations_under_the_text_after_the_bullet() -> None:
    lines = wrap(f"    · {LONG}", 40, 6)
    assert len(lines) > 2
    assert lines[0].startswith("    · clock events:")
    for line in lines[1:]:
        assert line.startswith("      ") and line[6] != " ", line
    _assert_laid_out(lines, 40)
    assert " ".join(line.strip().removeprefix("· ") for line in lines) == LONG


def test_wrap_never_breaks_inside_the_label() -> None:
    text = "CRITICAL thermal-throttle (GPU 1) title words"
    whole = wrap(text, 12, 9, cut_long_words=False)
    assert whole[0] == "CRITICAL thermal-throttle"  # past the width, but never "CRITICAL"
    assert wrap(text, 30, 9) == ["CRITICAL thermal-throttle (GPU", "         1) title words"]


def test_a_long_word_is_cut_on_a_terminal_and_kept_whole_in_markdown() -> None:
    word = "A" * 50
    cut = wrap(f"- {word} end", 20, 2)
    assert all(cell_len(line) <= 20 for line in cut) and "".join(cut).count("A") == 50
    whole = wrap(f"- {word} end", 20, 2, cut_long_words=False)
    assert whole == [f"- {word}", "  end"]


def test_wide_characters_count_as_two_columns() -> None:
    lines = wrap("名前 " * 20, 21, 0)
    assert all(cell_len(line) <= 21 for line in lines)


def test_a_unit_stays_with_its_number() -> None:
    text = "full in about 1 min 23 s at that rate (-31 %) of 79.6 GiB"
    for width in range(12, 40):
        for a, b in spans(text, width, 2, may_start=starts_no_unit)[1:]:
            first = text[a:b].split(" ")[0]
            assert starts_no_unit(first), (width, text[a:b])


def test_simulated_span_never_says_sampled() -> None:
    assert simulated_span(122, 120) == (
        "simulated 2 s after 2 min 00 s of simulated warm-up (demo: nothing sampled live)"
    )
    assert (
        simulated_span(120, 120) == "simulated 2 min 00 s of warm-up (demo: nothing sampled live)"
    )
    assert simulated_span(3, 0) == "simulated 3 s (demo: nothing sampled live)"
    assert "sampled 2" not in simulated_span(122, 120)


# -- doctor ---------------------------------------------------------------------------
def test_doctor_report_fits_80_columns_with_hanging_indents() -> None:
    lines = _printed(demo_monitor("mix", seconds=90))
    _assert_laid_out(lines, 80)
    text = "\n".join(lines)
    assert not MARKUP.search(text), MARKUP.search(text)
    evidence = [i for i, line in enumerate(lines) if line.startswith("    · ")]
    assert evidence
    continued = 0
    for i, line in enumerate(lines):
        if i and lines[i - 1].startswith(("    · ", "    → ")) and line.startswith("      "):
            continued += 1
            assert line[6] != " "
        if line.startswith(("CRITICAL ", "WARNING  ", "INFO     ")):
            for nxt in lines[i + 1 :]:
                if nxt.startswith("    "):
                    break
                assert nxt.startswith(" " * 9) and nxt[9] != " ", nxt  # under the rule id
    assert continued, "nothing wrapped: the test shows nothing"
    # every line that starts at the margin is one the report starts there
    starts = (
        *("gputui doctor", "mix", "GPU ", "CRITICAL", "WARNING", "INFO", "verdict: "),
        *("not judged", "not applicable", "watching", "still judging"),
    )
    for line in lines:
        if line and not line.startswith(" "):
            assert line.startswith(starts) or re.match(r"\d+ ", line), line


def test_doctor_table_keeps_its_clock_events_column_when_wide() -> None:
    monitor = demo_monitor("mix", seconds=90)
    wide = _printed(monitor, 160)
    _assert_laid_out(wide, 160)
    assert any(line.startswith("GPU") and line.endswith("clock events") for line in wide)
    narrow = _printed(monitor, 80)
    table = next(line for line in narrow if line.startswith("GPU "))
    assert "clock events" not in table  # each GPU's clock events on a line under its row
    assert any(line.startswith("     clock events: HW thermal") for line in narrow)


@pytest.mark.parametrize("width", [32, 50, 80, 120])
def test_doctor_prose_lines_fit_any_width(width: int) -> None:
    lines = [line.plain for line in report_lines(demo_monitor("mix", seconds=90), width)]
    table_rows = {i for i, line in enumerate(lines) if re.match(r"\d+ {2,}\S", line)}
    for i, line in enumerate(lines):
        assert line == line.rstrip()
        if i not in table_rows and not line.startswith("GPU "):
            assert cell_len(line) <= width, (width, line)


def test_doctor_with_colour_still_ends_no_line_with_a_space() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system="standard")
    render_report(demo_monitor("thermal", seconds=60, gpus=1), console)
    assert "\x1b[" in out.getvalue()  # styled
    for line in ANSI.sub("", out.getvalue()).splitlines():
        assert line == line.rstrip(), repr(line)
        assert not MARKUP.search(line), line


NOTE = Note(NoteKind.RULES_BLIND, "a note that says [bold]not bold[/] and [x] " * 4)


def _named(
    names: tuple[str, ...],
    seconds: int = 40,
    scenario: str = "thermal",
    notes: tuple[Note, ...] = (NOTE,),
) -> Monitor:
    """A monitor over the simulation whose GPUs are called ``names``."""
    clock = ManualClock(1_800_000_000.0)
    source = SimulatedSource(resolve_scenarios(scenario, len(names)), clock=clock)
    devices = tuple(
        dataclasses.replace(d, name=n) for d, n in zip(source.open(), names, strict=True)
    )
    info = SourceInfo("SIMULATED", SourceKind.SIMULATED, scenario)
    monitor = make_monitor(devices, Config(), info)
    for _ in range(seconds):
        monitor.ingest(dataclasses.replace(source.read(), notes=notes))
        clock.advance(1.0)
    return monitor


def test_outside_text_prints_literally_in_doctor() -> None:
    names = ("Lab [x] GPU", "[bold red]loud[/bold red]", "[/]")
    monitor = _named(names)
    wide = " ".join(_printed(monitor, 200))
    for name in names:
        assert name in wide, name
    lines = _printed(monitor, 80)
    _assert_laid_out(lines, 80)
    text = " ".join(" ".join(lines).split())
    assert "[/]" in text and "[bold]not bold[/] and [x]" in text
    notes = [i for i, line in enumerate(lines) if line.startswith("! ")]
    continuation = lines[notes[0] + 1]
    assert continuation.startswith("  ") and continuation[2] != " "  # under the text after '! '


def test_doctor_calls_the_demo_history_simulated() -> None:
    monitor = demo_monitor("healthy", seconds=123, gpus=1)
    assert sampled_text(monitor) == "sampled 2 min 02 s"  # what a live source sampled
    said = sampled_text(monitor, simulated_warmup_s=120)
    assert said.startswith("simulated 2 s after 2 min 00 s of simulated warm-up")
    text = " ".join(" ".join(_printed(monitor, simulated_warmup_s=120)).split())
    assert "sampled 2 min" not in text and "nothing sampled live" in text
    assert "nothing slows these GPUs down right now (over the 2 min 02 s of simulated" in text


def test_a_live_source_says_sampled() -> None:
    device = DeviceInfo(index=0, name="NVIDIA A100-SXM4-80GB")
    monitor = make_monitor((device,), Config(), SourceInfo("NVML", SourceKind.LIVE))
    for t in range(11):
        monitor.ingest(Frame(time=1000.0 + t, gpus=(GpuSample(index=0, util_gpu=50),)))
    # a warm-up given for a source that is not the simulation changes nothing
    assert sampled_text(monitor, simulated_warmup_s=120) == "sampled 10 s"


def test_wrapped_keeps_styles() -> None:
    from rich.text import Text

    line = Text.assemble(("CRITICAL", "bold red"), " rule ", "word " * 30)
    pieces = wrapped(line, 40, 9)
    assert pieces[0].spans[0].style == "bold red"
    assert all(p.plain.startswith(" " * 9) for p in pieces[1:])


# -- the Markdown report --------------------------------------------------------------
def _document(notes: tuple[Note, ...] = (), seconds: int = 90) -> dict[str, Any]:
    """The snapshot document of the mix, its findings included, GPU 0 named by outside
    text and every frame carrying ``notes``."""
    monitor = _named(("Lab [x] GPU *big*", "H100", "H100", "H100"), seconds, "mix", notes)
    return snapshot_of(monitor)


def _check_markdown(report: str) -> list[str]:
    """Every line: no trailing space; a table row whole; a continuation under its item's
    text; nothing past ``WIDTH`` but an unbreakable word."""
    lines = report.splitlines()
    item = 0
    for line in lines:
        assert line == line.rstrip(), f"trailing space: {line!r}"
        if line.startswith("|"):
            assert line.endswith("|")  # a row on one line
            continue
        if cell_len(line) > WIDTH:
            assert " " not in line.strip().removeprefix("- "), line  # one unbreakable word
        stripped = line.lstrip(" ")
        if stripped.startswith("- "):
            item = len(line) - len(stripped) + 2
        elif line.startswith(" "):
            assert item and line.startswith(" " * item) and line[item] != " ", line
        else:
            item = 0
    return lines


def test_markdown_wraps_list_items_under_their_text_and_rows_never() -> None:
    lines = _check_markdown(markdown_report(_document()))
    rows = [line for line in lines if line.startswith("| ")]
    assert len(rows) >= 2 + 4 and any(cell_len(row) > WIDTH for row in rows)
    assert any(line.startswith("    ") for line in lines)  # a nested item continued
    assert any(re.match(r"  \S", line) for line in lines)  # a top item continued
    assert "Lab \\[x\\] GPU \\*big\\*" in "\n".join(rows)  # outside text literal in Markdown


def test_markdown_never_starts_a_wrapped_line_with_a_list_marker() -> None:
    for pad in range(30):
        text = "x" * pad + " word" * 12 + " - 1. 2) + = --- end"
        report = markdown_report(_document((Note(NoteKind.RULES_BLIND, text),), seconds=3))
        notes = report.split("## Notes", 1)[1].splitlines()
        for line in notes:
            assert line == line.rstrip()
            if line.startswith("  "):
                first = line.split()[0]
                assert may_start_line(first), (pad, line)


def test_may_start_line() -> None:
    for word in ("-", "+", "*", "1.", "12)", "===", "---", "s", "%", "GiB,"):
        assert not may_start_line(word), word
    for word in ("--password", "-31", "1.5", "word", "2x"):
        assert may_start_line(word), word


def test_markdown_history_line_says_simulated_for_the_demo() -> None:
    document = _document(seconds=121)
    document["findings"] = []
    assert "- History: 121 points over 2 min 00 s" in markdown_report(document)
    demo = " ".join(markdown_report(document, simulated_warmup_s=120).split())
    assert "- History: 121 points, simulated 2 min 00 s of warm-up" in demo
    assert "nothing sampled live" in demo


def test_markdown_verdict_is_a_paragraph_not_the_last_items_continuation() -> None:
    lines = _check_markdown(markdown_report(_document(seconds=3)))
    verdict = next(i for i, line in enumerate(lines) if line.startswith("No verdict yet"))
    assert lines[verdict - 1] == ""


def test_markdown_remedies_never_double_a_word() -> None:
    """Remedies are imperatives ('Do augmentation on the GPU'): no 'Do: Do'."""
    report = markdown_report(snapshot_of(demo_monitor("mix", 120, gpus=8)))
    remedies = [line for line in report.splitlines() if line.startswith("  - → ")]
    assert remedies and not any("Do: " in line for line in report.splitlines())


# -- remedies to copy --------------------------------------------------------------------
@pytest.mark.parametrize("scenario", ["powercap", "numa", "vram", "starved", "nvlink-down"])
def test_markdown_remedy_commands_are_whole_code_spans(scenario: str) -> None:
    """A command or a piece of code in a remedy copies as it reads: in backticks, nothing
    escaped inside, never broken across two lines."""
    report = markdown_report(snapshot_of(demo_monitor(scenario, seconds=90, gpus=2)))
    spans_found = re.findall(r"`([^`\n]+)`", report)
    assert spans_found, "the remedies name no command"
    for code in spans_found:
        assert "\\" not in code, code
    for line in report.splitlines():
        assert line.count("`") % 2 == 0, line


def test_known_commands_and_code_are_recognised_and_prose_is_not() -> None:
    from gputui.exporters.code_spans import code_span, pieces

    def code(text: str) -> list[str]:
        return [p for p, is_code in pieces(text) if is_code]

    assert code(
        "Check the limit: nvidia-smi -i 0 -q -d POWER; restore it: sudo nvidia-smi -i 0 -pl 700"
    ) == [
        "nvidia-smi -i 0 -q -d POWER",
        "sudo nvidia-smi -i 0 -pl 700",
    ]
    assert code("Load in workers: DataLoader(num_workers=N) with N cores") == [
        "DataLoader(num_workers=N)"
    ]
    assert code("Use pinned memory (pin_memory=True) and .to(device, non_blocking=True)") == [
        "pin_memory=True",
        ".to(device, non_blocking=True)",
    ]
    assert code("Only this GPU is hot (90 °C, its 3 peer(s) 69 °C): check dmesg for Xid 79") == []
    assert code("Under Slurm: srun --cpu-bind=cores (or --cpus-per-gpu)") == [
        "srun --cpu-bind=cores"
    ]
    assert code_span("a`b") == "``a`b``" and code_span("`x") == "`` `x ``"
