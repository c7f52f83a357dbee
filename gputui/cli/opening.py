"""Opening what a command reads: the source the arguments name, its first readings."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from gputui.cli.exits import EXIT_NO_SOURCE
from gputui.core.config import Config
from gputui.core.judgement import gpu_list
from gputui.core.manual_clock import ManualClock
from gputui.core.model import DeviceInfo, Frame
from gputui.core.names import SourceKind
from gputui.core.sanitize import clean, mask_secrets
from gputui.core.source import (
    Backfills,
    CatchesUp,
    EngineJudged,
    Glances,
    ReadsColumns,
    Source,
    SourceUnavailable,
)

if TYPE_CHECKING:
    from gputui.sampling.monitor import Monitor


#: the simulated history the interactive demo opens with: every rule's window and more
DEMO_HISTORY_S = 120.0


#: the history a point-in-time command (doctor, snapshot) reads from a Prometheus server,
#: in readings at the cluster's cadence: what the rules judge (their windows hold
#: ``min_points`` readings and one to spare; the VRAM rules look 300 s back, 20 readings
#: at 15 s), not the screen's sparklines
POINT_READINGS = 24


def make_source(
    args: SimpleNamespace, clock: Callable[[], float] = time.time, readings: int | None = None
) -> Source:
    """The source the arguments name, narrowed to the GPUs of ``--only`` where given.
    ``readings``: the history a Prometheus source reads at start (its default without)."""
    source = _source(args, clock, readings)
    if getattr(args, "only", None):
        from gputui.sources.selection import Only

        return Only(source, args.only)
    return source


def _source(args: SimpleNamespace, clock: Callable[[], float], readings: int | None) -> Source:
    if getattr(args, "prometheus", None) and args.demo is None:
        from gputui.sources.prometheus.source import HISTORY_READINGS, PrometheusSource

        return PrometheusSource(
            args.prometheus,
            args.match,
            timeout_s=min(5.0, max(0.5, args.interval)),
            clock=clock,
            history_readings=readings or HISTORY_READINGS,
            limits_later=readings is not None,
        )
    if args.source and args.demo is None:
        from gputui.sources.remote import RemoteSource

        return RemoteSource(args.source, timeout_s=min(5.0, max(0.5, args.interval)), clock=clock)
    if args.demo is not None:
        from gputui.sources.simulated import SimulatedSource, resolve_scenarios

        # The monitor starts with the scenarios under way (as the screenshots show them);
        # a headless command steps its own warm-up (--warmup).
        history = DEMO_HISTORY_S if getattr(args, "command", None) is None else 0.0
        scenarios = resolve_scenarios(args.demo, args.gpus)
        return SimulatedSource(scenarios, seed=args.seed, clock=clock, history_s=history)
    from gputui.sources.host import HostReader
    from gputui.sources.nvml import NvmlSource
    from gputui.sources.settings import SettingsReader

    # doctor checks the job it was started in too: a job script's health gate before training
    doctor = getattr(args, "command", None) == "doctor"
    settings = SettingsReader(own=doctor, own_workers=getattr(args, "workers", None))
    # doctor reads gputui's own open files as its job's: none of them kept stat files
    host = HostReader(keep_files=not doctor)
    return NvmlSource(host=host, clock=clock, settings=settings)


def source_detail(args: SimpleNamespace) -> str | None:
    """What the source is, for the header and every report: URLs with their credentials
    (user:password@, ?token=) masked, as everywhere a URL is shown; the GPUs ``--only``
    kept."""
    detail = _detail(args)
    only = getattr(args, "only", None)
    if not only:
        return detail
    kept = "only " + gpu_list(only)
    return f"{detail} · {kept}" if detail else kept


def _detail(args: SimpleNamespace) -> str | None:
    if getattr(args, "prometheus", None) and args.demo is None:
        shown = mask_secrets(args.prometheus)
        return f"prometheus: {shown}" + (f" {args.match}" if args.match else "")
    if args.source and args.demo is None:
        return "sources: " + ", ".join(mask_secrets(url) for url in args.source)
    if args.demo is None:
        return None
    from gputui.sources.simulated import resolve_scenarios

    scenarios = resolve_scenarios(args.demo, args.gpus)
    return "scenarios: " + ", ".join(f"GPU{i} {s}" for i, s in enumerate(scenarios))


def fail(message: str) -> int:
    print(f"gputui: {clean(message)}", file=sys.stderr)
    return EXIT_NO_SOURCE


def collect(
    args: SimpleNamespace, seconds: float, fail: Callable[[str], int] = fail
) -> Monitor | int:
    """Sample for ``seconds`` (at least ``--samples`` readings): the headless commands' core.

    A simulated source needs no waiting: its clock is stepped through ``--warmup`` seconds
    of history first, so the state is the scenario's, not its first second, and then
    through ``seconds``, all at once: nothing of it is sampled at the wall clock (the
    reports say so: ``simulated_warmup``). ``fail`` reports a source that cannot start.
    """
    from gputui.sampling.sampler import Sampler

    manual = ManualClock(time.time() - args.warmup - seconds) if args.demo is not None else None
    opened = open_live(args, manual or time.time, fail, point_in_time=True)
    if isinstance(opened, int):
        return opened
    monitor, source = opened
    config = monitor.config
    sampler = Sampler(source, config.interval_s, on_frame=monitor.ingest)
    readings = max(args.samples, int(seconds / config.interval_s) + 1)
    if source.kind is SourceKind.REMOTE and isinstance(source, Backfills):
        # A Prometheus server: its history is already in, and its rates come computed; a
        # second reading would only wait for the same answer. The window asked for remains,
        # unless the history already covers it: then one fresh reading completes it.
        times = monitor.history.times()
        covered = len(times) > 1 and times[-1] - times[0] >= seconds
        covered |= monitor.engine is not None  # the engine judged with its own windows
        readings = 1 if covered else int(seconds / config.interval_s) + 1
        read_since_history(monitor, source)
    try:
        if manual is not None:
            readings = max(readings, int((args.warmup + seconds) / config.interval_s) + 1)
            for _ in range(readings):
                monitor.ingest(sampler.read_once())
                manual.advance(config.interval_s)
        else:
            for i in range(readings):
                if i:
                    time.sleep(config.interval_s)
                monitor.ingest(sampler.read_once())
    finally:
        source.close()
    monitor.judge_latest()
    return monitor


#: times the stretch since the history is read before the first reading (each is shorter)
MAX_CATCH_UP = 3


def read_since_history(monitor: Monitor, source: Source) -> None:
    """Judging a large history takes a while (tens of seconds at 8,192 GPUs): the stretch
    since its last frame is read and judged, again while that left a gap, so the first
    reading does not follow a gap the windowed rules cannot judge across."""
    if not isinstance(source, CatchesUp):
        return
    for _ in range(MAX_CATCH_UP):
        times = monitor.history.times()
        later = source.catch_up(times[-1]) if times else ()
        if not later:
            return
        for frame in later:
            monitor.ingest(frame)


def simulated_warmup(args: SimpleNamespace) -> float | None:
    """The demo's simulated warm-up in seconds (None when the readings are live), so that a
    report calls its history simulated rather than sampled."""
    return float(args.warmup) if args.demo is not None else None


def write_output(text: str, output: Path | None) -> int:
    if output is None:
        sys.stdout.write(text)
        return 0
    from gputui.exporters.files import write_atomic

    try:
        path = write_atomic(output, text)
    except OSError as exc:
        print(
            f"gputui: could not write {clean(str(output))}: {exc.strerror or exc}", file=sys.stderr
        )
        return 1
    print(f"gputui: written to {clean(str(path))}", file=sys.stderr)
    return 0


def open_live(
    args: SimpleNamespace,
    clock: Callable[[], float] = time.time,
    fail: Callable[[str], int] = fail,
    point_in_time: bool = False,
) -> tuple[Monitor, Source] | int:
    """The source opened and a monitor over it, or the exit status when it cannot start
    (``fail`` says why). ``point_in_time`` (doctor, snapshot): the source's history is
    read as far back as the rules look and not judged frame by frame: the verdict is on
    the readings after it, whose windows hold it (a cluster's history is 8,192 GPUs a
    frame: judging each of its frames cost more than reading it)."""
    from gputui.advisor import make_monitor
    from gputui.core.model import SourceInfo

    source = make_source(args, clock, readings=POINT_READINGS if point_in_time else None)
    try:
        devices = open_devices(source)
    except SourceUnavailable as exc:
        return fail(str(exc))
    config = Config(interval_s=args.interval)
    info = SourceInfo(source.label, source.kind, source_detail(args))
    if point_in_time and isinstance(source, ReadsColumns):  # a cluster's history, in columns
        # rings for the readings the rules read and a few past them, not the screen's hour
        config = Config(args.interval, (POINT_READINGS + 8) * args.interval)
        monitor = make_monitor(devices, config, info)
        monitor.ingest_columns(*source.history_columns(engine_nodes(monitor, source)))
        for _ in range(MAX_CATCH_UP):  # the stretch reading a large cluster's window took
            times = monitor.history.times()
            later = source.history_columns(since=times[-1]) if times else None
            if not later or not later[0]:
                break
            monitor.ingest_columns(*later)
        return monitor, source
    monitor = make_monitor(devices, config, info)
    for frame in backfilled(source):
        monitor.ingest(frame, advise=not point_in_time)
    return monitor, source


def engine_nodes(monitor: Monitor, source: Source) -> set[str] | None:
    """Where the cluster's server evaluates `gputui rules`, the monitor takes their verdict,
    and the history is read of the nodes their alerts name alone when the engine judges
    every rule the source feeds (None: of every node)."""
    verdict = source.engine_verdict() if isinstance(source, EngineJudged) else None
    if verdict is None:
        return None
    from gputui.advisor.promrules import covers

    monitor.set_engine(verdict)
    if not covers(verdict.rules):
        return None
    return {alert.node for alert in verdict.alerts if alert.gpu is not None}


def backfilled(source: Source) -> tuple[Frame, ...]:
    """The history a source already holds (a Prometheus server's window), oldest first."""
    return tuple(source.backfill()) if isinstance(source, Backfills) else ()


def glance_frames(source: Source) -> tuple[Frame, ...]:
    """A first frame for the first screen, where the source can take one quickly (the live
    NVML source: its GPUs without the slower host readings), so the first paint shows the
    GPUs instead of waiting for the sampler's first full read; none where it cannot."""
    if not isinstance(source, Glances):
        return ()
    try:
        return (source.glance(),)
    except Exception:  # the sampler's first read meets it again, and says what it is
        return ()


def open_devices(source: Source) -> tuple[DeviceInfo, ...]:
    """The source's GPUs; none readable is the same failure as no source (exit 3)."""
    devices = source.open()
    if not devices:
        source.close()
        raise SourceUnavailable("the source answered but reports no GPU that can be read")
    return devices


def terminal_missing() -> str | None:
    """Which of stdin, stdout and stderr is not a terminal, if any: the monitor needs all
    three (keys in, screen out; Textual draws on stderr)."""
    for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout), ("stderr", sys.stderr)):
        if stream is None or not stream.isatty():
            return name
    return None
