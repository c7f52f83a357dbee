"""`gputui doctor`: a readable report of the devices and the advisor's findings.

The report is laid out here, line by line, for the console's width (80 columns in a pipe,
or $COLUMNS): a wrapped line continues under the text after its bullet or label, no line
ends with a space, and outside text (GPU names, notes, command lines) is never read as
Rich markup.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from gputui.advisor import Judgement, describe, judgement_of, point_in_time_findings
from gputui.advisor.config_check import (
    NOT_READ,
    CheckState,
    ConfigVerdict,
    check_states,
    configuration_rules,
    settings_read,
    unread_checks,
)
from gputui.advisor.context import smi_target
from gputui.advisor.coverage import context_lines
from gputui.advisor.groups import group as finding_groups
from gputui.advisor.nodes import is_cluster, node_dict, node_rows
from gputui.core.clock_events import describe_reasons
from gputui.core.model import DeviceInfo, Finding, Frame
from gputui.core.names import NoteKind, Severity, SourceKind
from gputui.core.prose import MIN_WIDTH, hang, simulated_span, spans, starts_no_unit
from gputui.core.records import frozen
from gputui.core.units import NA, fmt_duration, fmt_link, fmt_num, fmt_of, short_name, vram_text
from gputui.exporters.configuration import check_lines, settings_lines
from gputui.sampling.monitor import Monitor

SEVERITY_STYLE = {
    Severity.CRITICAL: "bold red",
    Severity.WARNING: "yellow",
    Severity.INFO: "cyan",
}
EXIT_OK, EXIT_WARNING, EXIT_CRITICAL = 0, 1, 2
EXIT_NOT_JUDGED = 4  # 3, no GPU could be read, is the command line's (cli.EXIT_NO_SOURCE)
EXIT_NO_GPU_READ = 3  # ... and a run's in which none answered (``none_read``)
#: the table's columns; the ones that may wrap inside their cell, and the gap between them
COLUMNS = ("GPU", "name", "util", "SM MHz", "temp", "power", "VRAM", "PCIe", "clock events")
WRAPPING = frozenset({"name", "clock events"})
GAP = 2
#: a cell that wraps keeps at least this many columns (or its header's width, if more),
#: and at most this many lines (a 16,000-character GPU name ends in an ellipsis)
MIN_CELL = 8
MAX_CELL_LINES = 3


def exit_status(findings: Sequence[Finding], judgement: Judgement | None = None) -> int:
    """Critical (2) over warnings (1) over "could not judge everything" (4) over 0."""
    severities = {f.severity for f in findings}
    if Severity.CRITICAL in severities:
        return EXIT_CRITICAL
    if Severity.WARNING in severities:
        return EXIT_WARNING
    if judgement is not None and not judgement.complete:
        return EXIT_NOT_JUDGED
    return EXIT_OK


def none_read(monitor: Monitor) -> bool:
    """Whether the run read no GPU at all: every node down (a Prometheus server whose
    targets all stopped, a cluster that went away). Waiting longer is no help there: exit
    3, as when the source cannot be opened, not 4 ("still judging")."""
    history = monitor.history
    return bool(monitor.devices) and all(
        history.last_seen(d.index) is None for d in monitor.devices
    )


def run_status(monitor: Monitor, findings: Sequence[Finding], judgement: Judgement) -> int:
    """doctor's exit status for a run: ``exit_status``, or 3 where no GPU was read."""
    if none_read(monitor):
        return EXIT_NO_GPU_READ
    return exit_status(findings, judgement)


def wrapped(line: Text, width: int, indent: int = 0) -> list[Text]:
    """``line`` as lines of at most ``width`` cells, each continuation starting with
    ``indent`` spaces (under the text after a bullet or label), styles kept."""
    prefix = " " * hang(width, indent)
    out: list[Text] = []
    for n, part in enumerate(line.split("\n", allow_blank=True)):
        for i, (start, end) in enumerate(
            spans(part.plain, width, indent, may_start=starts_no_unit)
        ):
            piece = part[start:end]
            out.append(Text.assemble(prefix, piece) if i or n else piece)
    return out


