"""The snapshot document as a Markdown report (``gputui snapshot -o x.md`` and the ``s`` key).

Prose is wrapped at 80 columns, a list item's continuation indented under its text (2
spaces, 4 in a nested item) and never starting with a list marker; a table row is one line,
whatever its length; no line ends with a space (two would be a hard line break).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gputui.advisor.coverage import context_lines, describe
from gputui.core.clock_events import describe_reasons
from gputui.core.judgement import Judgement
from gputui.core.model import DeviceInfo, Frame
from gputui.core.names import SourceKind
from gputui.core.pcie import link_bandwidth
from gputui.core.prose import simulated_span, starts_no_unit, wrap
from gputui.core.units import NA, fmt_bytes, fmt_duration, fmt_link, fmt_num, fmt_rate, known
from gputui.exporters.code_spans import code_span, pieces
from gputui.formats.snapshot import Snapshot, dumps, parse_snapshot

#: the width prose is wrapped at: the report reads on an 80-column terminal
WIDTH = 80
_ORDERED = re.compile(r"\d{1,9}[.)]")


def _of(value: float | int | None, limit: float | int | None, unit: str) -> str:
    if not known(value):
        return NA
    suffix = f" {unit}" if unit else ""
    if not known(limit):
        return f"{value:.0f}{suffix}"
    return f"{value:.0f} / {limit:.0f}{suffix}"


_MARKDOWN_SPECIAL = str.maketrans({c: f"\\{c}" for c in "\\`*_[]<>|#!~"} | {"&": "&amp;"})


def md(text: object) -> str:
    """Text shown literally in Markdown: no emphasis, link, image, HTML or table cell can
    come out of a command line, a GPU name or a label (they are already free of control
    characters: gputui.core.sanitize)."""
    return str(text).translate(_MARKDOWN_SPECIAL)


# Inside a code span a space is this until the lines are wrapped: a command never breaks.
_KEEP_SPACE = "\x00"


def remedy_markdown(remedy: str) -> str:
    """A remedy with its commands and code as code spans (copied as read), the rest as
    literal prose."""
    return "".join(
        code_span(piece).replace(" ", _KEEP_SPACE) if code else md(piece)
        for piece, code in pieces(remedy)
    )


def may_start_line(word: str) -> bool:
    """Whether a wrapped line may start with ``word``: not a list marker ('-', '+', '*',
    '1.', '2)'), nor a run of '=' or '-' that would underline the line before as a
    heading, nor a unit torn from its number."""
    if word in ("-", "+", "*") or _ORDERED.fullmatch(word):
        return False
    if word and (set(word) <= {"="} or set(word) <= {"-"}):
        return False
    return starts_no_unit(word)


def _wrapped(line: str) -> list[str]:
    """One Markdown line as lines of at most ``WIDTH`` columns where it can break: a list
    item continues under its text, a paragraph at the margin; a table row stays whole."""
    line = line.rstrip()
    if line.startswith("|") or line.startswith("#") or not line:
        return [line]
    stripped = line.lstrip(" ")
    indent = len(line) - len(stripped) + (2 if stripped.startswith("- ") else 0)
    # a word is never cut: a cut would put a space into it when the Markdown is read
    return wrap(line, WIDTH, indent, may_start=may_start_line, cut_long_words=False)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(c if c == "---" else md(c) for c in cells) + " |"


def _history_line(times: Sequence[float], simulated_warmup_s: float | None) -> str:
    span = times[-1] - times[0] if len(times) > 1 else 0.0
    if simulated_warmup_s is not None:
        return f"- History: {len(times)} points, {simulated_span(span, simulated_warmup_s)}"
    if len(times) > 1:
        return f"- History: {len(times)} points over {fmt_duration(span)}"
    return f"- History: {len(times)} points"


def markdown_report(document: Mapping[str, Any], simulated_warmup_s: float | None = None) -> str:
    """A readable report of a snapshot document (the dict ``snapshot_dict`` returns).

    ``simulated_warmup_s``: the demo's warm-up, when the history was simulated at once
    rather than sampled (``gputui snapshot --demo``), so the report does not call it
    sampled."""
    snap = parse_snapshot(dumps(document))
    frame = snap.latest
    lines = _head(snap, simulated_warmup_s)
    lines += ["", "## Findings", ""]
    lines += _findings(snap)
    lines += ["", "## GPUs", ""]
    lines += _gpu_table(snap.devices, frame)
    lines += ["", "## Processes", ""]
    lines += _process_table(frame)
    if frame is not None and frame.notes:
        lines += ["", "## Notes", ""] + [f"- {md(note.text)}" for note in frame.notes]
    text = "\n".join(out for line in lines for out in _wrapped(line)) + "\n"
    return text.replace(_KEEP_SPACE, " ")


def _head(snap: Snapshot, simulated_warmup_s: float | None) -> list[str]:
    frame = snap.latest
    lines = [
        f"# gputui snapshot: {snap.generated_at}",
        "",
        f"- Source: **{md(snap.source.label)}**"
        + (f" ({md(snap.source.detail)})" if snap.source.detail else ""),
    ]
    if snap.devices:
        d0 = snap.devices[0]
        lines.append(
            f"- Driver {d0.driver_version or NA}, CUDA driver {d0.cuda_driver_version or NA}, "
            f"{len(snap.devices)} GPU(s)"
        )
    if frame is not None and frame.host is not None:
        h = frame.host
        lines.append(
            f"- Host {md(h.hostname or NA)}: CPU {fmt_num(h.cpu_percent, ' %', 1)} "
            f"of {h.cpu_count or NA} cores, "
            f"load {fmt_num(h.load_1, '', 2)}, memory available {fmt_bytes(h.mem_available)} of "
            f"{fmt_bytes(h.mem_total)}, swap used {fmt_bytes(h.swap_used)}, iowait "
            f"{fmt_num(h.iowait_pct, ' %', 1)}"
        )
    simulated = snap.source.kind is SourceKind.SIMULATED
    lines.append(_history_line(snap.history_times, simulated_warmup_s if simulated else None))
    return lines


def _findings(snap: Snapshot) -> list[str]:
    lines: list[str] = []
    for finding in snap.findings:
        where = "host" if finding.get("gpu") is None else f"GPU {finding['gpu']}"
        lines.append(
            f"- **{finding.get('severity', '?').upper()}** `{finding.get('rule')}` ({where}): "
            f"{md(finding.get('title'))}"
        )
        # Remedies are imperatives ("Do augmentation on the GPU", "Check the airflow"):
        # an arrow sets them apart from the evidence without a word to double.
        for evidence in finding.get("evidence", ()):
            lines.append(f"  - {md(evidence)}")
        for remedy in finding.get("remedies", ()):
            lines.append(f"  - → {remedy_markdown(remedy)}")
    judgement = Judgement.from_dict(snap.judgement) if snap.judgement is not None else None
    if judgement is not None:
        lines += [f"- {md(line)}" for line in (*describe(judgement), *context_lines(judgement))]
    if snap.findings:
        return lines
    if lines and lines[-1]:
        lines.append("")  # a paragraph of its own, not the last item's lazy continuation
    if judgement is not None and judgement.gathering:
        lines.append(f"No verdict yet ({judgement.gathering_text()}).")
    elif judgement is not None and judgement.not_judged:
        lines.append("Nothing found in what could be judged (see not judged above).")
    elif judgement is not None and judgement.watching:
        lines.append("Nothing found so far; some verdicts need a longer watch (see above).")
    else:
        lines.append("No findings.")
    return lines


_GPU_COLUMNS = (
    "GPU",
    "Name",
    "Util",
    "SM clock (MHz)",
    "Temp (°C)",
    "Power (W)",
    "VRAM",
    "PCIe",
    "RX / TX",
    "Clock events",
)


def _gpu_table(devices: Sequence[DeviceInfo], frame: Frame | None) -> list[str]:
    lines = [_row(list(_GPU_COLUMNS)), _row(["---"] * len(_GPU_COLUMNS))]
    samples = {s.index: s for s in frame.gpus} if frame is not None else {}
    for device in devices:
        s = samples.get(device.index)
        if s is None or s.lost:
            lines.append(_row([str(device.index), device.name, "lost" if s else NA] + [NA] * 7))
            continue
        capacity = link_bandwidth(s.pcie_gen, s.pcie_width)
        link = fmt_link(s.pcie_gen, s.pcie_width)
        if link != NA and (known(device.pcie_max_gen) or known(device.pcie_max_width)):
            link += f" (max {fmt_link(device.pcie_max_gen, device.pcie_max_width)})"
        lines.append(
            _row(
                [
                    str(device.index),
                    device.name,
                    fmt_num(s.util_gpu, " %"),
                    _of(s.sm_clock_mhz, device.max_sm_clock_mhz, ""),
                    _of(s.temp_c, device.temp_slowdown_c, "(slowdown)"),
                    _of(s.power_w, s.power_limit_w, ""),
                    f"{fmt_bytes(s.mem_used)} / {fmt_bytes(s.mem_total)}",
                    link + (f", {fmt_rate(capacity)}" if capacity else ""),
                    f"{fmt_rate(s.pcie_rx_bps)} / {fmt_rate(s.pcie_tx_bps)}",
                    ", ".join(describe_reasons(s.clock_reasons)) or "none",
                ]
            )
        )
    return lines


_PROCESS_COLUMNS = (
    "GPU",
    "PID",
    "User",
    "GPU memory",
    "CPU %",
    "RSS",
    "Threads",
    "Workers",
    "Command",
)


def _process_table(frame: Frame | None) -> list[str]:
    if frame is None or not frame.processes:
        return ["No processes on the GPUs."]
    lines = [_row(list(_PROCESS_COLUMNS)), _row(["---"] * len(_PROCESS_COLUMNS))]
    for p in frame.processes:
        lines.append(
            _row(
                [
                    str(p.gpu_index),
                    str(p.pid),
                    p.user or NA,
                    fmt_bytes(p.gpu_memory),
                    fmt_num(p.cpu_percent, "", 1),
                    fmt_bytes(p.rss),
                    fmt_num(p.threads),
                    fmt_num(p.children),
                    (p.command or ("(not visible here)" if not p.visible else NA))[:200],
                ]
            )
        )
    return lines
