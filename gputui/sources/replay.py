"""A recording played back as a source: the app and the advisor see it as they saw it live."""

from __future__ import annotations

import bisect
import threading

from gputui.exporters.record import Recording
from gputui.model import DeviceInfo, Frame
from gputui.sources.base import SourceKind


class ReplayEnded(Exception):
    """The last frame of the recording has been read."""


class ReplaySource:
    label = "REPLAY"
    kind: SourceKind = "replay"

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self._frames = [tick.frame for tick in recording.ticks]
        self._times = [frame.time for frame in self._frames]
        self._position = 0
        self._lock = threading.Lock()

    @property
    def interval_s(self) -> float:
        return self.recording.header.interval_s

    @property
    def position(self) -> int:
        return self._position

    @property
    def at_end(self) -> bool:
        return self._position >= len(self._frames)

    @property
    def start_time(self) -> float | None:
        return self._times[0] if self._times else None

    @property
    def end_time(self) -> float | None:
        return self._times[-1] if self._times else None

    def open(self) -> tuple[DeviceInfo, ...]:
        return self.recording.header.devices

    def read(self) -> Frame:
        with self._lock:
            if self._position >= len(self._frames):
                raise ReplayEnded("end of the recording")
            frame = self._frames[self._position]
            self._position += 1
            return frame

    def close(self) -> None:
        pass

    def seek(self, time: float) -> list[Frame]:
        """Move to the first frame at or after ``time``; return the frames before it."""
        with self._lock:
            self._position = bisect.bisect_left(self._times, time)
            return self._frames[: self._position]