def packed(items: Sequence[Text], width: int, indent: int) -> list[Text]:
    """Header items two spaces apart, as many to a line as fit: a line breaks between
    items, not inside one ('driver 550.54.15'), unless one alone is wider than a line."""
    prefix = " " * hang(width, indent)
    lines: list[Text] = []
    line = Text()
    for item in items:
        if not line.plain:
            line = Text.assemble(prefix if lines else "", item)
        elif cell_len(line.plain) + GAP + cell_len(item.plain) <= width:
            line = Text.assemble(line, " " * GAP, item)
        else:
            lines.append(line)
            line = Text.assemble(prefix, item)
        if cell_len(line.plain) > width:  # too wide alone: wrapped, its last line kept open
            *done, line = wrapped(line, width, indent)
            lines += done
    return [*lines, line]


def _label_indent(text: str, limit: int = 30) -> int:
    """Where the text after a short 'label: ' starts (2 when there is no such label)."""
    colon = text.find(": ")
    return colon + 2 if colon > 0 and colon + 2 <= limit else 2


@frozen
class _Cell:
    text: Text
    wraps: bool


def table_rows(
    header: Sequence[str], rows: Sequence[Sequence[Text]], width: int
) -> list[list[Text]]:
    """A plain table that fits ``width`` when it can, as the lines of each row (the
    header's first): the wrapping columns (``WRAPPING``) narrow first, their cells
    continuing on the next line inside the column."""
    count = len(header)
    cells = [[_Cell(Text(h, style="bold"), False) for h in header]] + [
        [_Cell(row[c] if c < len(row) else Text(""), header[c] in WRAPPING) for c in range(count)]
        for row in rows
    ]
    widths = [max(cell_len(r[c].text.plain) for r in cells) for c in range(count)]
    widths = [min(w, width) if header[c] in WRAPPING else w for c, w in enumerate(widths)]
    floors = [
        max(cell_len(header[c]), min(widths[c], MIN_CELL)) if header[c] in WRAPPING else widths[c]
        for c in range(count)
    ]
    excess = sum(widths) + GAP * (count - 1) - width
    while excess > 0:
        slack = [(widths[c] - floors[c], c) for c in range(count) if widths[c] > floors[c]]
        if not slack:
            break  # narrower than the numbers: the rows run past the width
        widths[max(slack)[1]] -= 1
        excess -= 1
    out: list[list[Text]] = []
    for row in cells:
        parts = [
            _cell_lines(cell.text, widths[c]) if cell.wraps else [cell.text]
            for c, cell in enumerate(row)
        ]
        lines: list[Text] = []
        for k in range(max(len(p) for p in parts)):
            line = Text()
            for c, part in enumerate(parts):
                piece = part[k] if k < len(part) else Text("")
                line.append_text(piece)
                if c < count - 1:
                    line.append(" " * (widths[c] - cell_len(piece.plain) + GAP))
            line.rstrip()
            lines.append(line)
        out.append(lines)
    return out


def _cell_lines(text: Text, width: int) -> list[Text]:
    """A wrapping cell's lines, at most ``MAX_CELL_LINES``, the last ending in '…' when
    there was more."""
    lines = wrapped(text, width)
    if len(lines) <= MAX_CELL_LINES:
        return lines
    last = lines[MAX_CELL_LINES - 1]
    last.truncate(max(0, width - 1))
    last.rstrip()
    last.append("…")
    return [*lines[: MAX_CELL_LINES - 1], last]


def _fits(header: Sequence[str], rows: Sequence[Sequence[Text]], width: int) -> bool:
    widths = [
        max([cell_len(header[c])] + [cell_len(r[c].plain) for r in rows if c < len(r)])
        for c in range(len(header))
    ]
    return sum(widths) + GAP * (len(header) - 1) <= width


def _device_table(monitor: Monitor, width: int) -> list[Text]:
    """The GPU table: with its clock-events column where that fits unwrapped, else with
    each GPU's clock events on a line of their own under its row (80 columns)."""
    rows = _device_rows(monitor)
    if _fits(COLUMNS, rows, width):
        return [line for group in table_rows(COLUMNS, rows, width) for line in group]
    *narrow, events = COLUMNS
    groups = table_rows(narrow, [row[: len(narrow)] for row in rows], width)
    lines = groups[0]
    for row, group in zip(rows, groups[1:], strict=True):
        lines += group
        said = row[len(narrow)].plain if len(row) > len(narrow) else "none"
        if said != "none":
            label = f"{' ' * (len(COLUMNS[0]) + GAP)}{events}: "
            lines += wrapped(Text(label + said), width, len(label))
    return lines


