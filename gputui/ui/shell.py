"""What the screens ask of the app that holds them: the monitor and the user's choices,
the colours, this machine's processes, and a way to carry out a key's effect. The app
(``ui.app.GpuTuiApp``) is one; the screens type against this, so none imports the app."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from textual.screen import Screen

from gputui.core.process_access import ProcessAccess
from gputui.sampling.monitor import Monitor
from gputui.ui.paint import Palette
from gputui.view.choices import Choices
from gputui.view.layout import Layout

if TYPE_CHECKING:
    from gputui.view.effects import Effect


class Shell(Protocol):
    monitor: Monitor
    palette: Palette
    #: draw with ASCII only
    ascii: bool
    #: this machine's processes, to look into and signal; None where the processes shown
    #: are not this machine's (a demo, a recording, a remote node)
    process_access: ProcessAccess | None

    @property
    def choices(self) -> Choices:
        """What the user picked with the keys."""

    @property
    def replaying(self) -> bool:
        """Whether a recording plays (its own keys are offered, the interval's are not)."""

    @property
    def laid_out(self) -> Layout | None:
        """The panels' layout now; None before they are first laid out."""

    @property
    def screen(self) -> Screen[object]:
        """The screen shown now (Textual's)."""

    def choose(self, choices: Choices) -> None:
        """Take the user's new choices and show them."""

    def apply(self, effect: Effect) -> None:
        """Carry out what a key asked for: new choices, a message, a page opened."""

    def redraw(self) -> None:
        """Show the monitor's state again."""

    def toggle_pause(self) -> None:
        """Stop reading the source, or read it again."""

    def change_interval(self, step: int) -> None:
        """Read the source less (``step`` > 0) or more often, a step of the usual scale."""

    def push_screen(
        self, screen: Screen[Any], callback: Callable[[Any], object] | None = None
    ) -> Any:
        """Open ``screen`` over the current one; ``callback`` takes what it is closed with."""


@runtime_checkable
class OnShell(Protocol):
    """A screen that holds the shell (the main screen, the every-process page)."""

    shell: Shell
