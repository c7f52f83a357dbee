"""A panel of text lines that repaints only the lines that changed.

Each tick the app hands every visible panel its new lines; unchanged lines cost a
comparison, changed ones one line of repaint. No widgets are created after mount.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style, StyleType
from rich.text import Text
from textual import events
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

# Characters the panels draw with, kept only where rich agrees they take one cell: a line
# made of these needs no per-character width lookup.
_NARROW = "".join(
    c for c in (*map(chr, range(32, 127)), *"▏▎▍▌▋▊▉█▁▂▃▄▅▆▇✖▲●▶·…─│╭╮╯╰→✓°±×") if cell_len(c) == 1
)
_NOT_NARROW = re.compile(f"[^{re.escape(_NARROW)}]")


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
        # (line style, span style) -> the resolved style on top of the panel's own
        self._styles: dict[tuple[StyleType, StyleType], Style] = {}

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
        # Whole rows, padding included: a region narrower than the widget makes Textual
        # crop every repainted line to it.
        left = -self.styles.gutter.left
        width = self.outer_size.width
        dirty: list[Region] = []
        start = -1
        for y, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                self._strips.pop(y, None)
                if start < 0:
                    start = y
            elif start >= 0:
                # adjacent changed lines make one region: fewer chops for the compositor
                dirty.append(Region(left, start, width, y - start))
                start = -1
        if start >= 0:
            dirty.append(Region(left, start, width, len(new) - start))
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
        self._styles.clear()
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
                segments = self._segments(self._lines[y], width, style)
                strip = Strip(segments, width)
            else:
                strip = Strip.blank(width, style)
            self._strips[y] = strip
        return strip

    def _resolve(self, base: Style, line: StyleType, span: StyleType) -> Style:
        key = (line, span)
        style = self._styles.get(key)
        if style is None:
            get = self.app.console.get_style
            style = base + get(line, default=Style.null()) + get(span, default=Style.null())
            if len(self._styles) > 1024:  # styles come from a palette; this is a backstop
                self._styles.clear()
            self._styles[key] = style
        return style

    def _segments(self, text: Text, width: int, base: Style) -> list[Segment]:
        """The line fitted to ``width`` as segments on the panel's style.

        Lines are built from appended pieces: spans that follow one another. For those,
        slicing the plain text beats rich's general renderer several times over, and this
        runs for every changed line of every tick. Anything else takes rich's way.
        """
        plain = text.plain
        spans = text.spans
        narrow = _NOT_NARROW.search(plain) is None or len(plain) == cell_len(plain)
        simple = narrow and all(a.end <= b.start for a, b in pairwise(spans))
        if not simple:
            fitted = text.copy()
            fitted.end = ""
            fitted.truncate(width, overflow="crop", pad=True)
            # rich drops the line's own style when a line has no spans: put it back.
            under = self._resolve(base, text.style, "")
            return list(Segment.apply_style(fitted.render(self.app.console), under))
        line_style = text.style
        resolve = self._resolve
        segments: list[Segment] = []
        add = segments.append
        at = 0
        for span in spans:
            start = min(span.start, width)
            end = min(span.end, width)
            if start > at:
                add(Segment(plain[at:start], resolve(base, line_style, "")))
            if end > start:
                add(Segment(plain[start:end], resolve(base, line_style, span.style)))
            at = max(at, end)
        tail = min(len(plain), width)
        if tail > at:
            add(Segment(plain[at:tail], resolve(base, line_style, "")))
            at = tail
        if at < width:
            add(Segment(" " * (width - at), resolve(base, line_style, "")))
        return segments
