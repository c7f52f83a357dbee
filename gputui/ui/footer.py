"""The footer as one line: the keys the main screen offers now (gputui/view/footer.py)."""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.binding import Binding
from textual.screen import Screen

from gputui.ui.keys import FOOTER_KEEPS
from gputui.ui.lines import LineView
from gputui.ui.shell import Shell
from gputui.view.footer import KeyHint, footer_row


class KeysLine(LineView):
    """Redrawn when the screen's bindings change (a key enabled or hidden) and on resize;
    a click on a key presses it, as on Textual's footer."""

    DEFAULT_CSS = """
    KeysLine {
        dock: bottom;
        height: 1;
        background: $footer-background;
    }
    """

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self.call_after_refresh(self.draw)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, _screen: Screen[object]) -> None:
        self.call_after_refresh(self.draw)

    def on_resize(self) -> None:
        super().on_resize()
        self.draw()

    def __init__(self, shell: Shell, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.shell = shell  # its palette: the theme's colours, ASCII where needed

    def draw(self) -> None:
        if not self.is_attached:
            return
        app = self.app
        active = self.screen.active_bindings
        hints: list[KeyHint] = []
        seen: set[str] = set()
        for _node, binding, enabled, _tooltip in active.values():
            if binding.show and binding.action not in seen:  # one entry an action
                seen.add(binding.action)
                hints.append(_hint(app, binding, enabled))
        opener = active.get(app.COMMAND_PALETTE_BINDING)
        last = _hint(app, opener.binding, opener.enabled) if opener is not None else None
        if not app.ENABLE_COMMAND_PALETTE:
            last = None
        width = self.size.width
        palette = self.shell.palette
        self.set_rows([footer_row(hints, last, width, palette.ascii)], width, palette)


def _hint(app: App[Any], binding: Binding, enabled: bool) -> KeyHint:
    key = binding.key.split(",")[0].strip()
    kept = binding.action in FOOTER_KEEPS
    return KeyHint(key, app.get_key_display(binding), binding.description, enabled, kept)