def _device_rows(monitor: Monitor) -> list[list[Text]]:
    frame = monitor.latest
    samples = {s.index: s for s in frame.gpus} if frame is not None else {}
    rows: list[list[Text]] = []
    for device in monitor.devices:
        s = samples.get(device.index)
        name = Text(short_name(device.name))  # outside text: never markup
        if device.node is not None:  # a cluster's GPU: its node, and its number there
            there = smi_target(device, device.index)[1]
            name = Text(f"{device.node}:{there} {short_name(device.name)}")
        if s is None or s.lost:
            rows.append([Text(str(device.index)), name, Text("lost" if s else NA, style="red")])
            continue
        rows.append(
            [
                Text(str(device.index)),
                name,
                Text(fmt_num(s.util_gpu, " %")),
                Text(fmt_of(s.sm_clock_mhz, device.max_sm_clock_mhz)),
                Text(fmt_num(s.temp_c, " °C")),
                Text(fmt_num(s.power_w, " W")),
                Text(vram_text(s.mem_used, s.mem_total)),
                Text(fmt_link(s.pcie_gen, s.pcie_width)),
                Text(", ".join(describe_reasons(s.clock_reasons, short=True)) or "none"),
            ]
        )
    return rows


def _node_lines(monitor: Monitor, width: int) -> list[Text]:
    """With GPUs on several nodes: each node on one line, worst first."""
    if not is_cluster(monitor.devices):
        return []
    rows = node_rows(monitor.devices, monitor.latest, point_in_time_findings(monitor))
    lines = [Text(), Text(f"{len(rows)} nodes, worst first", style="bold")]
    for row in rows:
        summary = node_dict(row)
        worst = summary["worst"]
        line = Text(f"  {row.node}", style="bold")  # outside text: never markup
        line.append(f"  {len(row.gpus)} GPU(s)  ")
        style = SEVERITY_STYLE[Severity(worst)] if worst else "green"
        line.append(
            f"{row.findings} finding(s), worst {worst}" if worst else "nothing found", style=style
        )
        if summary["not_reporting"]:
            line.append(f"  {summary['not_reporting']} GPU(s) not reporting", style="yellow")
        lines += wrapped(line, width, 4)
    return lines


def sampled_text(monitor: Monitor, simulated_warmup_s: float | None = None) -> str:
    """How much history the report judged, without overstating it: 'sampled 10 s' live;
    for the demo (``simulated_warmup_s`` given), simulated time said to be simulated."""
    times = monitor.history.times()
    span = times[-1] - times[0] if len(times) > 1 else 0.0
    if simulated_warmup_s is not None and monitor.source.kind is SourceKind.SIMULATED:
        return simulated_span(span, simulated_warmup_s)
    return f"sampled {fmt_duration(span)}" if len(times) > 1 else "sampled 1 reading"


def report_lines(
    monitor: Monitor, width: int = 80, simulated_warmup_s: float | None = None
) -> list[Text]:
    """The report, laid out for ``width`` columns (at least ``prose.MIN_WIDTH``)."""
    width = max(width, MIN_WIDTH)
    frame = monitor.latest
    first = monitor.devices[0] if monitor.devices else None
    sampled = sampled_text(monitor, simulated_warmup_s)
    title = "gputui doctor"
    header = [
        Text(title, style="bold"),
        Text(f"source {monitor.source.label}"),  # outside text: never markup
        Text(f"driver {(first.driver_version if first else None) or NA}"),
        Text(f"CUDA {(first.cuda_driver_version if first else None) or NA}"),
        Text(f"{len(monitor.devices)} GPU(s)"),
        Text(sampled),
    ]
    lines = packed(header, width, len(title) + GAP)
    if monitor.source.detail:
        detail = monitor.source.detail
        lines += wrapped(Text(detail, style="dim"), width, _label_indent(detail))
    findings = point_in_time_findings(monitor)
    judgement = judgement_of(monitor)
    lines += wrapped(_verdict(findings, judgement, monitor, simulated_warmup_s), width, 2)
    lines += _device_table(monitor, width)
    lines += _node_lines(monitor, width)
    for note in frame.notes if frame is not None else ():
        warn = note.kind in (NoteKind.NODE_DOWN, NoteKind.NODE_EMPTY, NoteKind.GPU_LOST)
        lines += wrapped(Text(f"! {note.text}", style="yellow" if warn else "dim"), width, 2)
    said = describe(judgement)
    if said:
        lines.append(Text())
    for line in said:
        lines += wrapped(Text(line, style="yellow"), width, _label_indent(line))
    lines += finding_blocks(findings, width, monitor.devices)
    if settings_read(frame):  # the configuration section: only where settings were read
        unread = unread_checks(frame, monitor.devices)
        checks = check_states(configuration_rules(), findings, judgement, unread)
        lines += configuration_section(monitor.devices, frame, checks, width)
    context = context_lines(judgement)
    if context:
        lines.append(Text())
    for line in context:
        lines += wrapped(Text(line, style="dim"), width, _label_indent(line))
    return lines


