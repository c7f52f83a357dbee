"""``gputui report``: a recording, or a Prometheus server's range, as a report file."""

from __future__ import annotations

import math
import re
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from gputui.cli.exits import EXIT_USAGE
from gputui.cli.opening import fail, write_output
from gputui.cli.parser import REPORT_DEADLINE_S, REPORT_QUERY_TIMEOUT_S
from gputui.core.sanitize import clean
from gputui.formats.values import MAX_TIME

if TYPE_CHECKING:
    from gputui.core.model import DeviceInfo
    from gputui.exporters.report import Run
    from gputui.sources.prometheus.source import PrometheusSource

#: a report reads a recording one tick at a time: this many, about 8 weeks at 1 s
REPORT_MAX_TICKS = 5_000_000
#: Prometheus ticks a report asks for, at most, for 8 GPUs (fewer for more GPUs): the
#: advisor judges each; the step is the range divided by this, never under 1 s
PROMETHEUS_GPU_TICKS = 160_000
MIN_TICKS, MAX_TICKS = 500, 20_000
#: a range query's answer is held to this many values (about 30 bytes each in JSON: well
#: inside the 10 MB an answer may be); Prometheus itself refuses 11,000 points a series
RANGE_POINTS = 250_000
RANGE_FIELDS_PER_GPU = 40
MAX_RANGE_STEPS = 10_000
_RELATIVE = re.compile(r"-?(\d+(?:\.\d+)?)([smhd])")
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def duration_s(text: str) -> float | None:
    """'-8h', '5m', '90s' (s, m, h, d) in seconds, the sign kept; None for anything else."""
    relative = _RELATIVE.fullmatch(text.strip())
    if relative is None:
        return None
    seconds = float(relative[1]) * _UNIT_S[relative[2]]
    return -seconds if text.strip().startswith("-") else seconds


def parse_when(text: str, now: float) -> float:
    """A moment: 'now', '-8h' (before now; s, m, h, d; '-90' is seconds), seconds since
    the epoch, or ISO 8601 ('2026-12-03T22:00', local time unless it names its offset);
    between 1970 and the year 5138, as every time gputui reads (ValueError else)."""
    moment = _moment_of(text.strip(), now)
    if not 0 <= moment < MAX_TIME:
        raise ValueError(
            f"{text.strip()!r} is {'before 1970' if moment < 0 else 'past the year 5138'}: "
            "no time a server holds readings of"
        )
    return moment


def _moment_of(text: str, now: float) -> float:
    if text == "now":
        return now
    relative = duration_s(text)
    if relative is not None and text.startswith("-"):
        return now + relative  # -inf for a number of days past what a float holds
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        if math.isfinite(number):
            # no moment lies before 1970: a negative number is an age, as -90s would be
            return now + number if number < 0 else number
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, OverflowError):
        raise ValueError(
            f"{text!r} is no moment: 'now', -8h (s, m, h, d before now), seconds since the "
            "epoch, or a date and time such as 2026-12-03T22:00"
        ) from None
    try:
        return moment.timestamp()
    except (OverflowError, OSError, ValueError):
        return -math.inf if moment.year < 1970 else math.inf


def default_output(fmt: str, stem: str) -> Path:
    return Path(f"{stem}.report.{'md' if fmt == 'md' else 'html'}")


def report_command(recording: Path, output: Path | None = None) -> str:
    """The command that makes a recording's report, as ``gputui record`` prints it."""
    out = output or default_output("html", _stem(recording))
    return f"gputui report {_argument(recording)} -o {_argument(out)}"


def _argument(path: Path) -> str:
    """A path as a shell argument that reads as a path: quoted, and "./" before a name
    that starts with "-" (else it reads as an option)."""
    text = str(path)
    return shlex.quote(f"./{text}" if text.startswith("-") else text)


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    return name or "run"


