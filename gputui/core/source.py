"""The contract every source keeps, whether it reads NVML, a simulation, a recording or a
remote node, and the few things some sources can do beyond it, each a small protocol the
composition root asks with ``isinstance`` (never by probing for a method's name).

A source's capabilities:

- ``Follows``: reads in full only what the screen shows (a cluster through Prometheus).
- ``Backfills``: holds history from before it was opened, judged before the first frame.
- ``CatchesUp``: can give the frames since a time (the stretch its own backfill took).
- ``Glances``: can take a quick first frame before Textual starts, for the first paint.
- ``TopologyLater``: can leave the GPUs' pair topology to its first full read.
- ``ReadsColumns``: can give its history as columns (a cluster's window, no frame built).
- ``EngineJudged``: can say what the cluster's engine judged (``gputui rules`` loaded).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Collection, Sequence
from typing import Protocol, TypeAlias, runtime_checkable

from gputui.core.judgement import EngineVerdict
from gputui.core.model import DeviceInfo, Frame
from gputui.core.names import SourceKind

#: a GPU's history as columns: a column of floats a Metric (NaN: no reading), in their
#: order, and its clock-event masks
GpuColumns: TypeAlias = "tuple[list[array[float]], array[int]]"
#: a source's history as columns: the times, each GPU's (by index) columns, each GPU's
#: last reading's time, and where in the columns the times begin
ColumnHistory: TypeAlias = "tuple[list[float], dict[int, GpuColumns], dict[int, float], int]"


class SourceUnavailable(Exception):
    """The source cannot start; the message is one plain sentence for the user."""


@runtime_checkable
class Source(Protocol):
    """Where frames come from. ``open`` once, then ``read`` once a tick from one thread at
    a time (the sampler's), then ``close`` once; a reading a GPU cannot give is ``None``
    in the frame, never a made-up value."""

    #: what the UI shows as the data's origin: "NVML", "SIMULATED", "REPLAY"...
    label: str
    kind: SourceKind

    def open(self) -> tuple[DeviceInfo, ...]:
        """Start the source and return the static facts of every GPU, in NVML's order.

        Raises SourceUnavailable when it cannot start (the message says why, in one
        sentence for the user)."""
        ...

    def read(self) -> Frame:
        """Read one tick: every GPU's sample, the host's, the GPU processes. Never called
        concurrently with itself; a GPU that stops answering is marked lost in the frame
        and the others keep coming."""
        ...

    def close(self) -> None:
        """Release resources; called once, after the last read has returned."""
        ...


@runtime_checkable
class Follows(Protocol):
    """A source that reads in full only the nodes the screen shows (a cluster)."""

    def follow(self, shown: Callable[[], Sequence[str]]) -> None:
        """From now on read in full the nodes ``shown`` names when asked, most wanted
        first (the monitor's ``shown_nodes``), and the rest only in aggregate. Said before
        ``open``, so the census is read for less."""
        ...


@runtime_checkable
class Backfills(Protocol):
    """A source that already holds history (a Prometheus server's window, a demo's
    warm-up)."""

    def backfill(self) -> Sequence[Frame]:
        """The history before the first ``read``, oldest first, at the source's own
        cadence; asked once, after ``open``."""
        ...


@runtime_checkable
class CatchesUp(Protocol):
    """A backfilling source whose history grows while the backfill is judged."""

    def catch_up(self, since: float) -> Sequence[Frame]:
        """The frames after ``since`` (a frame time), oldest first; none when nothing
        newer is there yet."""
        ...


@runtime_checkable
class Glances(Protocol):
    """A source that can take a quick first frame (the live NVML source)."""

    def glance(self) -> Frame:
        """Every GPU's readings of a tick and its processes, without the slower host
        readings the first full ``read`` brings; may raise what ``read`` would."""
        ...


@runtime_checkable
class TopologyLater(Protocol):
    """A source that can leave the GPUs' topology (queries for every pair) to later."""

    def topology_later(self) -> None:
        """Said before ``open``: ``open`` skips the pair queries, and the first full read
        brings the complete facts in ``Frame.joined``."""
        ...


@runtime_checkable
class ReadsColumns(Protocol):
    """A source that can give its history as columns (a cluster read through a Prometheus
    server: no frame of every GPU at every step)."""

    def history_columns(
        self, only: Collection[str] | None = None, since: float | None = None
    ) -> ColumnHistory:
        """The history window of every node that reports, or of those ``only`` names;
        ``since``: the steps after that time (the stretch reading the window took)."""
        ...


@runtime_checkable
class EngineJudged(Protocol):
    """A source whose server may evaluate ``gputui rules`` itself (Prometheus)."""

    def engine_verdict(self) -> EngineVerdict | None:
        """What the engine judged for every GPU at once; None where the rules are not
        loaded."""
        ...