def finding_blocks(
    findings: Sequence[Finding], width: int, devices: Sequence[DeviceInfo] = ()
) -> list[Text]:
    """Each finding (one block for one finding on several GPUs): severity, rule, where
    (on a cluster, the node and the GPU's number there too) and title, then its evidence
    and remedies."""
    lines: list[Text] = []
    by_index = {d.index: d for d in devices}
    for block in finding_groups(findings):
        lines.append(Text())
        severity = f"{block.severity.upper():8} "
        title_line = Text.assemble(
            (severity.rstrip(), SEVERITY_STYLE[block.severity]),
            " " * (len(severity) - len(severity.rstrip())),
            (block.rule, "bold"),
            f" ({block.where_on(by_index)}) ",
            block.title,
        )
        lines += wrapped(title_line, width, len(severity))
        for line in block.evidence:
            lines += wrapped(Text(f"    · {line}"), width, 6)
        for remedy in block.remedies:
            lines += wrapped(Text(f"    → {remedy}", style="dim"), width, 6)
    return lines


def summary(findings: Sequence[Finding]) -> str:
    """'1 critical, 2 warnings, 3 info'."""
    counts = {sev: sum(1 for f in findings if f.severity == sev) for sev in SEVERITY_STYLE}
    return ", ".join(
        f"{n} {sev}" if sev is Severity.INFO or n == 1 else f"{n} {sev}s"
        for sev, n in counts.items()
        if n
    )


def configuration_section(
    devices: Sequence[DeviceInfo], frame: Frame | None, checks: Sequence[CheckState], width: int
) -> list[Text]:
    """The configuration section: what was read of the settings, then each check's state."""
    lines = [Text(), Text(f"configuration: {len(checks)} checks", style="bold")]
    read = settings_lines(devices, frame)
    if frame is not None and not settings_read(frame):
        read.append(
            "this source does not read the node's or the jobs' settings (simulated, remote "
            'or recorded): the checks of them say "not read"'
        )
    for item in read:
        lines += wrapped(Text(f"  {item}", style="dim"), width, 4)
    for line in check_lines(checks):
        lines += wrapped(Text.assemble("  ", line), width, 4)
    return lines


def _found(findings: Sequence[Finding], judgement: Judgement) -> tuple[int, str, Text | None]:
    """The exit status, the findings in words, and the verdict line when warnings or
    critical findings decide it."""
    status = exit_status(findings, judgement)
    said = summary(findings)
    if status not in (EXIT_CRITICAL, EXIT_WARNING):
        return status, said, None
    style = SEVERITY_STYLE[Severity.CRITICAL if status == EXIT_CRITICAL else Severity.WARNING]
    return status, said, Text(f"verdict: {said} (exit {status})", style=f"bold {style}")


