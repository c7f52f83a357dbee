"""The main screen under the panels."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.screen import Screen

from gputui.ui import compat


# The screen is covered edge to edge by the panels (placed on it, no containers between):
# it has nothing of its own to show, yet the compositor asks it for every repainted row,
# and a plain widget answers through the styles cache. compat.blank sets Textual's BLANK,
# its way of saying "only my background", answered at once (unless
# GPUTUI_TEXTUAL_PUBLIC=1).
@compat.blank
class _MainScreen(Screen[int]):
    # Nothing here takes focus: Tab and Shift+Tab move between GPUs, as ← and → do.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "app.gpu(1)", show=False),
        Binding("shift+tab", "app.gpu(-1)", show=False),
    ]
