"""`gputui doctor`: a readable report of the devices and the advisor's findings."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gputui.advisor import Judgement, describe, judgement_of, point_in_time_findings
from gputui.advisor.nodes import is_cluster, node_dict, node_rows
from gputui.clock_events import describe_reasons
from gputui.model import Finding
from gputui.names import NoteKind, Severity
from gputui.sampling.monitor import Monitor
from gputui.units import NA, fmt_duration, fmt_link, fmt_num, fmt_of, short_name, vram_text

SEVERITY_STYLE = {
    Severity.CRITICAL: "bold red",
    Severity.WARNING: "yellow",
    Severity.INFO: "cyan",
}
EXIT_OK, EXIT_WARNING, EXIT_CRITICAL = 0, 1, 2
EXIT_NOT_JUDGED = 4  # 3, no GPU could be read, is the command line's (cli.EXIT_NO_SOURCE)


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


def _print_nodes(monitor: Monitor, console: Console) -> None:
    """With GPUs on several nodes: each node on one line, worst first."""
    if not is_cluster(monitor.devices):
        return
    rows = node_rows(monitor.devices, monitor.latest, point_in_time_findings(monitor))
    console.print()
    console.print(Text(f"{len(rows)} nodes, worst first", style="bold"))
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
        console.print(line)


def render_report(monitor: Monitor, console: Console | None = None) -> None:
    console = console or Console()
    frame = monitor.latest
    first = monitor.devices[0] if monitor.devices else None
    span = monitor.history.times()
    header = Text.assemble(
        ("gputui doctor", "bold"),
        f"  source {monitor.source.label}",
        f"  driver {(first.driver_version if first else None) or NA}",
        f"  CUDA {(first.cuda_driver_version if first else None) or NA}",
        f"  {len(monitor.devices)} GPU(s)",
        f"  sampled {fmt_duration(span[-1] - span[0]) if len(span) > 1 else '1 reading'}",
    )
    console.print(header)
    if monitor.source.detail:
        console.print(Text(monitor.source.detail, style="dim"))
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in (
        "GPU",
        "name",
        "util",
        "SM MHz",
        "temp",
        "power",
        "VRAM",
        "PCIe",
        "clock events",
    ):
        table.add_column(column)
    samples = {s.index: s for s in frame.gpus} if frame is not None else {}
    for device in monitor.devices:
        s = samples.get(device.index)
        if s is None or s.lost:
            table.add_row(
                str(device.index),
                Text(short_name(device.name)),  # outside text: never markup
                Text("lost" if s else NA, style="red"),
            )
            continue
        table.add_row(
            str(device.index),
            Text(short_name(device.name)),
            fmt_num(s.util_gpu, " %"),
            fmt_of(s.sm_clock_mhz, device.max_sm_clock_mhz),
            fmt_num(s.temp_c, " °C"),
            f"{fmt_num(s.power_w, ' W')}",
            vram_text(s.mem_used, s.mem_total),
            fmt_link(s.pcie_gen, s.pcie_width),
            ", ".join(describe_reasons(s.clock_reasons, short=True)) or "none",
        )
    console.print(table)
    _print_nodes(monitor, console)
    for note in frame.notes if frame is not None else ():
        warn = note.kind in (NoteKind.NODE_DOWN, NoteKind.NODE_EMPTY, NoteKind.GPU_LOST)
        console.print(Text(f"! {note.text}", style="yellow" if warn else "dim"))
    console.print()
    findings = point_in_time_findings(monitor)
    judgement = judgement_of(monitor)
    for line in describe(judgement):
        console.print(Text(line, style="yellow"))
    if describe(judgement):
        console.print()
    if not findings:
        if judgement.complete:
            console.print(
                Text(
                    f"No findings over the {fmt_duration(judgement.seen_s)} sampled: "
                    "nothing slows these GPUs down right now.",
                    style="green",
                )
            )
        elif judgement.gathering:
            console.print(Text(f"No verdict yet ({judgement.gathering_text()}).", style="yellow"))
        else:
            console.print(
                Text(
                    "Nothing found in what could be judged (see not judged above).", style="yellow"
                )
            )
        return
    for finding in findings:
        where = "host" if finding.gpu is None else f"GPU {finding.gpu}"
        console.print(
            Text.assemble(
                (f"{finding.severity.upper():8}", SEVERITY_STYLE[finding.severity]),
                (f" {finding.rule}", "bold"),
                f" ({where}) ",
                finding.title,
            )
        )
        for line in finding.evidence:
            console.print(Text(f"    · {line}"))
        for remedy in finding.remedies:
            console.print(Text(f"    → {remedy}", style="dim"))
    counts = {sev: sum(1 for f in findings if f.severity == sev) for sev in SEVERITY_STYLE}
    summary = ", ".join(f"{n} {sev}" for sev, n in counts.items() if n)
    console.print()
    console.print(Text(f"{len(findings)} finding(s): {summary}", style="bold"))
