"""Pure drawing: frames, history and findings in, lines of rich Text out.

Nothing here touches Textual, NVML or psutil, so every panel is cheap to test and the
app decides only *when* to draw (visible panels, changed lines).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.text import Text

from gputui.advisor import RULES
from gputui.advisor.coverage import Judgement, judge_coverage
from gputui.clock_events import REASONS, describe_reasons
from gputui.config import Thresholds
from gputui.model import DeviceInfo, Finding, Frame, GpuSample, ProcessSample
from gputui.names import Metric, Severity
from gputui.pcie import link_bandwidth
from gputui.sampling.history import History
from gputui.sanitize import mask_secrets
from gputui.units import (
    NA,
    fmt_age,
    fmt_bytes,
    fmt_duration,
    fmt_link,
    fmt_num,
    fmt_of,
    fmt_rate,
    known,
    short_name,
)
from gputui.xid import describe_xid

BLOCKS = " ▏▎▍▌▋▊▉█"
SPARKS = "▁▂▃▄▅▆▇█"
SEVERITY_MARK = {Severity.CRITICAL: "✖", Severity.WARNING: "▲", Severity.INFO: "●"}


@dataclass(frozen=True, slots=True)
class Palette:
    """Colours with meaning, taken from the Textual theme, and the advisor's thresholds
    that decide which meaning a reading gets (the config's, never numbers of our own)."""

    ok: str = "#4EBF71"
    warn: str = "#FEA62B"
    crit: str = "#B93C5B"
    accent: str = "#0178D4"
    bar_bg: str = "#333333"
    limits: Thresholds = field(default_factory=Thresholds)

    def vram(self, used_pct: float | None) -> str:
        return level_style(
            used_pct, self.limits.vram_warning_pct, self.limits.vram_critical_pct, self
        )

    def power(self, share_of_limit: float | None) -> str:
        return level_style(share_of_limit, self.limits.power_at_limit, 2.0, self)

    def pcie(self, share_of_link: float | None) -> str:
        return level_style(share_of_link, self.limits.pcie_saturated, 2.0, self)

    def gil_bound(self, cpu_percent: float | None) -> bool:
        """A process near one full core: the signature of a GIL-bound loader."""
        bound = self.limits.cpu_bound_pct
        return cpu_percent is not None and bound <= cpu_percent <= self.limits.cpu_bound_max_pct

    def severity(self, severity: Severity) -> str:
        if severity is Severity.CRITICAL:
            return self.crit
        return self.warn if severity is Severity.WARNING else self.accent


def bar(fraction: float | None, width: int, style: str, bg: str) -> Text:
    """A horizontal bar with eighth-block resolution; empty track when unknown."""
    if width <= 0:
        return Text()
    if fraction is None or math.isnan(fraction):
        return Text("·" * width, style="dim")
    fraction = min(1.0, max(0.0, fraction))
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    cells = "█" * full
    if full < width:
        cells += (BLOCKS[part] if part else "") + " " * (width - full - (1 if part else 0))
    # One style for the whole bar (blocks in the colour, the rest on the track): one
    # segment instead of three, which is what a repaint pays for.
    return Text(cells, style=f"{style} on {bg}")


def sparkline(values: Sequence[float], width: int, top: float | None, style: str) -> Text:
    """The newest ``width`` values as block characters; gaps (NaN) as spaces."""
    if width <= 0:
        return Text()
    tail = list(values[-width:])
    known = [v for v in tail if v == v]
    if not known:
        return Text(" " * width)
    high = top if top else max(known)
    top_level = len(SPARKS) - 1
    scale = top_level / (high or 1.0)
    # Clamped before int(): an infinite or negative reading draws full or empty.
    chars = "".join(
        SPARKS[int(min(top_level, max(0.0, v * scale + 0.5)))] if v == v else " " for v in tail
    )
    return Text(" " * (width - len(tail)) + chars, style=style)


def level_style(value: float | None, warn: float, crit: float, p: Palette) -> str:
    if value is None:
        return "dim"
    if value >= crit:
        return p.crit
    if value >= warn:
        return p.warn
    return p.ok


def _pct(part: float | None, whole: float | None) -> float | None:
    if part is None or not whole:
        return None
    return part / whole


def temp_style(sample: GpuSample, device: DeviceInfo, p: Palette) -> str:
    t = p.limits
    slowdown = device.temp_slowdown_c
    if slowdown is None:
        return level_style(sample.temp_c, t.hot_temp_c, float("inf"), p)
    return level_style(sample.temp_c, min(t.hot_temp_c, slowdown - t.hot_margin_c), slowdown, p)


def on_gpu(findings: Sequence[Finding], gpu: int) -> list[Finding]:
    """A GPU's findings, most severe first (the advisor's order)."""
    return [f for f in findings if f.gpu == gpu]


def worst(findings: Sequence[Finding], gpu: int) -> Finding | None:
    mine = on_gpu(findings, gpu)
    return mine[0] if mine else None


# -- header ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class HeaderState:
    hostname: str
    driver: str | None
    cuda: str | None
    gpus: int
    interval_s: float
    age_s: float | None
    stale: bool
    source_label: str
    live: bool
    paused: bool
    findings: int
    moment: str | None = None  # a replay's recorded time
    nodes: int = 1
    down: int = 0


def header_line(h: HeaderState, width: int, p: Palette) -> Text:
    text = Text()
    text.append(" gputui ", style=f"bold reverse {p.accent}")
    if not h.live:
        text.append(f" {h.source_label} ", style=f"bold reverse {p.warn}")
    if h.paused:
        text.append(" PAUSED ", style=f"bold reverse {p.warn}")
    text.append(f" {h.hostname}", style="bold")
    if h.moment:
        text.append(f"  {h.moment}", style="bold")
    text.append(f"  {h.gpus} GPU(s)  every {h.interval_s:g} s")
    if h.age_s is None:
        text.append("  waiting for data", style="dim")
    elif h.stale:
        text.append(f"  STALE: no data for {fmt_duration(h.age_s)}", style=f"bold {p.crit}")
    elif h.age_s > 0:
        text.append(f"  data {h.age_s:.0f} s old", style=p.warn)
    if h.nodes > 1:
        text.append(f"  {h.nodes} nodes")
    if h.down:
        text.append(f"  {h.down} node(s) down", style=f"bold {p.crit}")
    if h.findings:
        text.append(f"  {h.findings} finding(s)", style=f"bold {p.warn}")
    text.append(f"  driver {h.driver or NA}  CUDA {h.cuda or NA}", style="dim")
    text.truncate(width, overflow="ellipsis")
    return text


# -- GPU list -------------------------------------------------------------------------
def gpu_row(
    sample: GpuSample | None,
    device: DeviceInfo,
    finding: Finding | None,
    selected: bool,
    width: int,
    p: Palette,
) -> Text:
    """'▶0 H100 80GB HBM3  ████▌ 97%  ██▌ 61%  70°C 560W ✖' fitted to ``width``."""
    marker = "▶" if selected else " "
    text = Text(f"{marker}{device.index:<2}", style="bold" if selected else "")
    name_width = max(4, min(14, width - 44))
    text.append(f"{short_name(device.name)[:name_width]:<{name_width}} ")
    if sample is None or sample.lost:
        text.append("lost" if sample is not None else "no data", style=f"bold {p.crit}")
    else:
        bar_width = max(3, min(12, (width - name_width - 30) // 2))
        util = sample.util_gpu
        text.append_text(bar(_pct(util, 100), bar_width, p.accent, p.bar_bg))
        text.append(f" {fmt_num(util):>3}%" if util is not None else "  n/a")
        mem = sample.mem_used_pct
        text.append(" ")
        text.append_text(bar(_pct(mem, 100), bar_width, p.vram(mem), p.bar_bg))
        text.append(f" {fmt_num(mem):>3}%" if mem is not None else "  n/a")
        text.append(f" {fmt_num(sample.temp_c):>3}°C", style=temp_style(sample, device, p))
        text.append(f" {fmt_num(sample.power_w):>4}W")
    if finding is not None:
        text.append(
            f" {SEVERITY_MARK[finding.severity]}", style=f"bold {p.severity(finding.severity)}"
        )
    if selected:
        text.stylize("bold")
    text.truncate(width, overflow="ellipsis", pad=True)
    return text


def gpu_list(
    frame: Frame | None,
    devices: Sequence[DeviceInfo],
    findings: Sequence[Finding],
    selected: int,
    width: int,
    height: int,
    p: Palette,
) -> list[Text]:
    samples = {s.index: s for s in frame.gpus} if frame is not None else {}
    rows: list[Text] = []
    position = 0
    node: str | None = None
    for d in devices:
        if d.node is not None and d.node != node:  # remote sources: GPUs grouped by node
            node = d.node
            rows.append(Text(f"── {node} " + "─" * max(0, width - len(node) - 4), style="bold dim"))
        if d.index == selected:
            position = len(rows)
        rows.append(
            gpu_row(
                samples.get(d.index), d, worst(findings, d.index), d.index == selected, width, p
            )
        )
    if height <= 0 or len(rows) <= height:
        return rows
    # Keep the selected GPU in view when the list is longer than the panel.
    start = min(max(0, position - height // 2), len(rows) - height)
    return rows[start : start + height]


# -- GPU detail -----------------------------------------------------------------------
WINDOWS_S = (60, 300, 900, 3600)


def _label(name: str) -> Text:
    return Text(f"{name:<8}", style="bold")


def gauge_width(panel_width: int) -> int:
    """One bar width for every gauge of a panel, so they line up."""
    return max(6, min(24, panel_width // 5))


def _gauge_line(
    name: str, fraction: float | None, value_text: str, width: int, style: str, p: Palette
) -> Text:
    text = _label(name)
    text.append_text(bar(fraction, gauge_width(width), style, p.bar_bg))
    text.append(" " + value_text)
    return text


def detail_lines(
    frame: Frame | None,
    device: DeviceInfo,
    history: History,
    window_s: int,
    points: int,
    width: int,
    height: int,
    p: Palette,
) -> list[Text]:
    """The selected GPU: gauges against its limits, link, clock events, sparklines.

    ``points`` is how many history points cover ``window_s`` at the current interval.
    """
    sample = frame.gpu(device.index) if frame is not None else None
    title = Text(f"GPU {device.index} ", style="bold")
    title.append(device.name)
    facts = [
        device.architecture,
        f"CC {device.compute_capability}" if device.compute_capability else None,
        device.pci_bus_id,
    ]
    title.append("  " + "  ".join(f for f in facts if f), style="dim")
    lines = [title]
    if sample is None:
        return [*lines, Text("waiting for the first reading…", style="dim")]
    if sample.lost:
        return [
            *lines,
            Text(
                "GPU LOST: it fell off the bus. Check dmesg (Xid 79); it needs a reset.",
                style=f"bold {p.crit}",
            ),
        ]
    s, d = sample, device
    util = Text()
    util.append_text(
        _gauge_line("Util", _pct(s.util_gpu, 100), f"{fmt_num(s.util_gpu)} %", width, p.accent, p)
    )
    if s.sm_activity is not None or s.tensor_activity is not None:
        util.append(
            f"  SM act {fmt_num(s.sm_activity)} %  tensor {fmt_num(s.tensor_activity)} %",
            style="dim",
        )
    elif s.util_gpu is None and d.mig_mode:
        util.append("  utilisation not visible in MIG mode", style="dim")
    else:
        util.append(f"  mem ctrl {fmt_num(s.util_mem)} %", style="dim")
    lines.append(util)

    clock = _gauge_line(
        "SM clk",
        _pct(s.sm_clock_mhz, d.max_sm_clock_mhz),
        f"{fmt_num(s.sm_clock_mhz)} / {fmt_num(d.max_sm_clock_mhz)} MHz"
        + (
            f" ({100 * s.sm_clock_mhz / d.max_sm_clock_mhz:.0f} %)"
            if s.sm_clock_mhz and d.max_sm_clock_mhz
            else ""
        ),
        width,
        p.accent,
        p,
    )
    clock.append(
        f"  mem {fmt_num(s.mem_clock_mhz)} / {fmt_num(d.max_mem_clock_mhz)} MHz", style="dim"
    )
    lines.append(clock)

    limit = d.temp_slowdown_c
    temp = _gauge_line(
        "Temp",
        _pct(s.temp_c, d.temp_shutdown_c or limit),
        f"{fmt_num(s.temp_c)} °C",
        width,
        temp_style(s, d, p),
        p,
    )
    temp.append(
        f"  slowdown {fmt_num(limit)} °C  shutdown {fmt_num(d.temp_shutdown_c)} °C",
        style="dim",
    )
    if s.mem_temp_c is not None:  # the memory against its own limit
        mem_hot = d.temp_mem_max_c is not None and s.mem_temp_c >= d.temp_mem_max_c - 5
        temp.append(
            f"  mem {fmt_num(s.mem_temp_c)}"
            + (f" / {fmt_num(d.temp_mem_max_c)}" if d.temp_mem_max_c is not None else "")
            + " °C",
            style=p.warn if mem_hot else "dim",
        )
    if s.temp_margin_c is not None:
        temp.append(
            f"  margin {fmt_num(s.temp_margin_c)} °C",
            style=p.warn if s.temp_margin_c < 5 else "dim",
        )
    temp.append(f"  fan {fmt_num(s.fan_pct, ' %')}", style="dim")
    lines.append(temp)

    power_limit = s.power_limit_w or d.power_limit_w
    power = _gauge_line(
        "Power",
        _pct(s.power_w, power_limit),
        f"{fmt_num(s.power_w)} / {fmt_num(power_limit)} W",
        width,
        p.power(_pct(s.power_w, power_limit)) if s.power_w else "dim",
        p,
    )
    default = d.power_default_limit_w
    lowered = default is not None and power_limit is not None and power_limit < default - 1
    power.append(
        f"  default {fmt_num(default)} W"
        + ("  (limit lowered)" if lowered else "")
        + (f"  P{s.pstate}" if s.pstate is not None else ""),
        style=p.warn if lowered else "dim",
    )
    lines.append(power)

    mem_pct = s.mem_used_pct
    lines.append(
        _gauge_line(
            "VRAM",
            _pct(mem_pct, 100),
            f"{fmt_bytes(s.mem_used)} / {fmt_bytes(s.mem_total)}"
            + (f" ({mem_pct:.0f} %)" if mem_pct is not None else ""),
            width,
            p.vram(mem_pct),
            p,
        )
    )

    lines.append(pcie_line(s, d, width, p))
    lines.append(reasons_line(s, p))
    lines.extend(_driver_event_lines(s, history, frame.time if frame is not None else 0.0, p))

    spark_rows = [
        ("util", Metric.UTIL_GPU, 100.0, "%", p.accent),
        ("SM clk", Metric.SM_CLOCK_MHZ, float(d.max_sm_clock_mhz or 0) or None, "MHz", p.accent),
        ("temp", Metric.TEMP_C, d.temp_shutdown_c, "°C", temp_style(s, d, p)),
        ("power", Metric.POWER_W, power_limit, "W", p.accent),
        (
            "VRAM",
            Metric.MEM_USED,
            float(s.mem_total or 0) or None,
            "",
            p.vram(mem_pct),
        ),
        ("PCIe RX", Metric.PCIE_RX_BPS, link_bandwidth(s.pcie_gen, s.pcie_width), "", p.accent),
        ("PCIe TX", Metric.PCIE_TX_BPS, link_bandwidth(s.pcie_gen, s.pcie_width), "", p.accent),
    ]
    room = max(0, height - len(lines) - 1)
    if room > 0:
        lines.append(Text(f"history, last {fmt_duration(window_s)} (w: change)", style="dim"))
        spark_width = max(10, min(points, width - 18))
        for name, metric, top, unit, style in spark_rows[:room]:
            series = history.series(device.index, metric, points)
            if len(series) > spark_width:
                series = _downsample(series, spark_width)
            text = Text(f"{name:<8}", style="bold")
            text.append_text(sparkline(series, spark_width, top, style))
            latest = series[-1] if series else float("nan")
            text.append(" " + _short_value(latest, unit))
            lines.append(text)
    return lines


_HELD = (
    ("power", Metric.VIOLATION_POWER_S),
    ("thermal", Metric.VIOLATION_THERMAL_S),
    ("board", Metric.VIOLATION_BOARD_S),
    ("reliability", Metric.VIOLATION_RELIABILITY_S),
)


def _driver_event_lines(s: GpuSample, history: History, now: float, p: Palette) -> list[Text]:
    """Xid errors of the last hour, time held down per cause over the last minute (the
    driver's violation counters), MIG instances, where there are any."""
    lines: list[Text] = []
    for xid in history.xids(s.index, 3600.0)[-3:]:
        text = _label("Xid")
        text.append(f"{xid.code}", style=f"bold {p.crit}")
        text.append(f" {describe_xid(xid.code)}")
        text.append(f"  {fmt_age(max(0.0, now - xid.time))} ago", style="dim")
        lines.append(text)
    held = [
        (name, history.growth(s.index, metric, p.limits.held_window_s)) for name, metric in _HELD
    ]
    seen = [(name, g) for name, g in held if g is not None]
    if seen:
        span = max(g[1] for _, g in seen)
        text = _label("Held")
        for name, (grown, _span) in seen:
            text.append(f"{name} {grown:.0f} s  ", style=p.warn if grown >= 1 else "dim")
        text.append(f"of the last {fmt_duration(span)} (driver counters)", style="dim")
        lines.append(text)
    for mig in s.mig_instances:
        text = _label("MIG")
        text.append(f"{mig.profile or '?'} gi {mig.gpu_instance_id}", style="bold")
        text.append(f"  {fmt_bytes(mig.mem_used)} / {fmt_bytes(mig.mem_total)}")
        if mig.sm_activity is not None:
            text.append(f"  SM act {fmt_num(mig.sm_activity)} %")
        else:
            text.append("  utilisation not visible", style="dim")
        if mig.pids:
            text.append("  pid " + ", ".join(str(pid) for pid in mig.pids[:4]), style="dim")
        lines.append(text)
    return lines


def _downsample(series: list[float], width: int) -> list[float]:
    """Mean of equal buckets, so a long window still fits the panel."""
    out = []
    n = len(series)
    for i in range(width):
        bucket = [v for v in series[i * n // width : (i + 1) * n // width] if v == v]
        out.append(sum(bucket) / len(bucket) if bucket else float("nan"))
    return out


def _short_value(value: float, unit: str) -> str:
    if value != value:
        return NA
    if unit:
        return f"{value:.0f} {unit}"
    if value >= 1e9:
        return f"{value / 1e9:.1f}G"
    if value >= 1e6:
        return f"{value / 1e6:.0f}M"
    return f"{value / 1e3:.0f}k"


def pcie_line(s: GpuSample, d: DeviceInfo, width: int, p: Palette) -> Text:
    text = _label("PCIe")
    if s.pcie_gen is None:
        return text.append(NA, style="dim")
    capacity = link_bandwidth(s.pcie_gen, s.pcie_width)
    degraded = (d.pcie_max_gen is not None and s.pcie_gen < d.pcie_max_gen) or (
        d.pcie_max_width is not None
        and s.pcie_width is not None
        and s.pcie_width < d.pcie_max_width
    )
    idle = (s.util_gpu or 0) < 5
    style = p.warn if degraded and not idle else ""
    text.append(fmt_link(s.pcie_gen, s.pcie_width), style=style)
    if known(d.pcie_max_gen) or known(d.pcie_max_width):
        text.append(f" of {fmt_link(d.pcie_max_gen, d.pcie_max_width)}", style="dim")
    if capacity:
        text.append(f" ({fmt_rate(capacity)})", style="dim")
    if degraded and idle:
        text.append(" idle downshift", style="dim")
    if d.pcie_gpu_max_gen and d.pcie_max_gen and d.pcie_gpu_max_gen > d.pcie_max_gen:
        text.append(f" card Gen{d.pcie_gpu_max_gen}: host-limited", style="dim")
    for label, rate in (("RX", s.pcie_rx_bps), ("TX", s.pcie_tx_bps)):
        share = _pct(rate, capacity)
        text.append(f"  {label} {fmt_rate(rate)}")
        if share is not None:
            text.append(f" {100 * share:.0f}%", style=p.pcie(share))
    if s.pcie_counter_based is not None:  # exact counters, or a sampled 20 ms window
        text.append(" counted" if s.pcie_counter_based else " sampled", style="dim")
    text.append(f"  replays {fmt_num(s.pcie_replay_count)}", style="dim")
    return text


def reasons_line(s: GpuSample, p: Palette) -> Text:
    text = _label("Events")
    if s.clock_reasons is None:
        return text.append(NA, style="dim")
    active = [(name, label) for bit, name, label, _ in REASONS if s.clock_reasons & bit]
    if not active:
        return text.append("none: clocks are free", style=p.ok)
    for i, (name, label) in enumerate(active):
        if i:
            text.append(", ")
        harmful = name not in ("gpu_idle", "sync_boost", "display_clocks")
        text.append(
            label,
            style=f"bold {p.crit if 'thermal' in name or name.startswith('hw') else p.warn}"
            if harmful
            else "dim",
        )
    return text


# -- processes ------------------------------------------------------------------------
SORT_KEYS = ("gpu_memory", "cpu_percent", "rss", "pid")
SORT_LABELS = {"gpu_memory": "GPU mem", "cpu_percent": "CPU %", "rss": "RSS", "pid": "PID"}


def process_lines(
    processes: Sequence[ProcessSample],
    notes: Sequence[str],
    sort_key: str,
    width: int,
    height: int,
    p: Palette,
    mask: bool = False,
) -> list[Text]:
    """The process table; ``mask`` hides credentials in command lines (for files)."""
    columns = (
        f"{'PID':>7} {'USER':<10} {'GPU MEM':>9} {'CPU%':>6} {'RSS':>9} {'THR':>4} {'WRK':>4} "
        "COMMAND"
    )
    head = Text(columns, style="bold")
    head.truncate(width, overflow="ellipsis")
    lines = [head]
    for note in notes:
        lines.append(Text(note, style=p.warn))
    if not processes:
        lines.append(Text("no processes on this GPU", style="dim"))
        return lines

    def key(proc: ProcessSample) -> float:
        value = getattr(proc, sort_key)
        return -(value if value is not None else -1) if sort_key != "pid" else value

    for proc in sorted(processes, key=key)[: max(1, height - len(lines))]:
        command = proc.command or (
            "(not visible from this PID namespace)" if not proc.visible else NA
        )
        if mask:
            command = mask_secrets(command)
        row = Text(
            f"{proc.pid:>7} {(proc.user or NA)[:10]:<10} {fmt_bytes(proc.gpu_memory):>9} "
            f"{fmt_num(proc.cpu_percent, '', 0):>6} {fmt_bytes(proc.rss, 0):>9} "
            f"{fmt_num(proc.threads):>4} {fmt_num(proc.children):>4} "
        )
        if p.gil_bound(proc.cpu_percent):
            row.stylize(p.warn, 29, 36)
        row.append(command, style="" if proc.visible else "dim")
        row.truncate(width, overflow="ellipsis")
        lines.append(row)
    return lines


# -- advisor --------------------------------------------------------------------------
def advisor_lines(
    findings: Sequence[Finding],
    selected: int,
    now: float | None,
    waiting: bool,
    width: int,
    height: int,
    p: Palette,
    notes: Sequence[str] = (),
    gathering: str | None = None,
) -> list[Text]:
    """The findings, most severe first, the selected one's evidence and remedies below;
    the source's notes (a node down, rules that cannot run) at the end. ``gathering``
    ("gathering: 4 s of 10 s") replaces the all-clear until the rules have their history."""
    if not findings and gathering and not waiting:
        lines = [
            Text(gathering, style="dim"),
            Text("no verdict yet: the rules need more history", style="dim"),
        ]
    else:
        lines = _finding_lines(findings, selected, now, waiting, width, height - len(notes), p)
    for note in notes[: max(0, height - len(lines))]:
        line = Text(f"! {note}", style=p.warn if "down" in note else "dim")
        line.truncate(width, overflow="ellipsis")
        lines.append(line)
    return lines


def _finding_lines(
    findings: Sequence[Finding],
    selected: int,
    now: float | None,
    waiting: bool,
    width: int,
    height: int,
    p: Palette,
) -> list[Text]:
    if not findings:
        if waiting:
            return [Text("collecting the first readings…", style="dim")]
        return [
            Text("✓ nothing slows these GPUs down right now", style=f"bold {p.ok}"),
            Text(
                "watching: thermal, power, VRAM, CUDA, PCIe, input pipeline, errors, "
                "stragglers (r: the rules)",
                style="dim",
            ),
        ]
    lines: list[Text] = []
    selected = min(selected, len(findings) - 1)
    list_rows = min(len(findings), max(1, height // 3 if height > 8 else height - 1))
    start = min(max(0, selected - list_rows + 1), len(findings) - list_rows)
    for i in range(start, start + list_rows):
        f = findings[i]
        colour = p.severity(f.severity)
        row = Text("▶" if i == selected else " ", style="bold")
        row.append(f"{SEVERITY_MARK[f.severity]} ", style=f"bold {colour}")
        row.append("host " if f.gpu is None else f"GPU{f.gpu} ", style="bold")
        row.append(f"{f.rule} ", style=colour)
        if now is not None:
            row.append(f"{fmt_age(now - f.since)} ", style="dim")
        row.append(f.title, style="bold" if i == selected else "")
        row.truncate(width, overflow="ellipsis")
        lines.append(row)
    room = height - len(lines)
    if room >= 2:
        f = findings[selected]
        lines.append(Text("─" * min(width, 60), style="dim"))
        body: list[Text] = []
        for e in f.evidence:
            body.append(Text(f"  · {e}"))
        for r in f.remedies:
            body.append(Text(f"  → {r}", style=p.ok))
        body.append(Text("  n/N: next/previous  g: go to GPU  enter: full text", style="dim"))
        for line in body[: room - 1]:
            line.truncate(width, overflow="ellipsis")
            lines.append(line)
    return lines


# -- overview -------------------------------------------------------------------------
CARD_WIDTH = 38
CARD_MIN_HEIGHT = 4
CARD_MAX_HEIGHT = 12


def card(
    sample: GpuSample | None,
    device: DeviceInfo,
    findings: Sequence[Finding],
    history: History,
    selected: bool,
    width: int,
    height: int,
    p: Palette,
    not_judged: str | None = None,
) -> list[Text]:
    """One GPU as a boxed card of ``height`` rows: the overview of an 8-GPU node.

    A short card keeps its most telling lines (the finding, utilisation, temperature...)
    and drops the rest, so 16 GPUs still fit a small terminal.
    """
    inner = width - 2
    border = f"bold {p.accent}" if selected else "dim"
    where = f"{device.node}:{device.node_index} " if device.node is not None else ""
    title = f" {device.index} {where}{short_name(device.name)} "[:inner]
    top = Text()
    top.append("╭", style=border)
    top.append(title, style="bold")
    top.append("─" * max(0, inner - len(title)) + "╮", style=border)
    body: list[tuple[int, Text]] = []  # (priority: lower is kept first, line)
    mine = on_gpu(findings, device.index)
    if mine:
        f = mine[0]
        more = f" +{len(mine) - 1}" if len(mine) > 1 else ""
        status = Text(
            f"{SEVERITY_MARK[f.severity]} {f.rule}{more}", style=f"bold {p.severity(f.severity)}"
        )
    elif not_judged:  # "✓ ok" only for a GPU the rules could judge
        status = Text(not_judged, style=p.warn)
    else:
        status = Text("✓ ok", style=p.ok)
    if sample is None or sample.lost:
        body.append((0, Text("LOST" if sample is not None else "no data", style=f"bold {p.crit}")))
    else:
        s, d = sample, device
        gauges = (
            (1, "util", _pct(s.util_gpu, 100), f"{fmt_num(s.util_gpu):>3}%", p.accent),
            (
                3,
                "vram",
                _pct(s.mem_used_pct, 100),
                f"{fmt_num(s.mem_used_pct):>3}%",
                p.vram(s.mem_used_pct),
            ),
        )
        for priority, name, frac, value, style in gauges:
            line = Text(f"{name} ")
            line.append_text(bar(frac, inner - 10, style, p.bar_bg))
            line.append(f" {value}")
            body.append((priority, line))
        line = Text()
        line.append(f"{fmt_num(s.temp_c)}°C", style=temp_style(s, d, p))
        line.append(f" {fmt_of(s.power_w, s.power_limit_w, 'W')} {fmt_num(s.sm_clock_mhz, ' MHz')}")
        body.append((2, line))
        body.append(
            (
                4,
                Text(f"PCIe {fmt_link(s.pcie_gen, s.pcie_width)} RX {fmt_rate(s.pcie_rx_bps)}"),
            )
        )
        events = ", ".join(describe_reasons(s.clock_reasons, short=True)) or "no clock events"
        quiet = not s.clock_reasons or s.clock_reasons == 1
        body.append((5, Text(events, style="dim" if quiet else p.warn)))
        sparks = (
            ("util", Metric.UTIL_GPU, 100.0, p.accent),
            ("temp", Metric.TEMP_C, d.temp_shutdown_c, temp_style(s, d, p)),
            ("pwr", Metric.POWER_W, s.power_limit_w, p.accent),
        )
        for k, (name, metric, top_value, style) in enumerate(sparks):
            spark = Text(f"{name:<5}")
            series = history.series(d.index, metric, inner - 5)
            spark.append_text(sparkline(series, inner - 5, top_value, style))
            body.append((6 + k, spark))
    body.append((0, status))
    room = max(1, height - 2)
    kept = sorted(range(len(body)), key=lambda i: body[i][0])[:room]
    rows = [top]
    for i in sorted(kept):
        line = body[i][1]
        line.truncate(inner, overflow="ellipsis", pad=True)
        rows.append(Text.assemble(("│", border), line, ("│", border)))
    while len(rows) < height - 1:
        rows.append(Text.assemble(("│", border), " " * inner, ("│", border)))
    rows.append(Text("╰" + "─" * inner + "╯", style=border))
    return rows


def overview_lines(
    frame: Frame | None,
    devices: Sequence[DeviceInfo],
    findings: Sequence[Finding],
    history: History,
    selected: int,
    width: int,
    height: int,
    p: Palette,
    judgement: Judgement | None = None,
) -> list[Text]:
    """All GPUs as cards; when they cannot all fit, the selected GPU's row stays in view.
    A GPU the rules could not judge says so instead of "✓ ok"."""
    if judgement is None:
        judgement = judge_coverage(
            RULES, {d.index: d for d in devices}, frame, history.times(), p.limits
        )
    per_row = max(1, width // CARD_WIDTH)
    card_width = max(24, width // per_row)
    card_rows = max(1, -(-len(devices) // per_row))
    card_height = max(CARD_MIN_HEIGHT, min(CARD_MAX_HEIGHT, height // card_rows))
    rows: list[list[Text]] = []
    for start in range(0, len(devices), per_row):
        cards = [
            card(
                frame.gpu(d.index) if frame else None,
                d,
                findings,
                history,
                d.index == selected,
                card_width,
                card_height,
                p,
                not_judged=judgement.gathering_text()
                if judgement.gathering
                else judgement.missing_on(d.index),
            )
            for d in devices[start : start + per_row]
        ]
        block = []
        for row in range(card_height):
            line = Text()
            for c in cards:
                line.append_text(c[row])
            block.append(line)
        rows.append(block)
    visible = max(1, height // card_height) if height > 0 else len(rows)
    position = next((i for i, d in enumerate(devices) if d.index == selected), 0) // per_row
    first = min(max(0, position - visible // 2), max(0, len(rows) - visible))
    return [line for block in rows[first : first + visible] for line in block]
