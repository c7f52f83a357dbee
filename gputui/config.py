"""Frozen settings: sampling, history and (later) advisor thresholds, with their defaults."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_INTERVAL_S = 1.0
MIN_INTERVAL_S = 0.25
MAX_INTERVAL_S = 60.0
DEFAULT_HISTORY_S = 3600.0


@dataclass(frozen=True, slots=True)
class Config:
    interval_s: float = DEFAULT_INTERVAL_S
    history_s: float = DEFAULT_HISTORY_S

    @property
    def history_points(self) -> int:
        """Ring-buffer length: the history window at the configured interval."""
        return max(2, int(self.history_s / self.interval_s) + 1)
