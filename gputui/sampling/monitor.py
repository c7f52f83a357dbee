"""One place where frames become history and findings: used by the app and every command.

The monitor sits below the advisor: it is given a way to make one (``make_judge``) by the
composition root, so sampling never imports the rules it feeds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from gputui.config import Config, Thresholds
from gputui.model import DeviceInfo, Finding, Frame, SourceInfo
from gputui.sampling.history import History


class Judge(Protocol):
    """What the monitor needs of the advisor."""

    @property
    def findings(self) -> tuple[Finding, ...]: ...

    @property
    def thresholds(self) -> Thresholds: ...

    def update(self, history: History) -> tuple[Finding, ...]: ...


JudgeFactory = Callable[[], Judge]


class Monitor:
    def __init__(
        self,
        devices: Sequence[DeviceInfo],
        config: Config,
        source: SourceInfo,
        make_judge: JudgeFactory,
    ) -> None:
        self.devices = tuple(devices)
        self.config = config
        self.source = source
        self.history = History(config.history_points)
        self._make_judge = make_judge
        self.advisor = make_judge()

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.advisor.findings

    @property
    def latest(self) -> Frame | None:
        return self.history.latest

    def ingest(self, frame: Frame, advise: bool = True) -> tuple[Finding, ...]:
        """Add a frame; ``advise=False`` only fills history (catching up after a seek)."""
        self.history.add(frame)
        if not advise:
            return self.advisor.findings
        return self.advisor.update(self.history)

    def reset(self) -> None:
        """Forget history and findings: a replay jumped in time."""
        self.history = History(self.config.history_points)
        self.advisor = self._make_judge()
