"""The main screen's panels under the header: the host line, the GPU list, the detail, the
advisor, the processes and the overview. They take the sizes the view's layout gives them
and paint the rows it built; which rows those are is decided in ``gputui.view``."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.ui.lines import LineView
from gputui.ui.paint import Palette, border_title
from gputui.view.cells import Panel
from gputui.view.layout import Layout, places
from gputui.view.screen import Contents

_PANELS = ("gpus", "detail", "advisor", "procs", "overview")


class Panels:
    """The panels' widgets, each placed on the screen where the layout says (absolute
    positions: no containers between them and the screen). Every container is one more
    layer the compositor cuts each repainted row of, for nothing: these panels cover
    the screen edge to edge."""

    def __init__(self) -> None:
        self.laid_out: Layout | None = None  # the layout the panels have now
        self._overview = False
        self._views: dict[str, LineView] = {}

    def compose(self) -> Iterator[LineView]:
        self._views = {"host": LineView(id="host")}
        self._views.update((name, LineView(id=name, classes="panel")) for name in _PANELS)
        yield from self._views.values()

    def show(self, contents: Contents, palette: Palette, ascii: bool) -> None:
        """Lay the panels out as ``contents`` says, then paint their rows (only the rows
        that changed are painted again)."""
        self._lay_out(contents.layout, contents.overview is not None)
        if contents.host is not None:
            self._views["host"].set_rows([contents.host], contents.layout.width - 2, palette)
        for name in _PANELS:
            panel: Panel | None = getattr(contents, name)
            if panel is not None:
                view = self._views[name]
                title = border_title(panel, ascii)
                if view.border_title != title:  # each set repaints the whole panel
                    view.border_title = title
                view.set_rows(panel.rows, getattr(contents.layout, name).inner[0], palette)

    def _lay_out(self, layout: Layout, overview: bool) -> None:
        """Panel places and sizes from the layout; styles are set only when it changed."""
        if layout == self.laid_out and overview == self._overview:
            return
        self.laid_out, self._overview = layout, overview
        where = places(layout)
        for name, view in self._views.items():
            place = where.get(name)
            if name == "host":
                view.display = place is not None
            else:  # the overview, or the four panels it replaces
                view.display = (name == "overview") is overview
            if place is not None:
                styles = view.styles
                styles.offset = (place.x, place.y)
                styles.width, styles.height = place.box.width, place.box.height
