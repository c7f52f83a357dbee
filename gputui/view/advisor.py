"""The advisor pane: the findings, most severe first, and the selected one's evidence and
remedies wrapped to the pane with a hanging indent. A cut list says what it hides, and a
critical finding is never the part that is cut."""

from __future__ import annotations

from collections.abc import Sequence

from gputui.core.model import Finding
from gputui.core.names import Severity
from gputui.core.units import fmt_age
from gputui.view.cells import Cell, FindingKey, Panel, Role, Row, cut, more_row, plural, wrap
from gputui.view.gpu_list import SEVERITY_MARK, SEVERITY_ROLE, critical_count

WATCHING = (
    "watching: thermal, power, VRAM, CUDA, PCIe, input pipeline, errors, stragglers (r: the rules)"
)
HINT = "n/N: next/previous  g: go to its GPU  enter: in full"


def title_of(findings: Sequence[Finding]) -> str:
    if not findings:
        return "Advisor"
    critical = critical_count(findings)
    return f"Advisor ({plural(len(findings), 'finding')}" + (
        f", {critical} critical)" if critical else ")"
    )


def advisor(
    findings: Sequence[Finding],
    selected: int,
    now: float | None,
    waiting: bool,
    width: int,
    height: int,
    notes: Sequence[str] = (),
    gathering: str | None = None,
    unjudged: Sequence[str] = (),
) -> Panel:
    """``gathering`` ("still judging: 18 s to go ...") replaces the all-clear until every
    rule has had its window; ``unjudged`` (what could not be judged, where) makes the
    all-clear say it covers only what was judged; the source's notes come last."""
    note_rows = [
        Row((Cell(cut(f"! {n}", width), Role.WARN if "down" in n else Role.DIM),)) for n in notes
    ]
    if findings and height > 0:
        # a finding is never crowded out by the source's notes (a cluster has many), nor
        # the line that says how many more findings there are
        need = 1 if len(findings) == 1 else 2
        allowed = max(0, min(max(1, height // 3), height - need))
        if len(note_rows) > allowed:
            keep = max(0, allowed - 1)
            rest = len(note_rows) - keep
            said = (
                f"! and {rest} more notes"
                if keep
                else f"! {plural(rest, 'note')} (a taller pane shows them)"
            )
            note_rows = (
                [*note_rows[:keep], Row((Cell(cut(said, width), Role.DIM),))] if allowed else []
            )
    room = max(1, height - len(note_rows)) if height > 0 else 1_000
    if not findings:
        if waiting:
            rows = [Row((Cell("collecting the first readings…", Role.DIM),))]
        elif gathering:
            rows = [Row((Cell(line, Role.DIM),)) for line in wrap(gathering, width)]
            rows.append(Row((Cell("no all-clear before every rule has looked", Role.DIM),)))
        elif unjudged:
            rows = [Row((Cell("nothing found in what could be judged", Role.PLAIN, bold=True),))]
            for line in unjudged:
                rows += [Row((Cell(part, Role.DIM),)) for part in wrap(line, width)]
        else:
            rows = [Row((Cell("✓ nothing slows these GPUs down right now", Role.OK, bold=True),))]
            rows += [Row((Cell(line, Role.DIM),)) for line in wrap(WATCHING, width)]
    else:
        rows = _findings(findings, min(selected, len(findings) - 1), now, width, room)
    rows = rows[:room]
    return Panel(title_of(findings), tuple(rows + note_rows[: max(0, height - len(rows))]))


def _finding_row(
    f: Finding, position: int, selected: bool, now: float | None, rule: int, age: int, where: int
) -> Row:
    """'▶✖ GPU1  thermal-throttle  1 min  Thermal throttling: …': the rule and age columns
    are as wide on every row, or left out of every row (``rule``/``age`` 0)."""
    place = "host" if f.gpu is None else f"GPU{f.gpu}"
    cells = [
        Cell("▶" if selected else " ", Role.ACCENT, bold=True),
        Cell(f"{SEVERITY_MARK[f.severity]} ", SEVERITY_ROLE[f.severity], bold=True),
        Cell(f"{place:<{where}} ", bold=True),
    ]
    if rule:
        cells.append(Cell(f"{f.rule.value:<{rule}} ", SEVERITY_ROLE[f.severity]))
    if age and now is not None:
        cells.append(Cell(f"{fmt_age(now - f.since):>{age}} ", Role.DIM))
    cells.append(Cell(f.title, bold=selected, flex=True))
    return Row(tuple(cells), FindingKey(position, f.rule.value, f.gpu), bold=selected)


def _columns(findings: Sequence[Finding], now: float | None, width: int) -> tuple[int, int, int]:
    """Widths of the place, rule and age columns; rule and age only where every title
    still fits beside them (the title is what a reader needs)."""
    where = max(len("host" if f.gpu is None else f"GPU{f.gpu}") for f in findings)
    title = max(len(f.title) for f in findings)
    age = max(len(fmt_age(now - f.since)) for f in findings) if now is not None else 0
    rule = max(len(f.rule.value) for f in findings)
    base = 3 + where + 1 + title
    if base + rule + 1 + age + 1 <= width:
        return where, rule, age
    if base + age + 1 <= width:
        return where, 0, age
    return where, 0, 0


def _listed(findings: Sequence[Finding], selected: int, rows: int) -> list[int]:
    """Which findings the list shows in ``rows`` lines (one more says what is hidden):
    every critical one first, then the others around the selected one."""
    if len(findings) <= rows:
        return list(range(len(findings)))
    room = max(1, rows - 1)
    critical = [i for i, f in enumerate(findings) if f.severity is Severity.CRITICAL]
    others = [i for i in range(len(findings)) if i not in critical]
    shown = critical[:room]
    left = room - len(shown)
    if left > 0 and others:
        at = others.index(selected) if selected in others else 0
        first = min(max(0, at - left // 2), max(0, len(others) - left))
        shown += others[first : first + left]
    elif selected not in shown and shown:
        shown[-1] = selected  # more criticals than rows: the selected one still shows
    return sorted(shown)


def _findings(
    findings: Sequence[Finding], selected: int, now: float | None, width: int, room: int
) -> list[Row]:
    critical = critical_count(findings)
    # The list takes a third of a tall pane, all of a short one (too short for the
    # evidence anyway), and never fewer lines than the critical findings need.
    list_rows = room // 3 if room > 8 else room if room < 6 else room - 3
    list_rows = min(len(findings), room, max(1, list_rows, critical + 1))
    shown = _listed(findings, selected, list_rows)
    where, rule, age = _columns([findings[i] for i in shown], now, width)
    rows = [_finding_row(findings[i], i, i == selected, now, rule, age, where) for i in shown]
    hidden = [i for i in range(len(findings)) if i not in shown]
    if hidden:
        critical = critical_count([findings[i] for i in hidden])
        more = more_row(len(hidden), "finding", critical=critical)
        rows.append(Row((*more.cells, Cell("  (n/N to move)", Role.DIM, drop=1))))
    left = room - len(rows)
    if left < 2:
        return rows
    f = findings[selected]
    body: list[Row] = []
    for e in f.evidence:
        body += [Row((Cell(line),)) for line in wrap(e, width, "    ", "  · ")]
    for r in f.remedies:
        body += [Row((Cell(line, Role.OK),)) for line in wrap(r, width, "    ", "  → ")]
    body.append(Row((Cell(cut("  " + HINT, width), Role.DIM),)))
    rows.append(Row((Cell("─" * min(width, 60), Role.DIM),)))
    left -= 1
    if len(body) > left:
        body = [*body[: left - 1], Row((Cell("  … enter: the finding in full", Role.DIM),))]
    return rows + body
