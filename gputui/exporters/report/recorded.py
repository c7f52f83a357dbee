"""A recording's run as its own live advisor judged it.

``gputui record`` records every tick's findings as the monitor it records with judged them:
the live screen's rules, thresholds and cadence (every 4 s), and the process readings
only a live source has. A report of a file this gputui release wrote takes those findings
as they stand (``Header.findings_judged_here``) instead of judging the run again: they are
the ones the live screen showed, and a week is read in the time its readings take. A file
of another release (other rules, other thresholds), or one whose writer passed findings of
its own, is judged again (``run.Collector``); so is any file with ``report --rejudge``.

Such a report reads of each block only what it shows (``ONLY``): the charted readings, the
GPUs' identity and clock-event masks, and who ran where; the rest is left unread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from gputui.core.config import Thresholds
from gputui.core.model import Finding
from gputui.exporters.report.columnar import gpu_columns, plain_slots
from gputui.exporters.report.run import METRICS, Run, RunBuilder
from gputui.formats.blocks import Block, Only, ProcessRow
from gputui.formats.recording import Header, Tick
from gputui.formats.values import FormatError, PendingFinding
from gputui.sampling.runlog import RunLog

#: what a report of recorded findings reads of a block
ONLY: Final = Only(
    gpu=frozenset({m.value for m in METRICS} | {"index", "lost", "clock_reasons"}),
    proc=frozenset(ProcessRow._fields),
)
_UNPARSED: Final[Any] = object()
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
        #: recorded findings whose words are not a finding's (a rule this gputui does not
        #: know, say), left out
        self.not_understood = 0

    @property
    def thresholds(self) -> Thresholds:
        return self._thresholds

    def _judge_last(self) -> None:
        """Nothing to judge: the last tick's findings are the ones recorded with it."""
        return

    def add_tick(self, tick: Tick) -> None:
        taken = self._taken(tick.frame.time)
        if taken is None:
            return
        self.runlog.add(tick.frame, tick.findings)
        if taken:
            self._append(tick.frame)

    def add_block(self, block: Block) -> None:
        """A block's ticks: its GPUs' readings in columns where every tick reads the same
        GPUs in the same slots (``plain_slots``), tick by tick otherwise."""
        times = block.times
        start = self._record_from
        indices = plain_slots(block, xids=False) if self._at_once(times) else None
        if indices is None:
            self._by_tick(block)
            return
        if start is not None and times[0] >= start:
            self._begin()
        self._log_steadily(times, self._findings(block), block.process_rows())
        self._last = times[-1]
        if self._record_from is None:  # past the warm-up: the report's columns too
            self._extend(times, gpu_columns(block, indices, METRICS), _IN_ORDER)

    def _log_steadily(
        self,
        times: Sequence[float],
        found: Sequence[tuple[Finding, ...]],
        processes: Sequence[tuple[ProcessRow, ...]],
    ) -> None:
        """The ticks into the run log: a tick with the processes and findings of the one
        before it, close after it, goes on with it in one call (``RunLog.go_on``)."""
        log, gap = self.runlog, self.runlog.gap_s
        steady = 0
        for k, when in enumerate(times):
            if (
                k
                and found[k] is found[k - 1]
                and processes[k] == processes[k - 1]
                and when - times[k - 1] <= gap
            ):
                steady += 1
                continue
            if steady:
                log.go_on(times[k - 1], steady)
                steady = 0
            log.add_at(when, processes[k], found[k])
        if steady:
            log.go_on(times[-1], steady)

    def _by_tick(self, block: Block) -> None:
        """Any other block (a GPU missing or lost at some tick, a repeated tick, the start
        of a stretch inside it): tick by tick, from the block's lists."""
        found, processes = self._findings(block), block.process_rows()
        for k, when in enumerate(block.times):
            taken = self._taken(when)
            if taken is None:
                continue
            self.runlog.add_at(when, processes[k], found[k])
            if taken:
                self._append_readings(when, _readings_at(block, k))

    def _findings(self, block: Block) -> list[tuple[Finding, ...]]:
        """Each tick's findings as the run log takes them (``words_where_kept``); those
        whose words are not a finding's counted, left out."""
        found, bad = words_where_kept(block.parts[3])
        start = self._record_from
        if start is None or block.times[-1] >= start:  # a warm-up's are the stretch before's
            self.not_understood += bad
        return found

    def finish(self, notices: Sequence[str] = (), last: bool = True) -> Run:
        bad = self.not_understood
        said = [f"{bad} recorded finding(s) not understood, skipped"] * bool(bad)
        return super().finish([*notices, *said], last)


def words_where_kept(
    found: Sequence[tuple[PendingFinding, ...]],
) -> tuple[list[tuple[Finding, ...]], int]:
    """A block's recorded findings, one tuple a tick as the run log takes them (the same
    tuple while nothing changes), and how many could not be parsed. The run log keeps an
    episode's last words alone: a finding's words are parsed once for each run of ticks
    of the block that shows it, where the run ends (its last words, whether its episode
    ends there or the block does), and stand for it at every tick of the run."""
    changes = [k for k in range(len(found)) if k == 0 or found[k] is not found[k - 1]]
    # at each change, each finding's words: those recorded where its run ends
    ends: list[dict[tuple[Any, float], PendingFinding]] = []
    after: dict[tuple[Any, float], PendingFinding] = {}
    for k in reversed(changes):
        after = {(p.key, p.since): after.get((p.key, p.since), p) for p in found[k]}
        ends.append(after)
    ends.reverse()
    parsed: dict[int, Finding | None] = {}  # by the id of the words' PendingFinding
    out: list[tuple[Finding, ...]] = []
    bad = 0
    for k, until, last in zip(changes, [*changes[1:], len(found)], ends, strict=True):
        row = []
        for p in found[k]:
            said = last[(p.key, p.since)]
            words = parsed.get(id(said), _UNPARSED)
            if words is _UNPARSED:
                try:
                    words = said.finding()
                except (FormatError, KeyError, TypeError, ValueError):
                    words, bad = None, bad + 1
                parsed[id(said)] = words
            if words is not None:
                row.append(words)
        out.extend([tuple(row)] * (until - k))
    return out, bad


def _readings_at(block: Block, k: int) -> dict[int, tuple[list[Any], Any]]:
    """Tick ``k``'s GPUs that were read (not lost): their readings and masks by index."""
    out: dict[int, tuple[list[Any], Any]] = {}
    for slot in range(block.counts[k]):
        if block.field(slot, "lost")[k]:
            continue
        readings = [block.field(slot, m.value)[k] for m in METRICS]
        out[block.field(slot, "index")[k]] = (readings, block.field(slot, "clock_reasons")[k])
    return out


def recorded_collector(
    header: Header, name: str, record_from: float | None = None
) -> RecordedCollector:
    """The collector of a recording's report that takes its recorded findings (``name``:
    the file's)."""
    return RecordedCollector(header, f"recording {name}", record_from)
