"""The scrolling panel of a page over the panels."""

from __future__ import annotations

from textual.actions import SkipAction
from textual.containers import VerticalScroll


class PageScroll(VerticalScroll):
    """A page's scrolling panel (help, rules, a finding...): every key's step taken at once.
    Textual animates a key's scroll and takes its start from where the last animation
    aims after the next repaint: keys arriving together (↓ held, or pressed fast over
    SSH) each started from the same place, and five ↓ scrolled one line."""

    def _scroll_at_once(self, y: float) -> None:
        if not self.allow_vertical_scroll:
            raise SkipAction()
        self.scroll_to(y=max(0.0, min(y, self.max_scroll_y)), animate=False, immediate=True)

    def action_scroll_down(self) -> None:
        self._scroll_at_once(self.scroll_y + 1)

    def action_scroll_up(self) -> None:
        self._scroll_at_once(self.scroll_y - 1)

    def action_page_down(self) -> None:
        self._scroll_at_once(self.scroll_y + self.scrollable_content_region.height)

    def action_page_up(self) -> None:
        self._scroll_at_once(self.scroll_y - self.scrollable_content_region.height)

    def action_scroll_home(self) -> None:
        self._scroll_at_once(0)

    def action_scroll_end(self) -> None:
        self._scroll_at_once(self.max_scroll_y)
