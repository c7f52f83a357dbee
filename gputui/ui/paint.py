"""The view model's rows as rich Text: roles become the theme's colours, rows are fitted to
the panel, and glyphs become ASCII where the terminal cannot draw them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import field
from typing import Final

from rich.text import Span, Text
from textual.content import Content

from gputui.core.records import frozen
from gputui.view.cells import Cell, Panel, Role, Row, fit

# One ASCII character for each glyph the panels draw, so columns stay where they were.
ASCII = str.maketrans(
    {
        **dict.fromkeys("▏▎▍", " "),
        **dict.fromkeys("▌▋▊▉█", "#"),
        **dict(zip("▁▂▃▄▅▆▇", "_.-:=+*", strict=True)),
        "✖": "X",
        "▲": "!",
        "●": "i",
        "▶": ">",
        "•": "*",
        "·": ".",
        "…": "~",
        "─": "-",
        "│": "|",
        **dict.fromkeys("╭╮╯╰", "+"),
        "→": ">",
        "▸": ">",
        "▾": "v",
        "├": "|",
        "└": "`",
        "←": "<",
        "↑": "^",
        "↓": "v",
        "✓": "v",
        "°": "o",
        "±": "+",
        "×": "x",
        "■": "#",
    }
)


def ascii_terminal(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the terminal can only be trusted with ASCII: the Linux console (no braille,
    few blocks), or a locale that says it is not UTF-8. ``GPUTUI_ASCII=1`` or ``=0``
    decides either way. No locale at all (a bare container) is taken as UTF-8: the
    terminal on the other end of the SSH session almost always is."""
    forced = environ.get("GPUTUI_ASCII")
    if forced in ("0", "1"):
        return forced == "1"
    if environ.get("TERM") == "linux":
        return True
    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        value = environ.get(name)
        if value:
            normalised = value.lower().replace("-", "")
            return "utf8" not in normalised
    return False


@frozen
class Palette:
    """Colours with meaning, from the Textual theme."""

    ok: str = "#4EBF71"
    warn: str = "#FEA62B"
    crit: str = "#B93C5B"
    accent: str = "#0178D4"
    key: str = "#FFA62B"
    bar_bg: str = "#333333"
    ascii: bool = False
    _styles: dict[tuple[Role, bool, bool, bool], str] = field(
        default_factory=dict, compare=False, repr=False
    )

    def colour(self, role: Role) -> str:
        return {
            Role.PLAIN: "",
            Role.DIM: "dim",
            Role.OK: self.ok,
            Role.WARN: self.warn,
            Role.CRIT: self.crit,
            Role.ACCENT: self.accent,
            Role.KEY: self.key,
        }[role]

    def style(self, cell: Cell, bold: bool) -> str:
        key = (cell.role, cell.bold or bold, cell.track, cell.reverse)
        style = self._styles.get(key)
        if style is None:
            parts = [self.colour(cell.role)]
            if cell.bold or bold:
                parts.insert(0, "bold")
            if cell.reverse:
                parts.insert(0, "reverse")
            if cell.track:
                parts.append(f"on {self.bar_bg}")
            style = self._styles[key] = " ".join(p for p in parts if p)
        return style


#: gputui's theme names (``config.THEMES``) as Textual names them
TEXTUAL_THEMES: Final = {"dark": "textual-dark", "light": "textual-light"}


def theme_palette(variables: Mapping[str, str], ascii: bool) -> Palette:
    """The palette from the Textual theme's CSS variables."""
    return Palette(
        ok=variables.get("success", "green"),
        warn=variables.get("warning", "yellow"),
        crit=variables.get("error", "red"),
        accent=variables.get("primary", "blue"),
        key=variables.get("footer-key-foreground", variables.get("accent", "yellow")),
        bar_bg=variables.get("panel", "#333333"),
        ascii=ascii,
    )


@frozen
class Painted:
    """A row fitted to its panel: the text, and the same text as (piece, style) runs in
    order. A panel turns the runs straight into segments: no rich Text is built for a row
    (this runs for every changed row of every tick)."""

    plain: str
    pieces: tuple[tuple[str, str], ...]

    def text(self) -> Text:
        """The row as rich Text (for callers that want one, and wide characters)."""
        spans, at = [], 0
        for piece, style in self.pieces:
            if style and piece:
                spans.append(Span(at, at + len(piece), style))
            at += len(piece)
        return Text(self.plain, spans=spans)


def to_ascii(text: str) -> str:
    """``text`` in ASCII, one character for one: the panels' glyphs as the table says,
    anything else outside ASCII (a name's letters, the sanitiser's visible escapes such as
    ␛ and <U+202E>'s kin) as '?'."""
    out = text.translate(ASCII)
    if out.isascii():
        return out
    return "".join(c if c.isascii() else "?" for c in out)


def paint(row: Row, width: int, palette: Palette) -> Painted:
    """``row`` fitted to ``width`` cells: low-priority cells dropped, cuts marked."""
    cells = row.cells
    plain = "".join([cell.text for cell in cells])
    if len(plain) > width:  # most rows fit as they are
        cells = fit(cells, width)
        plain = "".join([cell.text for cell in cells])
    style, bold = palette.style, row.bold
    if palette.ascii:
        pieces = tuple([(to_ascii(cell.text), style(cell, bold)) for cell in cells])
        return Painted(to_ascii(plain), pieces)
    return Painted(plain, tuple([(cell.text, style(cell, bold)) for cell in cells]))


def border_title(panel: Panel, ascii: bool = False) -> Content:
    """A panel's top border: its title, then its subtitle, as plain content: a GPU's name
    there is outside text and is never read as markup (an escape would show as one)."""
    text = f"{panel.title} · {panel.subtitle}" if panel.subtitle else panel.title
    return Content(to_ascii(text) if ascii else text)
