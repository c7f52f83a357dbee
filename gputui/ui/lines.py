"""A panel of text lines that repaints only the lines that changed.

Each tick the app hands every visible panel its new lines; unchanged lines cost a
comparison, changed ones one line of repaint. No widgets are created after mount.

Two overrides of Textual's undocumented widget contract (``render_lines``,
``notify_style_update``) make repaints cheaper still; ``compat.FAST_LINES`` turns them off
(``GPUTUI_TEXTUAL_PUBLIC=1``), and the panel then draws through the public Line API alone.
In an app with a ``compat.FastPaint`` (gputui's), changed rows go to the screen through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from rich.segment import Segment
from rich.style import Style, StyleType
from rich.text import Text
from textual import events
from textual.color import Color
from textual.filter import LineFilter
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from gputui.core.records import frozen
from gputui.ui import compat
from gputui.ui.paint import Painted, Palette, paint
from gputui.ui.terminal_cells import one_cell_each
from gputui.view.cells import Row, RowKey

if TYPE_CHECKING:
    from typing_extensions import Self


@frozen
class _Box:
    """What surrounds a panel's content rows, resolved once per style change."""

    plain: bool  # only padding and top/bottom rows: content rows can skip Textual's cache
    top: int  # rows above the content (border, padding), drawn by Textual
    bottom: int
    left: tuple[Segment, ...]  # the left and right padding, none when there is none
    right: tuple[Segment, ...]
    sides: int  # cells of padding and border beside the content
    background: Color


