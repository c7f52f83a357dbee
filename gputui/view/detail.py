"""The selected GPU: gauges against its limits, the link, clock events, driver events, its
identity, and history on a fixed time scale with the gauge's own value and unit."""

from __future__ import annotations

from collections.abc import Callable

from gputui.core.clock_events import REASONS
from gputui.core.config import Thresholds
from gputui.core.model import DeviceInfo, Frame, GpuSample
from gputui.core.names import Metric
from gputui.core.pcie import link_bandwidth
from gputui.core.records import frozen
from gputui.core.units import (
    NA,
    fmt_age,
    fmt_bytes,
    fmt_duration,
    fmt_link,
    fmt_num,
    fmt_rate,
    known,
)
from gputui.core.xid import describe_xid
from gputui.sampling.history import History
from gputui.view import levels
from gputui.view.cells import Cell, Panel, Role, Row, cut, plural
from gputui.view.glyphs import bar
from gputui.view.timeline import Timeline, scale_for

LABEL = 8
VALUE = 12  # the value beside a sparkline: "1980 MHz", "59.9 GiB", "12.3 GB/s"
WINDOWS_S = (60, 300, 900, 3600)
#: clock-event reasons that are not a slowdown (idle, sync boost, display)
HARMLESS = ("gpu_idle", "sync_boost", "display_clocks")


@frozen
class View:
    """What the detail panel is asked to show besides the data."""

    window_s: int
    interval_s: float
    width: int
    height: int


SPARK_MIN = 8  # narrower, the panel draws no history


def _spark_room(width: int) -> int:
    """Columns left for a sparkline beside its label and value."""
    return width - LABEL - VALUE - 1


def span_text(seconds: float) -> str:
    """'1 min', '5 min', '1 h', '2 s', '0.5 s': a time scale in round words."""
    if seconds < 60:
        return f"{seconds:g} s"
    if seconds < 3600 or seconds % 3600:
        return f"{seconds / 60:g} min"
    return f"{seconds / 3600:g} h"


