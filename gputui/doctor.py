"""`gputui doctor`: a readable report of the devices and the advisor's findings."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gputui.clock_events import describe_reasons
from gputui.model import Finding
from gputui.names import NoteKind, Severity
from gputui.sampling.monitor import Monitor
from gputui.units import NA, fmt_duration, fmt_num, short_name, vram_text

SEVERITY_STYLE = {
    Severity.CRITICAL: "bold red",
    Severity.WARNING: "yellow",
    Severity.INFO: "cyan",
}
EXIT_OK, EXIT_WARNING, EXIT_CRITICAL = 0, 1, 2


def exit_status(findings: Sequence[Finding]) -> int:
    severities = {f.severity for f in findings}
    if Severity.CRITICAL in severities:
        return EXIT_CRITICAL
    if Severity.WARNING in severities:
        return EXIT_WARNING
    return EXIT_OK


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
                str(device.index), short_name(device.name), Text("lost" if s else NA, style="red")
            )
            continue
        table.add_row(
            str(device.index),
            short_name(device.name),
            fmt_num(s.util_gpu, " %"),
            f"{fmt_num(s.sm_clock_mhz)}/{fmt_num(device.max_sm_clock_mhz)}",
            fmt_num(s.temp_c, " °C"),
            f"{fmt_num(s.power_w, ' W')}",
            vram_text(s.mem_used, s.mem_total),
            f"Gen{fmt_num(s.pcie_gen)} x{fmt_num(s.pcie_width)}",
            ", ".join(describe_reasons(s.clock_reasons, short=True)) or "none",
        )
    console.print(table)
    for note in frame.notes if frame is not None else ():
        warn = note.kind in (NoteKind.NODE_DOWN, NoteKind.NODE_EMPTY, NoteKind.GPU_LOST)
        console.print(Text(f"! {note.text}", style="yellow" if warn else "dim"))
    console.print()
    findings = monitor.findings
    if not findings:
        console.print(Text("No findings: nothing slows these GPUs down right now.", style="green"))
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
