"""Terminal output gputui finished itself, as the app's own write takes it, and the move
that parks the cursor after it where the app asks for one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.control import Control
from rich.segment import ControlType, Segment
from textual.app import App

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult


class Written:
    """Finished terminal output, which the app's display writes as it is: Rich passes a control
    segment's text through untouched. Not one of the compositor's updates, after each of
    which Textual parks the cursor where the app's cursor is (6 bytes a tick at the top
    left, where nothing asked for a cursor): ``park`` is that move where something did (an
    input's cursor, which the terminal shows an IME's window at)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def render_segments(self, console: Console) -> str:
        return self.text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Segment(self.text, None, [(ControlType.BELL,)])


def park(app: App[Any]) -> str:
    """The cursor moved where the app's cursor is, as Textual moves it after its own
    updates; "" where that is the top left corner: nothing there asks for it."""
    cursor = app.cursor_position
    if (cursor.x, cursor.y) == (0, 0):
        return ""
    at = app.screen.outer_size.clamp_offset(cursor)
    return Control.move_to(at.x, at.y).segment.text
