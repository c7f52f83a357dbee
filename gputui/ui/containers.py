"""The main screen and the containers that hold the panels."""

from __future__ import annotations

from textual.containers import Container, Horizontal
from textual.screen import Screen

from gputui.ui import compat


# The screen and the containers are covered edge to edge by the panels: they have nothing
# of their own to show, yet the compositor asks each for every repainted row, and a plain
# widget answers through the styles cache. compat.blank sets Textual's BLANK, its way of
# saying "only my background", answered at once (unless GPUTUI_TEXTUAL_PUBLIC=1).
@compat.blank
class _MainScreen(Screen[int]):
    pass


@compat.blank
class _Column(Container):
    pass


@compat.blank
class _Row(Horizontal):
    pass
