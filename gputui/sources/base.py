"""The contract every source keeps, whether it reads NVML, a simulation or a recording."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from gputui.core.model import DeviceInfo, Frame
from gputui.core.names import SourceKind


class SourceUnavailable(Exception):
    """The source cannot start; the message is one plain sentence for the user."""


@runtime_checkable
class Source(Protocol):
    #: what the UI shows as the data's origin: "NVML", "SIMULATED", "REPLAY"...
    label: str
    kind: SourceKind

    def open(self) -> tuple[DeviceInfo, ...]:
        """Start the source and return the static facts of every GPU.

        Raises SourceUnavailable when it cannot start.
        """
        ...

    def read(self) -> Frame:
        """Read one tick. Never called concurrently with itself."""
        ...

    def close(self) -> None:
        """Release resources; called once, after the last read has returned."""
        ...
