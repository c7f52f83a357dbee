"""Replay control: what the app may do with a recording (step, seek, speed), owned here so
that the screen drives a replay without knowing which source plays it."""

from __future__ import annotations

from typing import Protocol

from gputui.core.config import MAX_SPEED, MIN_SPEED
from gputui.core.model import Frame
from gputui.sampling.monitor import Monitor
from gputui.sampling.sampler import Sampler

MIN_PACE_S = 0.05  # a frame this often at most: faster only costs the CPU


class ReplayFrames(Protocol):
    """A source of recorded frames that can be stepped and sought."""

    @property
    def interval_s(self) -> float: ...

    @property
    def at_end(self) -> bool: ...

    @property
    def start_time(self) -> float | None: ...

    @property
    def end_time(self) -> float | None: ...

    def step(self) -> Frame | None: ...

    def seek(self, time: float) -> list[Frame]: ...


class ReplayController:
    """Steps, seeks and paces a replay; the monitor's history and findings follow."""

    def __init__(
        self,
        frames: ReplayFrames,
        monitor: Monitor,
        speed: float = 1.0,
        sampler: Sampler | None = None,
    ) -> None:
        self._frames = frames
        self._monitor = monitor
        self.speed = speed
        #: the sampler that plays the frames, pacing itself by ``pace_s``; None: stepped
        self.sampler = sampler

    @property
    def interval_s(self) -> float:
        """The recording's interval (the pace at 1x)."""
        return self._frames.interval_s

    @property
    def pace_s(self) -> float:
        """How often a frame is played at the speed now (at most 20 a second)."""
        return max(MIN_PACE_S, self._frames.interval_s / self.speed)

    @property
    def at_end(self) -> bool:
        return self._frames.at_end

    @property
    def start_time(self) -> float | None:
        return self._frames.start_time

    @property
    def end_time(self) -> float | None:
        return self._frames.end_time

    def step(self) -> bool:
        """One frame forward into the monitor; False at the end of the recording."""
        frame = self._frames.step()
        if frame is None:
            return False
        self._monitor.ingest(frame)
        return True

    def seek_by(self, seconds: float) -> float | None:
        start = self._frames.start_time
        if start is None:
            return None
        latest = self._monitor.latest
        return self.seek_to((latest.time if latest is not None else start) + seconds)

    def seek_to(self, target: float) -> float | None:
        """Jump in the recording; the history and the advisor are rebuilt as they were then.

        Returns the time of the frame now shown, or None when the recording is empty.
        """
        start, end = self._frames.start_time, self._frames.end_time
        if start is None or end is None:
            return None
        # Never before the first frame: there must be a moment to show.
        target = min(max(target, start + 1e-6), end)
        before = self._frames.seek(target)
        monitor = self._monitor
        monitor.reset()
        capacity = monitor.history.capacity
        # Rules look back at most this far: judging older frames would be wasted work.
        advise_from = len(before) - int(monitor.thresholds.idle_allocated_s * 1.2)
        for i, frame in enumerate(before[-capacity:], start=max(0, len(before) - capacity)):
            monitor.ingest(frame, advise=i >= advise_from)
        return monitor.latest.time if monitor.latest is not None else target

    def change_speed(self, factor: float) -> float:
        self.speed = max(MIN_SPEED, min(MAX_SPEED, self.speed * factor))
        if self.sampler is not None:
            self.sampler.wake()  # it asks pace_s before each wait
        return self.speed