def gauge_width(width: int) -> int:
    """One bar width for every gauge of a panel, so they line up."""
    return max(6, min(24, width // 5))


def _label(name: str) -> Cell:
    return Cell(f"{name:<{LABEL}}", bold=True)


def _gauge(
    name: str, fraction: float | None, value: str, width: int, role: Role, *extras: Cell
) -> Row:
    return Row((_label(name), bar(fraction, gauge_width(width), role), Cell(" " + value), *extras))


def _extra(text: str, role: Role = Role.DIM, drop: int = 1) -> Cell:
    return Cell(text, role, drop=drop)


def detail(
    frame: Frame | None,
    device: DeviceInfo,
    history: History,
    timeline: Timeline,
    view: View,
    t: Thresholds,
) -> Panel:
    title = f"GPU {device.index} {device.name}"
    facts = [
        device.architecture,
        f"CC {device.compute_capability}" if device.compute_capability else None,
    ]
    subtitle = "  ".join(f for f in facts if f)
    sample = frame.gpu(device.index) if frame is not None else None
    width, height = view.width, view.height
    if sample is None:
        rows: tuple[Row, ...] = (Row((Cell("waiting for the first reading…", Role.DIM),)),)
        return Panel(title, (*rows, _identity(device)), subtitle)
    if sample.lost:
        lost = "GPU LOST: it fell off the bus. Check dmesg (Xid 79); it needs a reset."
        return Panel(
            title,
            (Row((Cell(lost, Role.CRIT, bold=True, flex=True),)), _identity(device)),
            subtitle,
        )
    now = frame.time if frame is not None else 0.0
    readings = [  # most telling first: a short panel keeps the head of this list
        _util(sample, device, width),
        _clock(sample, device, width),
        _temp(sample, device, width, t),
        _power(sample, device, width, t),
        _vram(sample, width, t),
        pcie_row(sample, device, t),
        reasons_row(sample),
        *_driver_events(sample, history, now, t),
        _identity(device),
    ]
    left = height - len(readings)
    draws_history = _spark_room(width) >= SPARK_MIN
    if left > 0 or (left == 0 and not draws_history):
        # Every reading shows; the history gets what is left, if that is a heading and a line
        # (built only then: at 80x24 it would be thrown away).
        shown = _history(sample, device, history, timeline, view, t) if left >= 2 else []
        return Panel(title, (*readings, *shown[:left]), subtitle)
    kept, hidden = readings[: max(0, height - 1)], readings[max(0, height - 1) :]
    more = left_out(hidden, draws_history)
    return Panel(title, (*kept, Row((Cell(cut(more, width), Role.DIM),)))[:height], subtitle)


def left_out(hidden: list[Row], history: bool) -> str:
    """What a short panel leaves out, the count agreeing with the names: each row by its
    label (rows of one label counted together: 'Xid ×3'), then the history, which is no
    row of the count (a heading and a sparkline a reading)."""
    labels: dict[str, int] = {}
    for row in hidden:
        label = (row.cells[0].text.strip() if row.cells else "") or "other"
        labels[label] = labels.get(label, 0) + 1
    names = ", ".join(name if n == 1 else f"{name} ×{n}" for name, n in labels.items())
    history_too = " and the history" if history else ""
    return f"+{plural(len(hidden), 'row')} ({names}){history_too}: a taller terminal shows them"


def _identity(d: DeviceInfo) -> Row:
    """The UUID and the PCI bus id: what nvidia-smi, dmesg and CUDA_VISIBLE_DEVICES name."""
    cells = [_label("ID"), Cell(d.uuid or NA, flex=True)]
    cells.append(Cell(f"  bus {d.pci_bus_id or NA}", drop=1))
    if d.node is not None:
        cells.append(Cell(f"  node {d.node}", Role.DIM, drop=2))
    if d.pod:
        cells.append(Cell(f"  pod {d.pod}", Role.DIM, drop=3))
    return Row(tuple(cells))


def _util(s: GpuSample, d: DeviceInfo, width: int) -> Row:
    extra: Cell
    if s.sm_activity is not None or s.tensor_activity is not None:
        extra = _extra(
            f"  SM act {fmt_num(s.sm_activity)} %  tensor {fmt_num(s.tensor_activity)} %"
        )
    elif s.util_gpu is None and d.mig_mode:
        extra = _extra("  utilisation not visible in MIG mode")
    else:
        extra = _extra(f"  mem ctrl {fmt_num(s.util_mem)} %")
    return _gauge(
        "Util", levels.share(s.util_gpu, 100), f"{fmt_num(s.util_gpu)} %", width, Role.ACCENT, extra
    )


def _clock(s: GpuSample, d: DeviceInfo, width: int) -> Row:
    pct = (
        f" ({100 * s.sm_clock_mhz / d.max_sm_clock_mhz:.0f} %)"
        if s.sm_clock_mhz and d.max_sm_clock_mhz
        else ""
    )
    return _gauge(
        "SM clk",
        levels.share(s.sm_clock_mhz, d.max_sm_clock_mhz),
        f"{fmt_num(s.sm_clock_mhz)} / {fmt_num(d.max_sm_clock_mhz)} MHz{pct}",
        width,
        Role.ACCENT,
        _extra(f"  mem {fmt_num(s.mem_clock_mhz)} / {fmt_num(d.max_mem_clock_mhz)} MHz"),
    )


def _temp(s: GpuSample, d: DeviceInfo, width: int, t: Thresholds) -> Row:
    limit = d.temp_slowdown_c
    extras = [_extra(f"  slowdown {fmt_num(limit)} °C  shutdown {fmt_num(d.temp_shutdown_c)} °C")]
    if s.mem_temp_c is not None:  # the memory against its own limit
        hot = d.temp_mem_max_c is not None and s.mem_temp_c >= d.temp_mem_max_c - 5
        of = f" / {fmt_num(d.temp_mem_max_c)}" if d.temp_mem_max_c is not None else ""
        extras.append(
            _extra(f"  mem {fmt_num(s.mem_temp_c)}{of} °C", Role.WARN if hot else Role.DIM, 2)
        )
    if s.temp_margin_c is not None:
        low = s.temp_margin_c < 5
        extras.append(
            _extra(f"  margin {fmt_num(s.temp_margin_c)} °C", Role.WARN if low else Role.DIM, 3)
        )
    extras.append(_extra(f"  fan {fmt_num(s.fan_pct, ' %')}", drop=4))
    return _gauge(
        "Temp",
        levels.share(s.temp_c, d.temp_shutdown_c or limit),
        f"{fmt_num(s.temp_c)} °C",
        width,
        levels.temp(t, s, d),
        *extras,
    )


def _power(s: GpuSample, d: DeviceInfo, width: int, t: Thresholds) -> Row:
    limit = s.power_limit_w or d.power_limit_w
    share = levels.share(s.power_w, limit)
    default = d.power_default_limit_w
    lowered = default is not None and limit is not None and limit < default - t.limit_lowered_w
    # a lowered limit is the reading's meaning (why the board caps): kept before any other
    # extra when the row is short of room; the default alone is context
    cells = [
        _extra(f"  lowered from {fmt_num(default)} W", Role.WARN, drop=0)
        if lowered
        else _extra(f"  default {fmt_num(default)} W")
    ]
    if s.pstate is not None:
        cells.append(_extra(f"  P{s.pstate}", drop=2))
    return _gauge(
        "Power",
        share,
        f"{fmt_num(s.power_w)} / {fmt_num(limit)} W",
        width,
        levels.power(t, share) if s.power_w else Role.DIM,
        *cells,
    )


def _vram(s: GpuSample, width: int, t: Thresholds) -> Row:
    pct = s.mem_used_pct
    return _gauge(
        "VRAM",
        levels.share(pct, 100),
        f"{fmt_bytes(s.mem_used)} / {fmt_bytes(s.mem_total)}"
        + (f" ({pct:.0f} %)" if pct is not None else ""),
        width,
        levels.vram(t, pct),
    )


def pcie_row(s: GpuSample, d: DeviceInfo, t: Thresholds) -> Row:
    """'PCIe Gen4 x16 of Gen5 x16 (31.5 GB/s)  RX 6.8 GB/s 22%  TX 1.2 GB/s 4% counted'."""
    label = _label("PCIe")
    if s.pcie_gen is None:
        return Row((label, Cell(NA, Role.DIM)))
    capacity = link_bandwidth(s.pcie_gen, s.pcie_width)
    degraded = (d.pcie_max_gen is not None and s.pcie_gen < d.pcie_max_gen) or (
        d.pcie_max_width is not None
        and s.pcie_width is not None
        and s.pcie_width < d.pcie_max_width
    )
    idle = (s.util_gpu or 0) < 5
    cells = [
        label,
        Cell(
            fmt_link(s.pcie_gen, s.pcie_width), Role.WARN if degraded and not idle else Role.PLAIN
        ),
    ]
    if known(d.pcie_max_gen) or known(d.pcie_max_width):
        cells.append(Cell(f" of {fmt_link(d.pcie_max_gen, d.pcie_max_width)}", Role.DIM))
    if capacity:
        cells.append(Cell(f" ({fmt_rate(capacity)})", Role.DIM, drop=3))
    if degraded and idle:
        cells.append(Cell(" idle downshift", Role.DIM, drop=2))
    if d.pcie_gpu_max_gen and d.pcie_max_gen and d.pcie_gpu_max_gen > d.pcie_max_gen:
        cells.append(Cell(f" card Gen{d.pcie_gpu_max_gen}: host-limited", Role.DIM, drop=4))
    for name, rate in (("RX", s.pcie_rx_bps), ("TX", s.pcie_tx_bps)):
        share = levels.share(rate, capacity)
        cells.append(Cell(f"  {name} {fmt_rate(rate)}"))
        if share is not None:
            cells.append(Cell(f" {100 * share:.0f}%", levels.pcie(t, share)))
    if s.pcie_counter_based is not None:  # exact counters, or a sampled 20 ms window
        cells.append(Cell(" counted" if s.pcie_counter_based else " sampled", Role.DIM, drop=5))
    cells.append(Cell(f"  replays {fmt_num(s.pcie_replay_count)}", Role.DIM, drop=1))
    return Row(tuple(cells))


def reasons_row(s: GpuSample) -> Row:
    label = _label("Events")
    if s.clock_reasons is None:
        return Row((label, Cell(NA, Role.DIM)))
    active = [(name, text) for bit, name, text, _ in REASONS if s.clock_reasons & bit]
    if not active:
        return Row((label, Cell("none: clocks are free", Role.OK)))
    cells = [label]
    for i, (name, text) in enumerate(active):
        if name in HARMLESS:
            role, bold = Role.DIM, False
        else:
            role, bold = (
                (Role.CRIT if "thermal" in name or name.startswith("hw") else Role.WARN),
                True,
            )
        cells.append(Cell((", " if i else "") + text, role, bold=bold, flex=i == len(active) - 1))
    return Row(tuple(cells))


_HELD = (
    ("power", Metric.VIOLATION_POWER_S),
    ("thermal", Metric.VIOLATION_THERMAL_S),
    ("board", Metric.VIOLATION_BOARD_S),
    ("reliability", Metric.VIOLATION_RELIABILITY_S),
)


def _driver_events(s: GpuSample, history: History, now: float, t: Thresholds) -> list[Row]:
    """Xid errors of the last hour, time held down per cause (the driver's violation
    counters), MIG instances, where there are any."""
    rows: list[Row] = []
    for xid in history.xids(s.index, 3600.0)[-3:]:
        rows.append(
            Row(
                (
                    _label("Xid"),
                    Cell(f"{xid.code}", Role.CRIT, bold=True),
                    Cell(f" {describe_xid(xid.code)}", flex=True),
                    Cell(f"  {fmt_age(max(0.0, now - xid.time))} ago", Role.DIM),
                )
            )
        )
    held = [(name, history.growth(s.index, metric, t.held_window_s)) for name, metric in _HELD]
    seen = [(name, g) for name, g in held if g is not None]
    if seen:
        span = max(g[1] for _, g in seen)
        cells = [_label("Held")]
        for name, (grown, _span) in seen:
            cells.append(Cell(f"{name} {grown:.0f} s  ", Role.WARN if grown >= 1 else Role.DIM))
        cells.append(
            Cell(f"of the last {fmt_duration(span)} (driver counters)", Role.DIM, flex=True)
        )
        rows.append(Row(tuple(cells)))
    for mig in s.mig_instances:
        cells = [
            _label("MIG"),
            Cell(f"{mig.profile or '?'} gi {mig.gpu_instance_id}", bold=True),
            Cell(f"  {fmt_bytes(mig.mem_used)} / {fmt_bytes(mig.mem_total)}"),
        ]
        if mig.sm_activity is not None:
            cells.append(Cell(f"  SM act {fmt_num(mig.sm_activity)} %"))
        else:
            cells.append(Cell("  utilisation not visible", Role.DIM))
        if mig.pids:
            cells.append(Cell("  pid " + ", ".join(str(p) for p in mig.pids[:4]), Role.DIM, drop=1))
        rows.append(Row(tuple(cells)))
    return rows


_Value = Callable[[GpuSample], str]


def _history(
    s: GpuSample, d: DeviceInfo, history: History, timeline: Timeline, view: View, t: Thresholds
) -> list[Row]:
    """A heading that tells the truth about the time scale, then one sparkline a reading,
    each ending in the gauge's own value and unit."""
    width = view.width
    room = _spark_room(width)
    if room < SPARK_MIN:
        return []
    now = history.latest.time if history.latest is not None else 0.0
    scale = scale_for(view.window_s, view.interval_s, room, now)
    covered = timeline.covered_s(history, scale)
    heading = f"history: last {span_text(view.window_s)}, one column = {span_text(scale.bucket_s)}"
    if covered < scale.window_s - scale.bucket_s:
        heading += f" ({fmt_duration(covered)} recorded so far)"
    rows = [Row((Cell(heading, Role.DIM, flex=True), Cell("  w: window", Role.DIM, drop=1)))]
    power_limit = s.power_limit_w or d.power_limit_w
    link = link_bandwidth(s.pcie_gen, s.pcie_width)
    series: list[tuple[str, Metric, float | None, Role, str]] = [
        ("util", Metric.UTIL_GPU, 100.0, Role.ACCENT, f"{fmt_num(s.util_gpu)} %"),
        (
            "SM clk",
            Metric.SM_CLOCK_MHZ,
            float(d.max_sm_clock_mhz or 0) or None,
            Role.ACCENT,
            f"{fmt_num(s.sm_clock_mhz)} MHz",
        ),
        ("temp", Metric.TEMP_C, d.temp_shutdown_c, levels.temp(t, s, d), f"{fmt_num(s.temp_c)} °C"),
        ("power", Metric.POWER_W, power_limit, Role.ACCENT, f"{fmt_num(s.power_w)} W"),
        (
            "VRAM",
            Metric.MEM_USED,
            float(s.mem_total or 0) or None,
            levels.vram(t, s.mem_used_pct),
            fmt_bytes(s.mem_used),
        ),
        ("PCIe RX", Metric.PCIE_RX_BPS, link, Role.ACCENT, fmt_rate(s.pcie_rx_bps)),
        ("PCIe TX", Metric.PCIE_TX_BPS, link, Role.ACCENT, fmt_rate(s.pcie_tx_bps)),
    ]
    for name, metric, top, role, value in series:
        line = timeline.spark(history, d.index, metric, scale, view.interval_s, top)
        rows.append(Row((_label(name), Cell(line, role), Cell(f" {value}"))))
    return rows
