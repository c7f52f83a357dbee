"""The overview: every GPU as a boxed card, the view of an 8-GPU node at a glance. A short
card keeps its most telling lines (the finding, utilisation, temperature...), so 16 GPUs
still fit a small terminal; cards that do not fit are counted, never silently left out."""

from __future__ import annotations

from collections.abc import Sequence

from gputui.core.clock_events import describe_reasons
from gputui.core.config import Thresholds
from gputui.core.judgement import Judgement
from gputui.core.model import DeviceInfo, Finding, Frame, GpuSample
from gputui.core.names import Metric
from gputui.core.units import fmt_link, fmt_num, fmt_of, fmt_rate, short_name
from gputui.sampling.history import History
from gputui.view import levels
from gputui.view.cells import CardsKey, Cell, Panel, Role, Row, cut, fit
from gputui.view.glyphs import bar
from gputui.view.gpu_list import SEVERITY_MARK, SEVERITY_ROLE, hidden_gpus
from gputui.view.timeline import Scale, Timeline, scale_for

CARD_WIDTH = 38
CARD_MIN_HEIGHT = 4
CARD_MAX_HEIGHT = 12

Line = tuple[Cell, ...]


def _boxed(line: Sequence[Cell], inner: int, border: Role, bold: bool) -> Line:
    fitted = fit(line, inner)
    pad = inner - sum(c.width for c in fitted)
    side = Cell("│", border, bold=bold)
    return (side, *fitted, *((Cell(" " * pad),) if pad else ()), side)


def card(
    sample: GpuSample | None,
    device: DeviceInfo,
    mine: Sequence[Finding],
    history: History,
    timeline: Timeline,
    selected: bool,
    width: int,
    height: int,
    t: Thresholds,
    window_s: float,
    interval_s: float,
    not_judged: str | None = None,
) -> list[Line]:
    inner = width - 2
    border = Role.ACCENT if selected else Role.DIM
    where = f"{device.node}:{device.node_index} " if device.node is not None else ""
    title = cut(f" {device.index} {where}{short_name(device.name)} ", inner)
    top: Line = (
        Cell("╭", border, bold=selected),
        Cell(title, bold=True),
        Cell("─" * (inner - len(title)) + "╮", border, bold=selected),
    )
    body: list[tuple[int, Line]] = []  # (priority: lower is kept first, line)
    if sample is None or sample.lost:
        body.append((0, (Cell("LOST" if sample is not None else "no data", Role.CRIT, True),)))
    else:
        body += _readings(sample, device, t, inner)
        scale = scale_for(
            window_s, interval_s, inner - 5, history.latest.time if history.latest else 0.0
        )
        body += _sparks(sample, device, t, history, timeline, scale, interval_s, inner)
    body.append((0, _status(mine, not_judged)))
    room = max(1, height - 2)
    kept = sorted(sorted(range(len(body)), key=lambda i: body[i][0])[:room])
    lines = [top, *(_boxed(body[i][1], inner, border, selected) for i in kept)]
    while len(lines) < height - 1:
        lines.append(_boxed((), inner, border, selected))
    lines.append((Cell("╰" + "─" * inner + "╯", border, bold=selected),))
    return lines


def _status(mine: Sequence[Finding], not_judged: str | None) -> Line:
    if mine:
        f = mine[0]
        more = f" +{len(mine) - 1} more" if len(mine) > 1 else ""
        return (
            Cell(f"{SEVERITY_MARK[f.severity]} {f.rule}{more}", SEVERITY_ROLE[f.severity], True),
        )
    if not_judged:  # "✓ ok" only for a GPU the rules could judge; said calmly
        return (Cell(not_judged, Role.DIM, flex=True),)
    return (Cell("✓ ok", Role.OK),)


