"""The replay keys: step, seek and speed through a recording, with what they say to the
user. The main screen holds one, built from the recording's controller and the app's own
small powers (pause, redraw, say)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gputui.core.records import record
from gputui.view.effects import Notify
from gputui.view.header import moment

if TYPE_CHECKING:
    from gputui.sampling.replay_control import ReplayController


def _said(text: str) -> Notify:
    return Notify(text, title="Replay", timeout=3)


@record
class ReplayKeys:
    replay: ReplayController
    notify: Callable[[Notify], None]
    redraw: Callable[[], None]
    pause: Callable[[], None]  # pauses (the app's pause toggles; this is called when running)
    paused: Callable[[], bool]

    def step(self) -> None:
        """One frame forward, paused."""
        if not self.paused():
            self.pause()
        if not self.replay.step():
            self.notify(_said("End of the recording"))
            return
        self.redraw()

    def seek_by(self, seconds: float) -> None:
        self._after_seek(self.replay.seek_by(seconds))

    def seek_to(self, target: float) -> None:
        """Jump in the recording; the history and the advisor are rebuilt as they were then."""
        self._after_seek(self.replay.seek_to(target))

    def _after_seek(self, shown: float | None) -> None:
        if shown is not None:
            self.notify(_said(f"at {moment(shown)}"))
            self.redraw()

    def speed(self, factor: float) -> None:
        self.notify(_said(f"Replay at {self.replay.change_speed(factor):g}x"))
        self.redraw()

    def ended(self) -> None:
        """The sampler ran out of frames: pause there and say how to go back."""
        if not self.paused():
            self.pause()
            self.notify(
                _said("End of the recording: [ goes back 1 min, { 10 min; p plays on from there")
            )