class LineView(Widget):
    class Resized(Message):
        """The panel's size changed: its lines must be laid out again."""

    class Clicked(Message):
        """A row was clicked: its key (a GPU, a finding, a process) says what it stands for."""

        def __init__(self, view: LineView, key: RowKey, x: int) -> None:
            super().__init__()
            self.view = view
            self.key = key
            self.x = x

    DEFAULT_CSS = """
    LineView {
        height: auto;
        width: 1fr;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: list[Text | Painted] = []
        self._model: list[Row] = []  # the rows the lines were painted from
        self._painted_for: tuple[int, Palette] | None = None
        self._rows_size = Size(0, 0)
        self._style: Style | None = None
        self._box: _Box | None = None
        # finished rows (padding, filters) by widget row, as segments: a Strip carries seven
        # caches, and the compositor asks for every row of a repainted area, most unchanged
        self._rows: dict[int, list[Segment]] = {}
        # (line style, span style, filtered) -> the resolved style on the panel's own
        self._styles: dict[tuple[StyleType, StyleType, bool], Style] = {}
        # each style as the line filters leave it, for the filters and background named
        self._filter_key: tuple[tuple[LineFilter, ...], Color] | None = None
        self._filter_styles: dict[Style | None, Style | None] = {}
        #: the app's fast paint, where it has one (set at mount)
        self._fast: compat.FastPaint | None = None

    @property
    def lines(self) -> list[Text]:
        return [line.text() if isinstance(line, Painted) else line for line in self._lines]

    @property
    def plain(self) -> str:
        return "\n".join(line.plain for line in self._lines)

    @property
    def rows(self) -> list[Row]:
        return self._model

    def set_rows(self, rows: Sequence[Row], width: int, palette: Palette) -> None:
        """Show view-model rows fitted to ``width``: only rows unlike the last ones shown
        are painted again, and only their lines repainted."""
        old_rows, old_lines = self._model, self._lines
        same = self._painted_for == (width, palette)
        lines = [
            old_lines[i]
            if same and i < len(old_rows) and old_rows[i] == r
            else paint(r, width, palette)
            for i, r in enumerate(rows)
        ]
        self._model = list(rows)
        self._painted_for = (width, palette)
        self._show(lines)

    def set_lines(self, lines: Sequence[Text]) -> None:
        """Show lines that no view model stands behind (a click on them means nothing)."""
        self._model = []
        self._painted_for = None
        self._show(lines)

    def _show(self, lines: Sequence[Text | Painted]) -> None:
        new = list(lines)
        old = self._lines
        self._lines = new
        if len(new) != len(old):
            self._rows.clear()
            self.refresh(layout=True)
            return
        # Whole rows, padding included: a region narrower than the widget makes Textual
        # crop every repainted line to it.
        left = -self.styles.gutter.left
        width = self.outer_size.width
        dirty: list[Region] = []
        start = -1
        top = self.styles.gutter.top
        for y, (a, b) in enumerate(zip(old, new, strict=True)):
            if a is not b and a != b:
                self._rows.pop(y + top, None)
                if start < 0:
                    start = y
            elif start >= 0:
                # adjacent changed lines make one region: fewer chops for the compositor
                dirty.append(Region(left, start, width, y - start))
                start = -1
        if start >= 0:
            dirty.append(Region(left, start, width, len(new) - start))
        fast = self._fast
        if dirty and (fast is None or not fast.mark(self, dirty)):
            self.refresh(*dirty)

    def on_mount(self) -> None:
        app = self.app
        self._fast = app.fast_paint if isinstance(app, compat.PaintsFast) else None

    def on_resize(self) -> None:
        self.post_message(self.Resized())

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None and 0 <= offset.y < len(self._model):
            self.post_message(self.Clicked(self, self._model[offset.y].key, offset.x))

    def refresh(
        self,
        *regions: Region,
        repaint: bool = True,
        layout: bool = False,
        recompose: bool = False,
    ) -> Self:
        if repaint and not regions:
            self._rows.clear()
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    # Textual's undocumented widget contract (see compat.py). Without these two overrides
    # every row goes through Textual's styles cache and render_line below (the Line API).
    if compat.FAST_LINES:

        def notify_style_update(self) -> None:
            super().notify_style_update()
            self._style = None
            self._box = None
            self._styles.clear()
            self._rows.clear()

        def render_lines(self, crop: Region) -> list[Strip]:
            """Textual's styles cache, minus its work per row: for a panel that is only
            padding and a top border (ours), content rows are assembled and cached here, and
            every other row (the border with its title) is still drawn by Textual."""
            box = self._measured_box()
            size = self.outer_size
            if not box.plain or size != self._rows_size:
                self._rows.clear()
                self._rows_size = size
                if not box.plain:
                    return super().render_lines(crop)
            width = size.width
            top, bottom = box.top, size.height - box.bottom
            left, right = self._use_filters(tuple(self.get_line_filters()), box)
            rows: list[Strip] = []
            for y in crop.line_range:
                row = self._rows.get(y)
                if row is None:
                    if y < top or y >= bottom:  # border and title: Textual's, until a refresh
                        row = list(super().render_lines(Region(0, y, width, 1))[0])
                    else:  # the row's segments, already padded and filtered
                        content = self._content(y - top, width - box.sides, filtered=True)
                        row = [*left, *content, *right]
                    self._rows[y] = row
                rows.append(compat.BareRow(row, width))
            if crop.column_span != (0, width):
                rows = [row.crop(crop.x, crop.right) for row in rows]
            return rows

        def rows_now(self, regions: Sequence[Region]) -> list[tuple[int, Strip]] | None:
            """Content rows under ``regions`` (as ``_show`` marks them) as whole rows, for
            ``FastPaint.write_rows``; None for a panel dressed beyond padding and a top
            border, whose rows Textual's own cache draws."""
            box = self._measured_box()
            if not box.plain:
                return None
            width = self.outer_size.width
            rows: list[tuple[int, Strip]] = []
            for region in regions:
                start = region.y + box.top
                drawn = self.render_lines(Region(0, start, width, region.height))
                rows.extend(zip(range(start, start + region.height), drawn, strict=True))
            return rows

    def _use_filters(
        self, filters: tuple[LineFilter, ...], box: _Box
    ) -> tuple[list[Segment], list[Segment]]:
        """Start filtering for these line filters and background (their caches emptied
        when either changed); the panel's padding through them."""
        key = (filters, box.background)
        if key != self._filter_key:
            self._filter_key = key
            self._filter_styles.clear()
            self._styles.clear()
            self._rows.clear()
        return self._filtered(list(box.left)), self._filtered(list(box.right))

    def _filter(self, style: Style | None) -> Style | None:
        """A style as the app's line filters leave it (true colour for ANSI colours, dim as
        a blend, NO_COLOR's monochrome). Textual's filters map each segment's style on its
        own, and a panel draws with a few dozen styles: each is filtered once, not every
        segment of every changed row."""
        styles = self._filter_styles
        if style in styles:
            return styles[style]
        mapped = style
        if self._filter_key is not None:
            filters, background = self._filter_key
            probe = [Segment(" ", style)]
            for line_filter in filters:
                probe = line_filter.apply(probe, background)
            mapped = probe[0].style
        if len(styles) > 1024:  # styles come from a palette; this is a backstop
            styles.clear()
        styles[style] = mapped
        return mapped

    def _filtered(self, segments: list[Segment]) -> list[Segment]:
        return [Segment(text, self._filter(style)) for text, style, _control in segments]

    def _measured_box(self) -> _Box:
        """The panel's surroundings, measured again only after a style change."""
        box = self._box
        if box is None:
            box = self._box = self._measure_box()
        return box

    def _measure_box(self) -> _Box:
        styles = self.styles
        gutter = styles.gutter
        base_background, background = self.background_colors
        plain = (
            not any(edge for edge, _colour in (styles.border_left, styles.border_right))
            and not any(edge for edge, _colour in styles.outline)
            and styles.tint.a == 0
            and self.opacity == 1.0
            and styles.text_opacity == 1.0
            and (not styles.has_rule("hatch") or styles.hatch == "none")
        )
        inner = Style(bgcolor=(base_background + background).rich_color)
        return _Box(
            plain=plain,
            top=gutter.top,
            bottom=gutter.bottom,
            left=(Segment(" " * gutter.left, inner),) if gutter.left else (),
            right=(Segment(" " * gutter.right, inner),) if gutter.right else (),
            sides=gutter.width,
            background=background,
        )

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines)

    def render_line(self, y: int) -> Strip:
        """Textual's way in, for a panel dressed beyond what render_lines handles itself
        (its styles cache keeps what this returns until the line is refreshed)."""
        width = self.outer_size.width - self.styles.gutter.width  # what size.width says, faster
        return Strip(self._content(y, width), width)

    def _content(self, y: int, width: int, filtered: bool = False) -> list[Segment]:
        """Content line ``y`` as segments exactly ``width`` cells wide; ``filtered``: with
        the app's line filters applied (render_lines), else Textual applies them."""
        style = self._style
        if style is None or not compat.FAST_LINES:
            # Resolving the CSS style is costly: once per style change, which
            # notify_style_update reports. Without that hook, once per line.
            fresh = self.rich_style
            if fresh != style:
                self._styles.clear()
            style = self._style = fresh
        if y < len(self._lines):
            return self._line_segments(self._lines[y], width, style, filtered)
        if width <= 0:
            return []
        return [Segment(" " * width, self._filter(style) if filtered else style)]

    def _resolve(self, base: Style, line: StyleType, span: StyleType, filtered: bool) -> Style:
        key = (line, span, filtered)
        style = self._styles.get(key)
        if style is None:
            get = self.app.console.get_style
            style = base + get(line, default=Style.null()) + get(span, default=Style.null())
            if filtered:
                style = self._filter(style) or Style.null()
            if len(self._styles) > 1024:  # styles come from a palette; this is a backstop
                self._styles.clear()
            self._styles[key] = style
        return style

    def _line_segments(
        self, line: Text | Painted, width: int, base: Style, filtered: bool
    ) -> list[Segment]:
        """The line fitted to ``width`` as segments on the panel's style.

        Lines are built from appended pieces: spans that follow one another. For those,
        slicing the plain text beats rich's general renderer several times over, and this
        runs for every changed line of every tick. Anything else takes rich's way.
        """
        plain = line.plain
        narrow = one_cell_each(plain)
        if narrow and isinstance(line, Painted):
            return self._runs(line, width, base, filtered)
        text = line.text() if isinstance(line, Painted) else line
        spans = text.spans
        if not (narrow and all(a.end <= b.start for a, b in pairwise(spans))):
            fitted = text.copy()
            fitted.end = ""
            fitted.truncate(width, overflow="crop", pad=True)
            # rich drops the line's own style when a line has no spans: put it back.
            under = self._resolve(base, text.style, "", False)
            rendered = list(Segment.apply_style(fitted.render(self.app.console), under))
            return self._filtered(rendered) if filtered else rendered
        line_style = text.style
        resolve = self._resolve
        plain_style = resolve(base, line_style, "", filtered)
        segments: list[Segment] = []
        add = segments.append
        at = 0
        for span in spans:
            start = min(span.start, width)
            end = min(span.end, width)
            if start > at:
                add(Segment(plain[at:start], plain_style))
            if end > start:
                add(Segment(plain[start:end], resolve(base, line_style, span.style, filtered)))
            at = max(at, end)
        tail = min(len(plain), width)
        if tail > at:
            add(Segment(plain[at:tail], plain_style))
            at = tail
        if at < width:
            add(Segment(" " * (width - at), plain_style))
        return segments

    def _runs(self, line: Painted, width: int, base: Style, filtered: bool) -> list[Segment]:
        """A painted row of one-cell characters as segments: cut at ``width``, padded with
        the panel's style, and runs of one style joined (fewer segments to cut and write)."""
        segments: list[Segment] = []
        text, style = "", ""
        pieces: Sequence[tuple[str, str]] = line.pieces
        pad = width - len(line.plain)  # mostly the row fits: padded with the panel's style
        pieces = (*pieces, (" " * pad, "")) if pad >= 0 else _cut(pieces, width)
        for piece, next_style in pieces:
            if not piece:
                continue
            if next_style != style and text:
                segments.append(Segment(text, self._resolve(base, "", style, filtered)))
                text = ""
            text += piece
            style = next_style
        if text:
            segments.append(Segment(text, self._resolve(base, "", style, filtered)))
        return segments


def _cut(pieces: Sequence[tuple[str, str]], width: int) -> list[tuple[str, str]]:
    """The pieces that show in ``width`` cells, the last one cut."""
    out: list[tuple[str, str]] = []
    left = width
    for piece, style in pieces:
        if left <= 0:
            break
        out.append((piece[:left], style))
        left -= len(piece)
    return out
