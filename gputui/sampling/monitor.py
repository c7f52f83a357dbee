"""One place where frames become history and findings: used by the app and every command."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gputui.advisor import Finding, make_advisor
from gputui.config import Config, Thresholds
from gputui.exporters.snapshot import SourceInfo, snapshot_dict
from gputui.history import History
from gputui.model import DeviceInfo, Frame


class Monitor:
    def __init__(
        self,
        devices: Sequence[DeviceInfo],
        config: Config,
        source: SourceInfo,
        thresholds: Thresholds | None = None,
    ) -> None:
        self.devices = tuple(devices)
        self.config = config
        self.source = source
        self.history = History(config.history_points)
        self.advisor = make_advisor(self.devices, thresholds)

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
        self.advisor = make_advisor(self.devices, self.advisor.thresholds)

    def snapshot(self, window_points: int | None = None) -> dict[str, Any]:
        return snapshot_dict(
            self.source,
            self.devices,
            self.history,
            self.config.interval_s,
            window_points=window_points,
            findings=[f.to_dict() for f in self.findings],
        )
