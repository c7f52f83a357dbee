"""Screens over the panels: help, a finding in full, the advisor's rules, the cluster, the
topology. Each shows a page the view builds (``gputui.view``: pages, cluster, topology) in a
scrolling panel; here are only its keys and when it is built anew."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, TypeVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen

from gputui.advisor import RULES
from gputui.advisor.nodes import NodeRow, node_rows
from gputui.core.config import Thresholds
from gputui.core.model import Finding
from gputui.core.sanitize import clean
from gputui.sampling.monitor import Monitor
from gputui.ui.containers import PageScroll
from gputui.ui.keys import LEGEND, key_rows
from gputui.ui.lines import LineView
from gputui.ui.paint import Palette, border_title
from gputui.view.cells import Panel
from gputui.view.cluster import cluster_page

T = TypeVar("T")


class PageScreen(ModalScreen[T]):
    """A page of rows in a scrolling panel, built for the width it has."""

    def __init__(self, palette: Palette) -> None:
        super().__init__()
        self._palette = palette

    def compose(self) -> ComposeResult:
        with PageScroll(id="dialog"):
            yield LineView(id="page")

    def build(self, width: int) -> Panel:
        raise NotImplementedError

    def say(self, message: str, seconds: float) -> None:
        """A line on the dialog's lower border, for ``seconds``: the app's messages while
        the dialog is open (a toast would cover it)."""
        dialog = self.query_one("#dialog", VerticalScroll)
        dialog.border_subtitle = Content(message)  # file names and errors: never markup
        self.set_timer(seconds, lambda: setattr(dialog, "border_subtitle", ""))

    def on_mount(self) -> None:
        self.refresh_rows()
        self.call_after_refresh(self.refresh_rows)  # once laid out: its real width

    def on_resize(self) -> None:
        self.refresh_rows()

    def refresh_rows(self) -> None:
        view = self.query_one("#page", LineView)
        dialog = self.query_one("#dialog", VerticalScroll)
        # the dialog's room, less its scroll bar; before layout, what the CSS will give it
        room = dialog.content_size.width or min(120, self.size.width * 9 // 10) - 6
        width = max(20, room - 2)
        panel = self.build(width)
        # the page's title on the dialog's border, as the panels draw theirs; a process
        # page's names a command: outside text, cleaned here whatever built it
        title = border_title(
            Panel(clean(panel.title), panel.rows, clean(panel.subtitle)), self._palette.ascii
        )
        if dialog.border_title != title:
            dialog.border_title = title
        view.set_rows(panel.rows, width, self._palette)

    @property
    def plain(self) -> str:
        """The page as drawn, in plain text (tests)."""
        return self.query_one("#page", LineView).plain


class _Page(PageScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,enter", "close", "close"),
    ]

    def action_close(self) -> None:
        self.dismiss(None)


class HelpScreen(_Page):
    """Every key that works now (live, or a recording playing), then what the screen's
    symbols and columns mean; both come from gputui/ui/keys.py."""

    def __init__(
        self, bindings: Sequence[BindingType], palette: Palette, replay: bool = False
    ) -> None:
        super().__init__(palette)
        self.replay = replay
        #: (keys, description), as shown
        self.rows = key_rows(bindings, replay)

    def build(self, width: int) -> Panel:
        from gputui.view.pages import help_page  # the pages load when first opened

        return help_page(self.rows, LEGEND, self.replay, width)


class FindingScreen(_Page):
    def __init__(self, finding: Finding, palette: Palette) -> None:
        super().__init__(palette)
        self._finding = finding

    def build(self, width: int) -> Panel:
        from gputui.view.pages import finding_page

        return finding_page(self._finding, width)


class RulesScreen(_Page):
    def __init__(self, thresholds: Thresholds, palette: Palette) -> None:
        super().__init__(palette)
        self._thresholds = thresholds

    def build(self, width: int) -> Panel:
        from gputui.view.pages import rules_page

        return rules_page(RULES, self._thresholds, width)


class TopologyScreen(PageScreen[None]):
    """The topology matrix, NVLinks and NUMA placement; built anew every 2 s while shown."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,y,enter", "close", "close"),
    ]

    def __init__(self, monitor: Monitor, palette: Palette) -> None:
        super().__init__(palette)
        self._monitor = monitor

    def on_mount(self) -> None:
        super().on_mount()
        self.set_interval(2.0, self.refresh_rows)

    def build(self, width: int) -> Panel:
        from gputui.view.topology import topology_page

        return topology_page(self._monitor.devices, self._monitor.latest)

    def action_close(self) -> None:
        self.dismiss(None)


class ClusterScreen(PageScreen[int | None]):
    """Every node as one row, worst first; Enter opens that node's first GPU."""

    # priority: the scrolling panel would take the arrows for itself
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down,j", "move(1)", "next node", priority=True),
        Binding("up,k", "move(-1)", "previous node", priority=True),
        Binding("pagedown", "move(10)", "10 nodes down", show=False, priority=True),
        Binding("pageup", "move(-10)", "10 nodes up", show=False, priority=True),
        Binding("enter", "open", "open its GPUs"),
        Binding("escape,q,c", "close", "close"),
    ]

    def __init__(self, monitor: Monitor, palette: Palette) -> None:
        super().__init__(palette)
        self._monitor = monitor
        self._selected = 0
        self._node: str | None = None  # the selected node: it stays selected as ranks move
        self._rows: list[NodeRow] = []

    def build(self, width: int) -> Panel:
        """Ranked anew from the monitor's latest state (on every frame while shown); as
        many nodes as the dialog holds, the selected one among them."""
        monitor = self._monitor
        self._rows = node_rows(monitor.devices, monitor.latest, monitor.findings)
        names = [r.node for r in self._rows]
        if self._node in names:
            self._selected = names.index(self._node)
        self._selected = min(self._selected, max(0, len(self._rows) - 1))
        self._node = names[self._selected] if names else None
        # the dialog is at most 90 % of the screen, less its border and padding
        height = self.size.height * 9 // 10 - 4 if self.size.height else None
        return cluster_page(self._rows, len(monitor.devices), self._selected, width, height)

    def action_move(self, step: int) -> None:
        if self._rows:
            if abs(step) == 1:
                self._selected = (self._selected + step) % len(self._rows)
            else:
                self._selected = max(0, min(len(self._rows) - 1, self._selected + step))
            self._node = self._rows[self._selected].node
            self.refresh_rows()

    def action_open(self) -> None:
        if self._rows:
            self.dismiss(self._rows[self._selected].gpus[0])

    def action_close(self) -> None:
        self.dismiss(None)
