"""A recording played back as a source: the app and the advisor see it as they saw it live.

The frames come decoded (the command line reads the file); this module knows nothing of
the file format.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence

from gputui.core.model import DeviceInfo, Frame
from gputui.core.names import SourceKind


class ReplayEnded(Exception):
    """The last frame of the recording has been read."""


class ReplaySource:
    label = "REPLAY"
    kind = SourceKind.REPLAY

    def __init__(
        self, frames: Sequence[Frame], devices: Sequence[DeviceInfo], interval_s: float
    ) -> None:
        self._frames = list(frames)
        self._devices = tuple(devices)
        self._interval_s = interval_s
        self._times = [frame.time for frame in self._frames]
        self._position = 0
        self._lock = threading.Lock()

    @property
    def interval_s(self) -> float:
        return self._interval_s

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
        return self._devices

    def read(self) -> Frame:
        frame = self.step()
        if frame is None:
            raise ReplayEnded("end of the recording")
        return frame

    def step(self) -> Frame | None:
        """The next frame, or None at the end."""
        with self._lock:
            if self._position >= len(self._frames):
                return None
            frame = self._frames[self._position]
            self._position += 1
            return frame

    def close(self) -> None:
        pass

    def seek(self, time: float) -> list[Frame]:
        """Move past the frames at or before ``time`` and return them: the last of them is
        the one shown (a seek to 1 min 40 s shows the frame of 1 min 40 s, a seek to the
        end the last frame), the next read gives the first frame after it."""
        with self._lock:
            self._position = bisect.bisect_right(self._times, time)
            return self._frames[: self._position]
