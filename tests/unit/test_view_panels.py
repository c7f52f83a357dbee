"""The panels as view-model contents: rows with keys, every cut saying what it hides,
columns under headers. No app, no terminal."""

from __future__ import annotations

from dataclasses import replace

from gputui.core.config import Thresholds
from gputui.core.model import DeviceInfo, Finding, Frame, GpuSample, HostSample
from gputui.core.names import RuleId, Severity
from gputui.view.advisor import advisor
from gputui.view.cells import FindingKey, GpuKey, fit, plain_lines
from gputui.view.gpu_list import gpu_list
from gputui.view.header import HeaderState, header_row
from gputui.view.host_line import host_row

T = Thresholds()
NOW = 1_800_000_000.0


def _devices(n: int, name: str = "NVIDIA H100 80GB HBM3") -> tuple[DeviceInfo, ...]:
    return tuple(DeviceInfo(index=i, name=name) for i in range(n))


def _frame(n: int) -> Frame:
    gpus = tuple(GpuSample(index=i, util_gpu=90.0, temp_c=70.0, power_w=500.0) for i in range(n))
    return Frame(time=NOW, gpus=gpus)


def _finding(
    gpu: int | None, severity: Severity, rule: RuleId = RuleId.THERMAL_THROTTLE
) -> Finding:
    return Finding(
        rule=rule,
        severity=severity,
        gpu=gpu,
        title=f"{rule.value} on {gpu}",
        evidence=("90 °C, slowdown at 89 °C, shutdown at 92 °C",) * 2,
        remedies=("Check the server's airflow and fan curve; nothing may block the intake",),
        since=NOW - 90,
        updated=NOW,
    )


# -- GPU list --------------------------------------------------------------------------
def test_the_gpu_list_has_column_headers_and_a_key_per_row() -> None:
    panel = gpu_list(_frame(4), _devices(4), (), 0, 78, 20, T)
    lines = plain_lines(panel, 78)
    assert lines[0].split() == ["#", "NAME", "UTIL", "VRAM", "TEMP", "POWER"]
    assert [r.key for r in panel.rows[1:]] == [GpuKey(i) for i in range(4)]
    assert lines[1].startswith("▶0 H100 80GB HBM3")


def test_two_digit_indices_never_glue_to_the_name() -> None:
    lines = plain_lines(gpu_list(_frame(16), _devices(16), (), 12, 78, 40, T), 78)
    assert any(line.startswith("▶12 H100") for line in lines)
    assert any(line.startswith("  3 H100") for line in lines)
    assert not any("10H100" in line or "3H100" in line for line in lines)


def test_a_cut_list_says_how_many_gpus_it_hides_and_which_are_critical() -> None:
    findings = (_finding(14, Severity.CRITICAL), _finding(1, Severity.WARNING))
    panel = gpu_list(_frame(16), _devices(16), findings, 0, 78, 8, T)
    lines = plain_lines(panel, 78)
    assert len(lines) == 8
    assert lines[-1] == "+10 GPUs, 1 critical ↓"
    shown = [r.key for r in panel.rows if isinstance(r.key, GpuKey)]
    assert len(shown) + 10 == 16


def test_the_selected_gpu_stays_in_view_with_markers_both_ways() -> None:
    panel = gpu_list(_frame(16), _devices(16), (), 9, 78, 8, T)
    lines = plain_lines(panel, 78)
    assert lines[1].startswith("↑ +") and lines[-1].endswith("↓")
    assert any(line.startswith("▶9 ") or line.startswith("▶ 9 ") for line in lines)
    hidden = sum(int(line.split("+")[1].split()[0]) for line in (lines[1], lines[-1]))
    assert hidden + sum(1 for r in panel.rows if isinstance(r.key, GpuKey)) == 16


def test_long_names_end_in_an_ellipsis() -> None:
    devices = _devices(2, "NVIDIA GeForce RTX 4090 Laptop GPU with a very long name")
    lines = plain_lines(gpu_list(_frame(2), devices, (), 0, 54, 10, T), 54)
    assert "…" in lines[1] and all(len(line) <= 54 for line in lines)