def cmd_report(args: SimpleNamespace) -> int:
    from gputui.exporters.report import report_text

    fmt = args.format or (
        "md" if args.output is not None and args.output.suffix.lower() == ".md" else "html"
    )
    prometheus = getattr(args, "prometheus", None)
    if (args.file is None) == (prometheus is None):
        print("gputui: report wants a recording file or --prometheus URL", file=sys.stderr)
        return EXIT_USAGE
    if args.file is not None:
        refused = _file_conflicts(args)
        if refused is not None:
            print(f"gputui: {clean(refused)}", file=sys.stderr)
            return EXIT_USAGE
    if prometheus is not None:
        run = _from_prometheus(args, prometheus)
        stem = "prometheus"
    else:
        run = _from_recording(args.file, args.rejudge)
        stem = _stem(args.file)
    if isinstance(run, int):
        return run
    for notice in run.notices:
        print(f"gputui: {clean(notice)}", file=sys.stderr)
    text = report_text(run, fmt, keep_secrets=args.keep_secrets)
    # Markdown for a ticket goes to stdout unless told; an HTML page to a file beside
    output = args.output or (None if fmt == "md" else default_output(fmt, stem))
    return write_output(text, output)


def _file_conflicts(args: SimpleNamespace) -> str | None:
    """Why a report of a recording file cannot run as asked: options that only select a
    Prometheus server's range (silently ignored, they would read as applied), or an output
    that is the recording itself (written over, the run would be lost)."""
    given = [
        option
        for option, value in (
            ("--since", args.since),
            ("--until", args.until),
            ("--step", args.step),
            ("--deadline", getattr(args, "deadline", None)),
            ("--match", getattr(args, "match", None)),
        )
        if value is not None
    ]
    if given:
        return f"{', '.join(given)} select a Prometheus server's range: not for a recording file"
    output: Path | None = args.output
    try:
        same = output is not None and output.samefile(args.file)
    except OSError:  # either is missing (a report to a new file) or unreadable
        same = False
    if same:
        return f"{output} is the recording itself: write the report to another file"
    return None


def _from_recording(path: Path, rejudge: bool = False) -> Run | int:
    from gputui.exporters.report.segments import judge_recording
    from gputui.formats.recording import RecordingError

    try:
        run = judge_recording(path, REPORT_MAX_TICKS, rejudge=rejudge)
    except (OSError, RecordingError) as exc:
        return fail(str(exc) if isinstance(exc, RecordingError) else f"{path}: {exc}")
    if run is None:
        return fail(f"{path}: the recording holds no frames")
    return run


