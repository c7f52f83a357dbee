"""The pages that open over the panels: help, a finding in full, the advisor's rules. Rows of
cells like every panel (no Textual): the screen only paints and scrolls them."""

from __future__ import annotations

from collections.abc import Sequence

from gputui.advisor.rule import ARTICLE_CAUSES, Rule
from gputui.core.config import Thresholds
from gputui.core.model import Finding
from gputui.view.cells import Cell, Panel, Role, Row, wrap

#: a section of the help's legend: its title, then (term, what it means)
Legend = Sequence[tuple[str, Sequence[tuple[str, str]]]]

_KEY_COLUMN_MAX = 28


def _text(text: str = "", role: Role = Role.PLAIN, bold: bool = False) -> Row:
    return Row((Cell(text, role, bold=bold),))


def _two_columns(pairs: Sequence[tuple[str, str]], width: int) -> list[Row]:
    """'key   what it does', the second column wrapped under itself; a key wider than its
    column (a third of the width at most) on a line of its own, never cut."""
    longest = max((len(k) for k, _ in pairs), default=0)
    column = min(_KEY_COLUMN_MAX, longest, max(8, width // 3))
    room = max(10, width - column - 2)
    rows = []
    for key, text in pairs:
        lines = wrap(text, room) or [""]
        if len(key) > column:
            rows.append(Row((Cell(key, bold=True),)))
            lead = ""
        else:
            lead = key
        for i, line in enumerate(lines):
            first = f"{lead:<{column}}  " if i == 0 else " " * (column + 2)
            rows.append(Row((Cell(first, bold=True), Cell(line))))
    return rows


def help_page(keys: Sequence[tuple[str, str]], legend: Legend, replay: bool, width: int) -> Panel:
    """Every key that works now (live, or a recording playing), then what the screen's
    symbols and columns mean."""
    mode = "replaying a recording" if replay else "live"
    rows = [Row((Cell("gputui keys", bold=True), Cell(f"  ({mode})", Role.DIM))), _text()]
    rows += _two_columns(keys, width)
    rows += [_text(), _text("What the screen shows", bold=True)]
    for section, entries in legend:
        rows += [_text(), _text(section, Role.ACCENT, bold=True)]
        rows += _two_columns(entries, width)
    rows.append(_text())
    closing = "The mouse works too, but nothing needs it. Esc closes."
    rows += [_text(line, Role.DIM) for line in wrap(closing, width)]
    return Panel("Help", tuple(rows))


def finding_page(finding: Finding, width: int) -> Panel:
    """A finding in full: what holds, the numbers that prove it, what to do."""
    f = finding
    where = "host" if f.gpu is None else f"GPU {f.gpu}"
    role = {"critical": Role.CRIT, "warning": Role.WARN}.get(f.severity.value, Role.ACCENT)
    rows = [
        Row((Cell(f"{f.severity.upper()}  ", role, bold=True), Cell(f"{f.rule}  ({where})"))),
        *[_text(line) for line in wrap(f.title, width)],
        _text(),
        _text("Evidence", bold=True),
    ]
    for line in f.evidence:
        rows += [_text(part) for part in wrap(line, width, "    ", "  · ")]
    rows += [_text(), _text("What to do", bold=True)]
    for remedy in f.remedies:
        rows += [_text(part, Role.OK) for part in wrap(remedy, width, "    ", "  → ")]
    rows += [
        _text(),
        _text("gputui never changes GPU settings: remedies are for you to run.", Role.DIM),
    ]
    return Panel(f"{f.rule} ({where})", tuple(rows))


def rules_page(rules: Sequence[Rule], t: Thresholds, width: int) -> Panel:
    """The advisor's rules: each one's id, when it fires (the numbers it uses), what it
    suggests."""
    rows: list[Row] = [
        _text(line, Role.DIM)
        for line in wrap(
            f"Each rule's cause is numbered as the article behind gputui numbers the causes "
            f"of slow training: {ARTICLE_CAUSES}.",
            width,
        )
    ]
    rows.append(_text())
    for rule in rules:
        cause = Cell(f"  cause {rule.cause}")
        rows.append(Row((Cell(rule.id.value, Role.ACCENT, bold=True), cause)))
        rows += [_text(line) for line in wrap(rule.when_it_fires(t), width, "    ", "  fires: ")]
        rows += [
            _text(line, Role.DIM) for line in wrap(rule.suggests, width, "    ", "  suggests: ")
        ]
        rows.append(_text())
    return Panel("The advisor's rules", tuple(rows[:-1]))