# -- advisor ---------------------------------------------------------------------------
def test_critical_findings_are_never_the_part_cut() -> None:
    findings = (
        _finding(1, Severity.CRITICAL),
        _finding(2, Severity.CRITICAL, RuleId.VRAM_PRESSURE),
        *(_finding(i, Severity.WARNING, RuleId.POWER_CAP) for i in range(3, 9)),
    )
    # the user moved to the last (warning) finding; the pane has four lines
    panel = advisor(findings, 7, NOW, False, 78, 4)
    keys = [r.key for r in panel.rows if isinstance(r.key, FindingKey)]
    assert {k.gpu for k in keys} >= {1, 2, 8}
    assert plain_lines(panel, 78)[-1].startswith("+5 findings")
    assert panel.title == "Advisor (8 findings, 2 critical)"


def test_a_hidden_critical_is_counted_in_the_cut() -> None:
    findings = tuple(_finding(i, Severity.CRITICAL) for i in range(5))
    lines = plain_lines(advisor(findings, 0, NOW, False, 78, 3), 78)
    assert lines[-1].startswith("+3 findings, 3 critical")


def test_evidence_and_remedies_wrap_inside_the_pane() -> None:
    finding = _finding(1, Severity.CRITICAL)
    lines = plain_lines(advisor((finding,), 0, NOW, False, 40, 20), 40)
    remedy = [i for i, line in enumerate(lines) if line.startswith("  → ")]
    assert remedy and lines[remedy[0] + 1].startswith("    ")  # the hanging indent
    assert all(len(line) <= 40 and line == line.rstrip() for line in lines)
    assert not any("Do: Do" in line for line in lines)


def test_the_advisor_says_it_is_gathering_instead_of_all_clear() -> None:
    lines = plain_lines(advisor((), 0, NOW, False, 78, 5, gathering="gathering: 4 s of 10 s"), 78)
    assert lines[0] == "gathering: 4 s of 10 s" and "✓" not in "".join(lines)
    calm = plain_lines(advisor((), 0, NOW, False, 78, 5), 78)
    assert calm[0].startswith("✓ nothing slows")


# -- header and host line --------------------------------------------------------------
def _header(**fields: object) -> HeaderState:
    base = HeaderState(
        hostname="node-7",
        driver="550.54.15",
        cuda="12.4",
        gpus=8,
        interval_s=1.0,
        age_s=0.0,
        stale=False,
        source="NVML",
        source_detail=None,
        live=True,
        paused=False,
        findings=0,
    )
    return replace(base, **fields)  # type: ignore[arg-type]


def test_the_source_is_always_in_the_header_even_at_40_columns() -> None:
    for state in (_header(), _header(source="REPLAY 2x", live=False, position="3 min of 45 min")):
        plain = "".join(c.text for c in header_row(state).cells)
        assert state.source in plain
        narrow = "".join(c.text for c in fit(header_row(state).cells, 40))
        assert state.source in narrow
    stale = _header(age_s=30.0, stale=True, error="NVMLError: GPU is lost")
    narrow = "".join(c.text for c in fit(header_row(stale).cells, 60))
    assert "STALE" in narrow


def test_the_host_line_reads_like_nvitops() -> None:
    host = HostSample(
        cpu_percent=58.0,
        cpu_count=64,
        load_1=37.4,
        load_5=35.2,
        load_15=33.4,
        mem_total=2 << 40,
        mem_available=(2 << 40) - (435 << 30),
        swap_total=8 << 30,
        swap_used=0,
        uptime_s=3 * 86400 + 4 * 3600 + 60,
    )
    text = host_row(host, NOW, T).plain
    for part in ("CPU", "58 %", "MEM 435.0 GiB of 2.0 TiB", "SWAP", "load 37.40", "up 3 d 04 h"):
        assert part in text
    assert "no readings" in host_row(None, NOW, T).plain


# -- overview --------------------------------------------------------------------------
def test_overview_cards_that_do_not_fit_are_counted_and_clicks_find_their_gpu() -> None:
    from gputui.core.judgement import Judgement
    from gputui.sampling.history import History
    from gputui.view.cells import CardsKey
    from gputui.view.overview import overview
    from gputui.view.timeline import Timeline

    frame = _frame(16)
    history = History(60)
    history.add(frame)
    findings = (_finding(15, Severity.CRITICAL),)
    judged = Judgement(seen_s=60.0, needed_s=10.0, readings=60)
    panel = overview(
        frame, _devices(16), findings, history, Timeline(), judged, 0, 80, 20, T, 60, 1.0
    )
    lines = plain_lines(panel, 80)
    assert len(lines) <= 20
    assert lines[-1].startswith("+") and "1 critical" in lines[-1]
    key = panel.rows[0].key
    assert isinstance(key, CardsKey) and key.gpus == (0, 1)
    assert key.gpu_at(0) == 0 and key.gpu_at(key.card_width + 1) == 1
    assert key.gpu_at(2 * key.card_width + 1) is None