def _window(args: SimpleNamespace) -> tuple[float, float] | int:
    now = time.time()
    if args.since is None:
        print(
            "gputui: report --prometheus wants --since (and --until, default now)", file=sys.stderr
        )
        return EXIT_USAGE
    try:
        start = parse_when(args.since, now)
        end = parse_when(args.until or "now", now)
    except ValueError as exc:
        print(f"gputui: --since/--until: {clean(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    if end <= start:
        print("gputui: --until must come after --since", file=sys.stderr)
        return EXIT_USAGE
    if start >= now:
        print("gputui: --since is in the future: there is nothing to read yet", file=sys.stderr)
        return EXIT_USAGE
    # Past now the server repeats each series' last sample for its lookback (5 min): time
    # that has not happened would count as busy or throttled
    return start, min(end, now)


def choose_step(span_s: float, gpus: int, asked: float | None = None) -> float:
    """The range's step: the one asked for, or one that keeps the ticks (and the advisor's
    work) bounded: fewer for a larger cluster, never finer than a second."""
    if asked is not None:
        return asked
    ticks = max(MIN_TICKS, min(MAX_TICKS, PROMETHEUS_GPU_TICKS // max(1, gpus)))
    return float(max(1, math.ceil(span_s / ticks)))


def range_slices(start: float, end: float, step: float, gpus: int) -> Iterator[tuple[float, float]]:
    """The range cut into queries whose answers each stay within the bounds of one
    (``RANGE_POINTS`` values, and Prometheus's own 11,000 points a series)."""
    series = max(1, gpus) * RANGE_FIELDS_PER_GPU
    steps = max(10, min(MAX_RANGE_STEPS, RANGE_POINTS // series))
    first = start
    while first <= end:
        last = min(end, first + (steps - 1) * step)
        yield first, last
        first = last + step


def _moment(when: float) -> str:
    return datetime.fromtimestamp(when).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


class Deadline:
    """Every query of a report's range within one deadline: each asked for at most what is
    left of it, none once it has passed (``fetching.fetch`` bounds one query alone)."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._ends = clock() + seconds
        #: a query was left for the deadline: what the source made of it (a node not read,
        #: no GPU found) is not what the server holds
        self.missed = False

    def fetch(self, url: str, timeout: float, headers: dict[str, str]) -> str:
        from gputui.sources.fetching import ScrapeError, fetch

        left = self._ends - self._clock()
        if left <= 0:
            self.missed = True
            raise ScrapeError(self.passed())
        try:
            return fetch(url, min(timeout, left), headers)
        except ScrapeError as exc:
            if self._clock() < self._ends:
                raise
            self.missed = True
            raise ScrapeError(self.passed()) from exc

    def passed(self) -> str:
        return (
            f"the whole range was not read within --deadline {self.seconds:g} s (a slow "
            "server: ask for a shorter range, --match fewer nodes, or a longer deadline)"
        )


def _opened(
    args: SimpleNamespace, url: str, window: tuple[float, float], deadline: Deadline
) -> tuple[PrometheusSource, tuple[DeviceInfo, ...], tuple[float, float]] | int:
    """The server's source opened over the range, its GPUs, and the range its readings
    span; or the status where it cannot be read."""
    from gputui.core.source import SourceUnavailable
    from gputui.sources.prometheus.source import PrometheusSource
    from gputui.sources.remote import ScrapeError

    start, end = window
    try:
        source = PrometheusSource(
            url,
            args.match,
            timeout_s=REPORT_QUERY_TIMEOUT_S,
            at=end,
            history_s=end - start,
            fetcher=deadline.fetch,
        )
        devices = source.open()
    except SourceUnavailable as exc:
        why = deadline.passed() if deadline.missed else str(exc)
        return fail(f"{why} (the range asked: {_moment(start)} to {_moment(end)})")
    try:
        span = source.data_span(start, end)
    except ScrapeError as exc:
        return fail(f"the Prometheus server's range could not be read: {exc}")
    if span is None and deadline.missed:
        return fail(f"the Prometheus server's range could not be read: {deadline.passed()}")
    if span is None:
        return fail(
            f"the Prometheus server holds no DCGM readings between {_moment(start)} and "
            f"{_moment(end)}"
        )
    return source, devices, span


def _from_prometheus(args: SimpleNamespace, url: str) -> Run | int:
    from gputui.core.model import SourceInfo
    from gputui.exporters.report import Collector, report_thresholds
    from gputui.sources.remote import ScrapeError

    window = _window(args)
    if isinstance(window, int):
        return window
    deadline = Deadline(getattr(args, "deadline", None) or REPORT_DEADLINE_S)
    opened = _opened(args, url, window, deadline)
    if isinstance(opened, int):
        return opened
    source, devices, (start, end) = opened
    step = choose_step(end - start, len(devices), args.step)
    detail = f"prometheus: {url}" + (f" {args.match}" if args.match else "")
    thresholds = report_thresholds(step)
    collector = Collector(
        devices,
        SourceInfo(source.label, source.kind, detail),
        step,
        origin=f"Prometheus {url}",
        thresholds=thresholds,
    )
    try:
        for first, last in range_slices(start, end, step, len(devices)):
            collector.add_all(source.range_frames(first, last, step))
    except ScrapeError as exc:
        return fail(f"the Prometheus server's range could not be read: {exc}")
    if deadline.missed:  # a node or a slice left out on the way: no report of part of it
        return fail(f"the Prometheus server's range could not be read: {deadline.passed()}")
    if not len(collector):
        return fail(f"the Prometheus server holds no DCGM readings from {args.since} on")
    notices = [f"read every {step:g} s from the server (query_range step)"]
    if thresholds.window_s > report_thresholds(0.0).window_s:
        notices.append(
            f"the advisor's windows widened to {thresholds.window_s:g} s to hold "
            f"{thresholds.min_points} readings at this step"
        )
    notices.append(
        "a Prometheus server holds no process or host readings: the rules that need them "
        "(input starvation, idle with memory held, stragglers) cannot judge"
    )
    return collector.finish(notices)
