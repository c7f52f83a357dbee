"""A panel of text lines that repaints only the lines that changed.

Each tick the app hands every visible panel its new lines; unchanged lines cost a
comparison, changed ones one line of repaint. No widgets are created after mount.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget


class LineView(Widget):
    class Resized(Message):
        """The panel's size changed: its lines must be laid out again."""

    class Clicked(Message):
        """A line was clicked: the app decides what that line stands for."""

        def __init__(self, view: LineView, line: Text) -> None:
            super().__init__()
            self.view = view
            self.line = line

    DEFAULT_CSS = """
    LineView {
        height: auto;
        width: 1fr;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: list[Text] = []
        self._strips: dict[int, Strip] = {}
        self._strip_width = -1
        self._style: Style | None = None

    @property
    def lines(self) -> list[Text]:
        return self._lines

    @property
    def plain(self) -> str:
        return "\n".join(line.plain for line in self._lines)

    def set_lines(self, lines: Sequence[Text]) -> None:
        new = list(lines)
        old = self._lines
        self._lines = new
        if len(new) != len(old):
            self._strips.clear()
            self.refresh(layout=True)
            return
        width = self.size.width
        dirty: list[Region] = []
        start = -1
        for y, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                self._strips.pop(y, None)
                if start < 0:
                    start = y
            elif start >= 0:
                # adjacent changed lines make one region: fewer chops for the compositor
                dirty.append(Region(0, start, width, y - start))
                start = -1
        if start >= 0:
            dirty.append(Region(0, start, width, len(new) - start))
        if dirty:
            self.refresh(*dirty)

    def on_resize(self) -> None:
        self.post_message(self.Resized())

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None and 0 <= offset.y < len(self._lines):
            self.post_message(self.Clicked(self, self._lines[offset.y]))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style = None
        self._strips.clear()

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if width != self._strip_width:
            self._strips.clear()
            self._strip_width = width
        strip = self._strips.get(y)
        if strip is None:
            style = self._style
            if style is None:  # resolving the CSS style is costly: once per style change
                style = self._style = self.rich_style
            if y < len(self._lines):
                text = self._lines[y].copy()
                text.end = ""
                # Fitted to the width first, so the strip's length is known, not measured.
                text.truncate(width, overflow="crop", pad=True)
                segments = Segment.apply_style(text.render(self.app.console), style)
                strip = Strip(segments, width)
            else:
                strip = Strip.blank(width, style)
            self._strips[y] = strip
        return strip
