"""The all-processes screen: every GPU process on the machine (``a``), following the
frames while it is open."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen

from gputui.sampling.monitor import Monitor
from gputui.ui.lines import LineView
from gputui.ui.paint import Palette, border_title
from gputui.view.all_processes import SORTS, all_processes, users


class AllProcessesScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "sort", "sort"),
        Binding("u", "user", "user filter"),
        Binding("down,j", "scroll(1)", "down", show=False),
        Binding("up,k", "scroll(-1)", "up", show=False),
        Binding("pagedown", "scroll(10)", "page down", show=False),
        Binding("pageup", "scroll(-10)", "page up", show=False),
        Binding("escape,a,q", "close", "back"),
    ]

    DEFAULT_CSS = """
    AllProcessesScreen #all {
        height: 1fr;
        width: 1fr;
    }
    """

    def __init__(self, monitor: Monitor, palette: Palette, mask: bool = False) -> None:
        super().__init__()
        self._monitor = monitor
        self._palette = palette
        self._mask = mask
        self.sort_index = 0
        self.user: str | None = None
        self.first = 0

    def compose(self) -> ComposeResult:
        yield LineView(id="all", classes="panel")

    def on_mount(self) -> None:
        self.refresh_rows()

    def on_resize(self) -> None:
        self.refresh_rows()

    def refresh_rows(self) -> None:
        """Rebuild from the monitor's latest frame (called on every frame while shown)."""
        view = self.query_one("#all", LineView)
        frame = self._monitor.latest
        width, height = self.size.width - 2, self.size.height - 1
        panel = all_processes(
            frame.processes if frame else (),
            SORTS[self.sort_index],
            self.user,
            frame.time if frame else None,
            width,
            height,
            self._monitor.thresholds,
            first=self.first,
            mask=self._mask,
        )
        view.border_title = border_title(panel, self._palette.ascii)
        view.set_rows(panel.rows, width, self._palette)

    def action_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(SORTS)
        self.refresh_rows()

    def action_user(self) -> None:
        """All users, then each user owning a GPU process in turn."""
        frame = self._monitor.latest
        names: list[str | None] = [None, *users(frame.processes if frame else ())]
        at = names.index(self.user) if self.user in names else 0
        self.user = names[(at + 1) % len(names)]
        self.first = 0
        self.refresh_rows()

    def action_scroll(self, step: int) -> None:
        self.first = max(0, self.first + step)
        self.refresh_rows()

    def action_close(self) -> None:
        self.dismiss(None)