def _readings(s: GpuSample, d: DeviceInfo, t: Thresholds, inner: int) -> list[tuple[int, Line]]:
    """The card's gauges and figures, each with its priority (lower is kept first)."""
    out: list[tuple[int, Line]] = []
    gauges = (
        (1, "util", levels.share(s.util_gpu, 100), s.util_gpu, Role.ACCENT),
        (
            3,
            "vram",
            levels.share(s.mem_used_pct, 100),
            s.mem_used_pct,
            levels.vram(t, s.mem_used_pct),
        ),
    )
    for priority, name, frac, value, role in gauges:
        out.append(
            (
                priority,
                (Cell(f"{name} "), bar(frac, inner - 10, role), Cell(f" {fmt_num(value):>3}%")),
            )
        )
    out.append(
        (
            2,
            (
                Cell(f"{fmt_num(s.temp_c)}°C", levels.temp(t, s, d)),
                Cell(f" {fmt_of(s.power_w, s.power_limit_w, 'W')}"),
                Cell(f" {fmt_num(s.sm_clock_mhz, ' MHz')}", drop=1),
            ),
        )
    )
    out.append(
        (4, (Cell(f"PCIe {fmt_link(s.pcie_gen, s.pcie_width)} RX {fmt_rate(s.pcie_rx_bps)}"),))
    )
    events = ", ".join(describe_reasons(s.clock_reasons, short=True)) or "no clock events"
    quiet = not s.clock_reasons or s.clock_reasons == 1
    out.append((5, (Cell(events, Role.DIM if quiet else Role.WARN, flex=True),)))
    return out


def _sparks(
    s: GpuSample,
    d: DeviceInfo,
    t: Thresholds,
    history: History,
    timeline: Timeline,
    scale: Scale,
    interval_s: float,
    inner: int,
) -> list[tuple[int, Line]]:
    sparks = (
        ("util", Metric.UTIL_GPU, 100.0, Role.ACCENT),
        ("temp", Metric.TEMP_C, d.temp_shutdown_c, levels.temp(t, s, d)),
        ("pwr", Metric.POWER_W, s.power_limit_w, Role.ACCENT),
    )
    out: list[tuple[int, Line]] = []
    for k, (name, metric, top_value, role) in enumerate(sparks):
        line = timeline.spark(history, d.index, metric, scale, interval_s, top_value)
        out.append((6 + k, (Cell(f"{name:<5}"), Cell(f"{line:>{inner - 5}}", role))))
    return out


def overview(
    frame: Frame | None,
    devices: Sequence[DeviceInfo],
    findings: Sequence[Finding],
    history: History,
    timeline: Timeline,
    judgement: Judgement,
    selected: int,
    width: int,
    height: int,
    t: Thresholds,
    window_s: float,
    interval_s: float,
) -> Panel:
    """All GPUs as cards; when they cannot all fit, the selected GPU's row of cards stays
    in view and a last line counts the cards above and below. A GPU the rules could not
    judge says so instead of "✓ ok"."""
    per_row = max(1, width // CARD_WIDTH)
    card_width = max(24, width // per_row)
    card_rows = max(1, -(-len(devices) // per_row))
    card_height = max(CARD_MIN_HEIGHT, min(CARD_MAX_HEIGHT, height // card_rows))
    visible = max(1, height // card_height) if height > 0 else card_rows
    if visible < card_rows and height - visible * card_height < 1:
        visible = max(1, (height - 1) // card_height)  # a line to say what is not shown
    position = next((i for i, d in enumerate(devices) if d.index == selected), 0) // per_row
    first = min(max(0, position - visible // 2), max(0, card_rows - visible))
    rows: list[Row] = []
    for block in range(first, min(card_rows, first + visible)):
        group = devices[block * per_row : (block + 1) * per_row]
        cards = [
            card(
                frame.gpu(d.index) if frame else None,
                d,
                [f for f in findings if f.gpu == d.index],
                history,
                timeline,
                d.index == selected,
                card_width,
                card_height,
                t,
                window_s,
                interval_s,
                not_judged=judgement.gathering_text()
                if judgement.gathering
                else judgement.missing_on(d.index),
            )
            for d in group
        ]
        key = CardsKey(tuple(d.index for d in group), card_width)
        for line in range(card_height):
            rows.append(Row(tuple(cell for c in cards for cell in c[line]), key))
    hidden = [
        d for i, d in enumerate(devices) if not first * per_row <= i < (first + visible) * per_row
    ]
    if hidden:
        rows.append(hidden_gpus([d.index for d in hidden], findings, "(←/→ to scroll)"))
    return Panel("Overview (o: back to detail)", tuple(rows))
