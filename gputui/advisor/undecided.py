"""Why a rule reached no verdict on a GPU: the three answers that are not a finding."""

from __future__ import annotations

from enum import Enum

from gputui.model import DeviceInfo, GpuSample


class Undecided(str, Enum):
    """A rule without a verdict: a reading that should be there is missing (``doctor``
    exits 4), the board does not offer it (the rule does not apply), or the verdict needs a
    longer watch than the window (an abandoned allocation after minutes)."""

    UNREADABLE = "not-judged"
    NOT_OFFERED = "not-applicable"
    PENDING = "watching"


def not_offered(sample: GpuSample, device: DeviceInfo) -> frozenset[str]:
    """The readings the board, driver or machine does not offer at all."""
    return frozenset(sample.unsupported) | frozenset(device.unsupported)
