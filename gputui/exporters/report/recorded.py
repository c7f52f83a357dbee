"""A recording's run as its own live advisor judged it.

``gputui record`` records every tick's findings as the monitor it records with judged them:
the live screen's rules, thresholds and cadence (every 2 s), and the process readings
only a live source has. A report of a file this gputui release wrote takes those findings
as they stand (``Header.findings_judged_here``) instead of judging the run again: they are
the ones the live screen showed, and a week is read in the time its readings take. A file
of another release (other rules, other thresholds), or one whose writer passed findings of
its own, is judged again (``run.Collector``); so is any file with ``report --rejudge``.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Final

from gputui.core.config import Thresholds
from gputui.exporters.report.columnar import gpu_columns, plain_slots
from gputui.exporters.report.run import METRICS, RunBuilder
from gputui.formats.blocks import Block
from gputui.formats.recording import Header, Tick
from gputui.sampling.runlog import RunLog

#: the report's columns come in the order of METRICS
_IN_ORDER: Final = tuple(range(len(METRICS)))


class RecordedCollector(RunBuilder):
    """A recording's ticks in, its recorded findings taken as the episodes' findings; a
    ``Run`` out. Nothing is judged here: the run log sees each tick's processes and the
    findings recorded with it, as the recorder's own run log saw them."""

    judged_live = True

    def __init__(self, header: Header, origin: str, record_from: float | None = None) -> None:
        super().__init__(
            header.devices, header.source, header.interval_s, origin, RunLog(None), record_from
        )
        # the recorder's monitor judged with the advisor's own thresholds, at any interval
        self._thresholds = Thresholds()

    @property
    def thresholds(self) -> Thresholds:
        return self._thresholds

    def _judge_last(self) -> None:
        """Nothing to judge: the last tick's findings are the ones recorded with it."""
        return

    def add_tick(self, tick: Tick) -> None:
        frame = tick.frame
        if self._last is not None and frame.time <= self._last:
            return  # a repeated tick: once is enough
        self._last = frame.time
        if self._record_from is not None:
            if frame.time < self._record_from:
                self.runlog.add(frame, tick.findings)  # the stretch before's: warm-up only
                return
            self._begin()
        self.runlog.add(frame, tick.findings)
        self._append(frame)

    def add_block(self, block: Block) -> None:
        """A block's ticks: its GPUs' readings in columns where every tick reads the same
        GPUs in the same slots (``plain_slots``), tick by tick otherwise."""
        times = block.times
        start = self._record_from
        in_order = (self._last is None or times[0] > self._last) and all(
            a < b for a, b in pairwise(times)
        )
        indices = plain_slots(block) if in_order else None
        if indices is None or (start is not None and times[0] < start <= times[-1]):
            for k in range(len(block)):
                self.add_tick(Tick(block.frame(k), block.parts[3][k]))
            return
        if start is not None and times[0] >= start:
            self._begin()
        found, processes, log = block.parts[3], block.processes, self.runlog
        for k, when in enumerate(times):
            log.add_at(when, processes[k], found[k])
        self._last = times[-1]
        if self._record_from is None:  # past the warm-up: the report's columns too
            self._extend(times, gpu_columns(block, indices, METRICS), _IN_ORDER)


def recorded_collector(
    header: Header, name: str, record_from: float | None = None
) -> RecordedCollector:
    """The collector of a recording's report that takes its recorded findings (``name``:
    the file's)."""
    return RecordedCollector(header, f"recording {name}", record_from)
