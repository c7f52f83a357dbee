"""Screens over the monitor: help, a finding in full, the advisor's rule catalogue, the
cluster."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gputui.advisor import RULES
from gputui.advisor.nodes import NodeRow, node_rows
from gputui.core.config import Thresholds
from gputui.core.model import Finding
from gputui.sampling.monitor import Monitor
from gputui.ui.cluster import cluster_lines
from gputui.ui.keys import LEGEND, key_rows


class _Modal(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,enter", "close", "close"),
    ]

    def action_close(self) -> None:
        self.dismiss(None)


class HelpScreen(_Modal):
    """Every key that works now (live, or a recording playing), then what the screen's
    symbols and columns mean; both come from gputui/ui/keys.py, this only lays them out."""

    def __init__(self, bindings: Sequence[BindingType], replay: bool = False) -> None:
        super().__init__()
        self.replay = replay
        #: (keys, description), as shown
        self.rows = key_rows(bindings, replay)

    def compose(self) -> ComposeResult:
        mode = "replaying a recording" if self.replay else "live"
        title = Text.assemble(("gputui keys", "bold"), (f"  ({mode})\n", "dim"))
        keys = _two_columns()
        for key, description in self.rows:
            keys.add_row(Text(key), Text(description))
        legend = _two_columns()
        for section, entries in LEGEND:
            legend.add_row(Text(f"\n{section}", style="bold underline"), Text(""))
            for term, meaning in entries:
                legend.add_row(Text(term), Text(meaning))
        with VerticalScroll(id="dialog"):
            yield Static(title)
            yield Static(keys, id="help-keys")
            yield Static(Text("\nWhat the screen shows", style="bold"))
            yield Static(legend, id="help-legend")
            yield Static(
                Text("\nThe mouse works too, but nothing needs it. Esc closes.", style="dim")
            )


def _two_columns() -> Table:
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    return table


class FindingScreen(_Modal):
    def __init__(self, finding: Finding) -> None:
        super().__init__()
        self._finding = finding

    def compose(self) -> ComposeResult:
        f = self._finding
        where = "host" if f.gpu is None else f"GPU {f.gpu}"
        text = Text()
        text.append(f"{f.severity.upper()}  {f.rule}  ({where})\n", style="bold")
        text.append(f"{f.title}\n\n")
        text.append("Evidence\n", style="bold")
        for e in f.evidence:
            text.append(f"  · {e}\n")
        text.append("\nWhat to do\n", style="bold")
        for r in f.remedies:
            text.append(f"  → {r}\n")
        text.append(
            "\ngputui never changes GPU settings: remedies are for you to run.", style="dim"
        )
        with VerticalScroll(id="dialog"):
            yield Static(text)


class RulesScreen(_Modal):
    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__()
        self._thresholds = thresholds

    def compose(self) -> ComposeResult:
        table = Table(title="The advisor's rules", expand=True, show_lines=True)
        table.add_column("rule", style="bold", no_wrap=True)
        table.add_column("fires when")
        table.add_column("suggests")
        for rule in RULES:
            table.add_row(rule.id.value, rule.when_it_fires(self._thresholds), rule.suggests)
        with VerticalScroll(id="dialog"):
            yield Static(table)


class ClusterScreen(ModalScreen[int | None]):
    """Every node as one row, worst first; Enter opens that node's first GPU."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down,j", "move(1)", "next node"),
        Binding("up,k", "move(-1)", "previous node"),
        Binding("enter", "open", "open its GPUs"),
        Binding("escape,q,c", "close", "close"),
    ]

    def __init__(self, monitor: Monitor, colours: dict[str, str]) -> None:
        super().__init__()
        self._monitor = monitor
        self._colours = colours
        self._selected = 0
        self._rows: list[NodeRow] = []

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Static(id="cluster")

    def on_mount(self) -> None:
        self.refresh_rows()

    def refresh_rows(self) -> None:
        """Rebuild from the monitor's latest state (called on every frame while shown)."""
        monitor = self._monitor
        self._rows = node_rows(monitor.devices, monitor.latest, monitor.findings)
        self._selected = min(self._selected, max(0, len(self._rows) - 1))
        width = max(40, self.size.width - 8)
        title = Text.assemble(
            ("Cluster", "bold"),
            f"  {len(self._rows)} node(s), {len(monitor.devices)} GPU(s), worst first"
            "  (↑↓ choose, Enter its GPUs, Esc back)\n",
        )
        body = Text("\n").join(
            [title, *cluster_lines(self._rows, self._selected, width, self._colours)]
        )
        self.query_one("#cluster", Static).update(body)

    def action_move(self, step: int) -> None:
        if self._rows:
            self._selected = (self._selected + step) % len(self._rows)
            self.refresh_rows()

    def action_open(self) -> None:
        if self._rows:
            self.dismiss(self._rows[self._selected].gpus[0])

    def action_close(self) -> None:
        self.dismiss(None)
