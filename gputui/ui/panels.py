"""The main screen's panels under the header: the host line, the GPU list, the detail, the
advisor, the processes and the overview. They take the sizes the view's layout gives them
and paint the rows it built; which rows those are is decided in ``gputui.view``."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical

from gputui.ui import compat
from gputui.ui.containers import _Column, _Row
from gputui.ui.lines import LineView
from gputui.ui.paint import Palette, border_title
from gputui.view.cells import Panel
from gputui.view.layout import Layout
from gputui.view.screen import Contents

_PANELS = ("gpus", "detail", "advisor", "procs", "overview")


@compat.blank
class Panels(Vertical):
    DEFAULT_CSS = """
    Panels {
        height: 1fr;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="panels")
        self.laid_out: Layout | None = None  # the layout the panels have now
        self._overview = False

    def compose(self) -> ComposeResult:
        yield LineView(id="host")
        with _Column(id="body"):
            with _Row(id="top"):
                yield LineView(id="gpus", classes="panel")
                yield LineView(id="detail", classes="panel")
            with _Row(id="bottom"):
                yield LineView(id="advisor", classes="panel")
                yield LineView(id="procs", classes="panel")
        yield LineView(id="overview", classes="panel")

    def show(self, contents: Contents, palette: Palette, ascii: bool) -> None:
        """Lay the panels out as ``contents`` says, then paint their rows (only the rows
        that changed are painted again)."""
        self._lay_out(contents.layout, contents.overview is not None)
        if contents.host is not None:
            host = self.query_one("#host", LineView)
            host.set_rows([contents.host], contents.layout.width - 2, palette)
        for name in _PANELS:
            panel: Panel | None = getattr(contents, name)
            if panel is not None:
                view = self.query_one(f"#{name}", LineView)
                title = border_title(panel, ascii)
                if view.border_title != title:  # each set repaints the whole panel
                    view.border_title = title
                view.set_rows(panel.rows, getattr(contents.layout, name).inner[0], palette)

    def _lay_out(self, layout: Layout, overview: bool) -> None:
        """Panel sizes from the layout; styles are set only when the layout changed."""
        if layout == self.laid_out and overview == self._overview:
            return
        self.laid_out, self._overview = layout, overview
        screen = self.screen
        screen.set_class(overview, "-overview")
        screen.set_class(layout.stacked, "-stacked")
        screen.set_class(layout.bottom_stacked, "-bottom-stacked")
        self.query_one("#host").display = layout.host
        for name in ("gpus", "detail", "advisor", "procs"):
            box = getattr(layout, name)
            styles = self.query_one(f"#{name}").styles
            styles.width, styles.height = box.width, box.height
        top, bottom = layout.gpus.height, layout.advisor.height
        self.query_one("#top").styles.height = top + layout.detail.height * layout.stacked
        self.query_one("#bottom").styles.height = (
            bottom + layout.procs.height * layout.bottom_stacked
        )
