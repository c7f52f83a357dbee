"""What the app's parts share: the monitor, what the user chose, the palette, and the two
things every key ends in (choosing, redrawing). The app and its key groups (modals,
snapshot, replay) build on it."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.notifications import SeverityLevel

from gputui.sampling.monitor import Monitor
from gputui.sampling.replay import ReplayController
from gputui.sampling.sampler import Sampler
from gputui.ui.paint import Palette, ascii_terminal
from gputui.view.choices import Choices


class Shell(App[int]):
    def __init__(self, monitor: Monitor, snapshot_dir: Path, ascii: bool | None) -> None:
        super().__init__()
        self.monitor = monitor
        self.sampler: Sampler | None = None
        self.replay: ReplayController | None = None
        self.start_at: float | None = None  # a replay's first moment to show
        self.pending_notices: list[str] = []
        self.snapshot_dir = snapshot_dir
        #: snapshots keep credentials in command lines (--keep-secrets); masked by default
        self.keep_secrets = False
        self.ascii = ascii_terminal() if ascii is None else ascii
        self.choices = Choices(selected=monitor.devices[0].index if monitor.devices else 0)
        self.paused = False
        self.palette = Palette(ascii=self.ascii)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Toasts carry file names, paths and error text: never parsed as markup here."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def redraw(self) -> None:
        """Draw the visible panels from the monitor's current state."""
        raise NotImplementedError

    def _choose(self, choices: Choices) -> None:
        """Take the user's new choices and show them."""
        raise NotImplementedError

    def action_pause(self) -> None:
        """Stop or resume sampling (a replay: stop or resume playing)."""
        raise NotImplementedError

    def _after_modal(self, _result: object) -> None:
        self.redraw()
