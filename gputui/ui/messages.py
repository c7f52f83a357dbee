"""What the sampler thread tells the app: a frame, or a failed read."""

from __future__ import annotations

from textual.message import Message

from gputui.core.model import Frame


class FrameReady(Message):
    """A new frame from the sampler thread."""

    def __init__(self, frame: Frame) -> None:
        super().__init__()
        self.frame = frame


class SampleFailed(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error