def test_a_critical_is_never_crowded_out_by_a_clusters_notes() -> None:
    from gputui.core.model import Finding
    from gputui.core.names import RuleId, Severity

    critical = Finding(RuleId.THERMAL_THROTTLE, Severity.CRITICAL, 3, "Thermal", (), (), 0, 1)
    notes = [f"node node-{i:02d} stopped reporting" for i in range(30)]
    panel = advisor([critical], 0, 1.0, False, 78, 8, notes=notes)
    text = [" ".join(c.text for c in row.cells) for row in panel.rows]
    assert len(text) <= 8 and any("Thermal" in line for line in text)
    assert any("and 29 more notes" in line for line in text)


def test_a_short_pane_still_says_how_many_findings_it_hides() -> None:
    """80x24 leaves the advisor two lines: a finding and a node's notes took them, and the
    '+3 findings' line was the one cut, so three findings went unsaid."""
    from gputui.core.model import Finding
    from gputui.core.names import RuleId, Severity

    findings = [
        Finding(RuleId.THERMAL_THROTTLE, Severity.WARNING, i, f"Thermal {i}", (), (), 0, 1)
        for i in range(4)
    ]
    notes = ["node b is down: refused", "remote source: no process readings", "node c late"]
    for height in (2, 3):
        panel = advisor(findings, 0, 1.0, False, 78, height, notes=notes)
        text = [" ".join(c.text for c in row.cells) for row in panel.rows]
        assert len(text) <= height and "Thermal 0" in text[0]
        assert text[1].startswith("+3 findings"), text
    text = [
        " ".join(c.text for c in r.cells)
        for r in advisor(findings, 0, 1.0, False, 78, 3, notes=notes).rows
    ]
    assert text[2].startswith("! 3 notes")  # none shown: not "and 3 more"


def test_a_lowered_power_limit_is_the_last_thing_a_narrow_detail_drops() -> None:
    """At 120 columns the detail pane is half the screen: the power row's extras went as
    one cell, and with them the one fact that explains a power cap (the limit is below
    the board's default). It now goes after the P-state, never before."""
    from dataclasses import replace

    from gputui.core.config import Thresholds
    from gputui.view.cells import fit
    from gputui.view.detail import _power
    from tests.advisor_kit import BUSY, H100

    capped = replace(BUSY, power_w=489.0, power_limit_w=490.0, pstate=0)
    kept = set()
    for width in range(30, 100):
        shown = "".join(c.text for c in fit(_power(capped, H100, width, Thresholds()).cells, width))
        assert "P0" not in shown or "lowered from 700 W" in shown, width
        kept.add(("lowered" in shown, "P0" in shown))
    assert (True, False) in kept  # a width where only the lowered limit stays
    normal = _power(replace(capped, power_limit_w=700.0), H100, 58, Thresholds())
    assert "default 700 W" in "".join(c.text for c in normal.cells)


def test_a_gpu_list_with_one_or_two_lines_still_shows_the_selected_gpu() -> None:
    """64 GPUs at 80x24 leave the list one or two lines: the '↑ +10 GPUs' marker took
    them and the selected GPU's row was cut. The row stays; the counts go in the title."""
    for height in (1, 2, 3):
        panel = gpu_list(_frame(64), _devices(64), (), 10, 78, height, T)
        lines = plain_lines(panel, 78)
        assert len(panel.rows) <= height
        assert any("▶10" in line.replace(" ", "") for line in lines), lines
        assert "↑10 ↓53" in panel.title


def test_a_verdict_still_watching_keeps_the_pane_from_its_all_clear() -> None:
    """A slow leak seen for 40 s (its growth rule needs a minute): the pane says what it
    is watching, never that nothing slows these GPUs down."""
    from gputui.view.choices import Choices
    from gputui.view.screen import ScreenView
    from tests.factories import demo_monitor

    monitor = demo_monitor("vram", 40, gpus=1)
    assert monitor.judgement.watching and not monitor.findings
    panel = ScreenView().contents(monitor, Choices(), 1.0, 120, 40).advisor
    assert panel is not None
    text = "\n".join(plain_lines(panel, 118))
    assert "watching (GPU 0): vram-pressure" in text
    assert "nothing slows" not in text