def config_verdict(
    findings: Sequence[Finding], judgement: Judgement, checks: Sequence[CheckState]
) -> Text:
    """`doctor --config`'s verdict line: what its exit status says, and how many checks
    the source gave nothing to look at."""
    status, said, found = _found(findings, judgement)
    if found is not None:
        return found
    context = f"; {said}, context only" if said else ""
    if status == EXIT_NOT_JUDGED:
        return Text(
            "verdict: nothing found in what could be judged, but not everything could be "
            f"(below){context} (exit {status})",
            style="bold yellow",
        )
    unread = sum(1 for c in checks if c.state == NOT_READ)
    if unread:
        return Text(
            f"verdict: nothing found in what this source reports ({len(checks) - unread} of "
            f"{len(checks)} checks; {unread} not read: this source gives them nothing to look "
            f"at{context}; exit 0)",
            style="bold green",
        )
    return Text(
        f"verdict: nothing in this node's or job's configuration slows training "
        f"({len(checks)} checks{context}; exit 0)",
        style="bold green",
    )


def config_report_lines(
    source: str,
    devices: Sequence[DeviceInfo],
    frame: Frame,
    verdict: ConfigVerdict,
    elapsed_s: float,
    width: int = 80,
) -> list[Text]:
    """`gputui doctor --config`'s report: header, verdict, findings, the section."""
    width = max(width, MIN_WIDTH)
    first = devices[0] if devices else None
    title = "gputui doctor --config"
    header = [
        Text(title, style="bold"),
        Text(f"source {source}"),  # outside text: never markup
        Text(f"driver {(first.driver_version if first else None) or NA}"),
        Text(f"{len(devices)} GPU(s)"),
        Text(f"{len(verdict.checks)} checks in {elapsed_s:.2f} s"),
    ]
    lines = packed(header, width, len(title) + GAP)
    lines += wrapped(config_verdict(verdict.findings, verdict.judgement, verdict.checks), width, 2)
    lines += finding_blocks(verdict.findings, width, devices)
    lines += configuration_section(devices, frame, verdict.checks, width)
    said = describe(verdict.judgement)
    if said:
        lines.append(Text())
    for line in said:
        lines += wrapped(Text(line, style="yellow"), width, _label_indent(line))
    return lines


def _verdict(
    findings: Sequence[Finding],
    judgement: Judgement,
    monitor: Monitor,
    simulated_warmup_s: float | None,
) -> Text:
    """The report's first line after its header: what the exit status says, in words."""
    if none_read(monitor):
        return Text(
            f"verdict: no GPU answered during the run ({len(monitor.devices)} listed at the "
            f"start; the notes below say why) (exit {EXIT_NO_GPU_READ})",
            style="bold red",
        )
    status, said, found = _found(findings, judgement)
    if found is not None:
        return found
    context = f"; {said}, context only" if said else ""
    if status == EXIT_NOT_JUDGED:
        if judgement.gathering:
            why = f"no verdict yet, {judgement.gathering_text()}"
        elif judgement.not_judged:
            why = "nothing found in what could be judged, but not everything could be (below)"
        else:
            why = (
                f"nothing found so far, but {len(judgement.watching)} verdict(s) need a longer "
                f"watch than the {fmt_duration(judgement.seen_s)} sampled (watching, below)"
            )
        return Text(f"verdict: {why}{context} (exit {status})", style="bold yellow")
    over = (
        f"{fmt_duration(judgement.seen_s)} of simulated history"
        if simulated_warmup_s is not None and monitor.source.kind is SourceKind.SIMULATED
        else f"{fmt_duration(judgement.seen_s)} sampled"
    )
    return Text(
        f"verdict: nothing slows these GPUs down right now (over the {over}{context}; exit 0)",
        style="bold green",
    )


class TextConsole(Console):
    """Rich's console for a command's text, whose reader may go away (``| head``): Rich
    exits 1 there, which is doctor's "warnings"; the pipe's own error goes up instead and
    the command line gives it a status of its own."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def render_lines(lines: Sequence[Text], console: Console | None = None) -> None:
    """Print lines laid out already: Rich must neither wrap nor crop them again."""
    console = console or TextConsole()
    for line in lines:
        console.print(line, soft_wrap=True)


def render_report(
    monitor: Monitor, console: Console | None = None, simulated_warmup_s: float | None = None
) -> None:
    """Print the report at the console's width: the terminal's, or 80 columns (or $COLUMNS)
    in a pipe. ``simulated_warmup_s``: the demo's warm-up, so the report does not call
    simulated history sampled."""
    console = console or TextConsole()
    render_lines(report_lines(monitor, console.width, simulated_warmup_s), console)
