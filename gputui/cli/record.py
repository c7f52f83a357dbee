"""``gputui record``: every tick into a recording until ``--duration``, Ctrl+C, SIGTERM or
SIGHUP, then the block closed, the file synced, exit 0 (docs/record.md).

A file that cannot be written (a full disk, a file system turned read-only) ends the
recording with ``EXIT_CANNOT_WRITE`` and a sentence naming the file and up to which tick
it holds: what was written stays readable, the journal kept beside it. With
``--rotate-mb``, an existing recording is rotated away first, its journal folded into it:
what a recorder restarted by its service finds (contrib/gputui-record.service).
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from types import FrameType, SimpleNamespace, TracebackType
from typing import TYPE_CHECKING

from gputui.cli.exits import EXIT_CANNOT_WRITE
from gputui.cli.opening import open_live
from gputui.core.sanitize import clean
from gputui.core.units import fmt_time

if TYPE_CHECKING:
    from gputui.exporters.recorder import RecordWriter
    from gputui.sampling.monitor import Monitor
    from gputui.sampling.sampler import Sampler

#: what ends a recording, the tick being taken first written whole
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def cmd_record(args: SimpleNamespace) -> int:
    from gputui.exporters.recorder import RecordWriter
    from gputui.formats.recording import Header
    from gputui.sampling.sampler import Sampler

    shown = clean(str(args.output))
    earlier = _earlier_recording(args, shown)
    if earlier is None:
        return EXIT_CANNOT_WRITE
    opened = open_live(args)
    if isinstance(opened, int):
        return opened
    monitor, source = opened
    header = Header(monitor.source, monitor.devices, monitor.config.interval_s, live_findings=True)
    try:
        writer = RecordWriter(
            args.output,
            header,
            max_bytes=int(args.rotate_mb * 1e6),
            keep=args.keep,
            keep_secrets=args.keep_secrets,
            replace=args.force,
            block_ticks=args.block,
            sync_s=args.sync,
            rotate_existing=earlier,
        )
    except OSError as exc:
        source.close()
        print(f"gputui: cannot write {shown}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_CANNOT_WRITE
    if earlier:
        from gputui.exporters.recorder import rotated_name

        older = clean(str(rotated_name(args.output, 1)))
        print(f"gputui: {shown} held an earlier recording: now {older}", file=sys.stderr)
    sampler = Sampler(source, monitor.config.interval_s, on_frame=monitor.ingest)
    deadline = None if args.duration is None else time.monotonic() + args.duration
    print(f"gputui: recording to {shown} (Ctrl+C to stop)", file=sys.stderr)
    status = 0
    with Stop() as stop:
        try:
            _record_until(deadline, sampler, monitor, writer, stop)
        except KeyboardInterrupt:  # a second signal: the tick being taken is left
            pass
        except OSError as exc:  # a full disk, a read-only file system: keep what is written
            status = _cannot_write(writer, exc, shown)
        finally:
            try:
                writer.close()
            except OSError as exc:
                status = _cannot_write(writer, exc, shown)
            source.close()
    if stop.received is not None:
        name = signal.Signals(stop.received).name
        print(f"gputui: {name}: the recording is closed", file=sys.stderr)
    _said_done(args, writer, shown)
    return status


def _earlier_recording(args: SimpleNamespace, shown: str) -> bool | None:
    """Whether an existing file is to be rotated away first (``--rotate-mb``, a recording:
    its journal folded in first); None where it cannot be (said why)."""
    path = args.output
    if not args.rotate_mb or args.force or path.is_symlink() or not path.is_file():
        return False
    from gputui.exporters.recovery import fold_journal
    from gputui.formats.recording import RecordingError

    try:
        notices = fold_journal(path)
    except RecordingError as exc:
        print(f"gputui: {clean(str(exc))}: not rotated away (--force replaces it)", file=sys.stderr)
        return None
    except OSError as exc:
        why = exc.strerror or exc
        print(f"gputui: cannot fold its journal into {shown}: {why}", file=sys.stderr)
        return None
    for notice in notices:
        print(f"gputui: {clean(notice)}", file=sys.stderr)
    return True


class Stop:
    """SIGINT, SIGTERM and SIGHUP end the recording once the tick being taken is written
    (``received``, and a sleep between ticks cut short); a second one ends it at once (a
    reading that hangs). Outside the main thread no signal reaches it: nothing is set."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._wake = threading.Event()
        self._before: dict[int, object] = {}

    def __enter__(self) -> Stop:
        if threading.current_thread() is threading.main_thread():
            for number in STOP_SIGNALS:
                self._before[number] = signal.signal(number, self._handle)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        for number, handler in self._before.items():
            signal.signal(number, handler)  # type: ignore[arg-type]

    def _handle(self, number: int, _frame: FrameType | None) -> None:
        if self.received is not None:
            raise KeyboardInterrupt
        self.received = number
        self._wake.set()

    def sleep(self, seconds: float) -> None:
        self._wake.wait(seconds)


def _record_until(
    deadline: float | None, sampler: Sampler, monitor: Monitor, writer: RecordWriter, stop: Stop
) -> None:
    """One tick a sampling interval into the recording until the deadline (or forever),
    or a stop signal."""
    while stop.received is None and (deadline is None or time.monotonic() < deadline):
        started = time.monotonic()
        try:
            frame = sampler.read_once()
        except Exception as exc:  # a failed tick is skipped, the recording goes on
            print(f"gputui: a reading failed: {clean(str(exc))}", file=sys.stderr)
        else:
            writer.write(frame, monitor.ingest(frame))
            while writer.notices:
                print(f"gputui: {clean(writer.notices.pop(0))}", file=sys.stderr)
        pause = monitor.config.interval_s - (time.monotonic() - started)
        if deadline is not None:
            pause = min(pause, deadline - time.monotonic())
        if pause > 0 and stop.received is None:
            stop.sleep(pause)


def _cannot_write(writer: RecordWriter, exc: OSError, shown: str) -> int:
    """Says what could not be written, and up to when the recording holds."""
    failed = clean(str(exc.filename)) if exc.filename else shown
    if writer.held_until is None:
        held = "it holds no tick"
    else:
        held = f"{shown} holds every tick up to {fmt_time(writer.held_until)}"
        if writer.journal is not None and writer.journaled:
            held += (
                f", the last {writer.journaled} in its journal {clean(writer.journal.name)} "
                "(gputui report and replay read both)"
            )
    print(f"gputui: cannot write {failed}: {exc.strerror or exc}: {held}", file=sys.stderr)
    return EXIT_CANNOT_WRITE


def _said_done(args: SimpleNamespace, writer: RecordWriter, shown: str) -> None:
    """What was recorded, where the older ticks went, and the command of its report."""
    from gputui.exporters.recorder import rotated_name

    ticks = f"{writer.ticks} tick{'' if writer.ticks == 1 else 's'}"
    print(f"gputui: recorded {ticks} to {shown}", file=sys.stderr)
    if not writer.ticks or not writer.regular_file:
        return
    from gputui.cli.report import report_command

    if writer.rotations:
        older = clean(str(rotated_name(args.output, 1)))
        print(
            f"gputui: rotated {writer.rotations} time{'s' if writer.rotations > 1 else ''}: "
            f"the newest ticks are in {shown}, older ones in {older} and on (--keep "
            f"{args.keep}); a report reads one file",
            file=sys.stderr,
        )
    print(f"gputui: its report: {clean(report_command(args.output))}", file=sys.stderr)
