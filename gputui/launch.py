"""The app factory: the composition root that puts a source, a monitor with its advisor and
the screen together, for the CLI, the tests and the screenshots alike."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gputui.core.config import Config, Thresholds
from gputui.core.manual_clock import ManualClock
from gputui.core.model import DeviceInfo, Frame, SourceInfo
from gputui.core.names import SourceKind
from gputui.core.process_access import ProcessAccess, ReadOnly
from gputui.core.source import Follows, Source
from gputui.core.units import fmt_duration
from gputui.sampling.monitor import Judge, Monitor
from gputui.sampling.sampler import Sampler
from gputui.sources.process_access import LocalProcesses
from gputui.ui.app import GpuTuiApp
from gputui.ui.parts import AppParts

if TYPE_CHECKING:
    from gputui.formats.recording import Recording


def make_app(
    source: Source,
    devices: Sequence[DeviceInfo],
    config: Config,
    *,
    snapshot_dir: Path = Path("."),
    detail: str | None = None,
    live: bool = True,
    ascii: bool | None = None,
    keep_secrets: bool = False,
    owns_process: bool = False,
    history: Sequence[Frame] = (),
    first: Sequence[Frame] = (),
    process_access: ProcessAccess | None = None,
    readonly: bool = False,
    theme: str = "dark",
) -> GpuTuiApp:
    """The app over ``source``. With ``live=False`` no sampler runs: the caller feeds frames.
    ``ascii``: draw with ASCII only (None: as the terminal and locale say). ``history`` (a
    Prometheus server's window) is judged before the first frame, so the advisor speaks
    from the first second. ``process_access``: this machine's processes, where the source
    reads them (the app may then look into one and signal it). ``first``: frames the first
    paint shows (a glance), judged with the frames after them: the rules load after that
    paint. ``readonly``: no signal is ever sent from it (processes are still looked
    into). ``theme``: the one it starts in (``config.THEMES``)."""
    monitor = _monitor(devices, config, SourceInfo(source.label, source.kind, detail))
    for frame in history:
        monitor.ingest(frame)
    for frame in first:
        monitor.ingest(frame, advise=False)
    if isinstance(source, Follows):  # a cluster source reads in full what the screen shows
        source.follow(lambda: monitor.shown_nodes)
    since = history[-1].time if history else None  # the first read follows on from it
    sampler = Sampler(source, lambda: monitor.interval_s, since=since) if live else None
    parts = AppParts(
        monitor,
        sampler=sampler,
        snapshot_dir=snapshot_dir,
        keep_secrets=keep_secrets,
        ascii=ascii,
        owns_process=owns_process,
        process_access=ReadOnly(process_access)
        if readonly and process_access is not None
        else process_access,
        readonly=readonly,
        theme=theme,
    )
    return GpuTuiApp(parts)


def _monitor(devices: Sequence[DeviceInfo], config: Config, source: SourceInfo) -> Monitor:
    """A monitor whose advisor (the whole rule catalogue) is made when it first judges."""

    thresholds = Thresholds()

    def judge() -> Judge:
        from gputui.advisor import make_advisor

        return make_advisor(devices, thresholds, source.kind is SourceKind.REMOTE)

    return Monitor(devices, config, source, judge, later=thresholds)


def make_demo_app(
    scenario: str | None = None,
    gpus: int = 4,
    *,
    seed: int = 0,
    warmup_s: int = 120,
    start: float = 1_800_000_000.0,
    snapshot_dir: Path = Path("."),
    ascii: bool | None = None,
    owns_process: bool = False,
    theme: str = "dark",
) -> GpuTuiApp:
    """A frozen demo on a fixed clock: the same screen on every machine (tests, screenshots)."""
    from gputui.sources.simulated import SimulatedSource, resolve_scenarios

    scenarios = resolve_scenarios(scenario, gpus)
    clock = ManualClock(start)
    source = SimulatedSource(scenarios, seed=seed, clock=clock)
    devices = source.open()
    detail = "scenarios: " + ", ".join(f"GPU{i} {s}" for i, s in enumerate(scenarios))
    warmup = []
    for _ in range(warmup_s):
        warmup.append(source.read())
        clock.advance(1.0)
    return make_app(
        source,
        devices,
        Config(),
        snapshot_dir=snapshot_dir,
        detail=detail,
        live=False,
        ascii=ascii,
        owns_process=owns_process,
        history=warmup,
        theme=theme,
    )


def make_replay_app(
    recording: Recording,
    *,
    speed: float = 1.0,
    start_s: float = 0.0,
    snapshot_dir: Path = Path("."),
    notices: Sequence[str] = (),
    name: str | None = None,
    owns_process: bool = False,
    theme: str = "dark",
) -> GpuTuiApp:
    """The app over a recording: the same screens and advisor, with replay keys. ``name``
    (the file's) shows in the header beside what the recording was taken from."""
    from gputui.sampling.replay_control import ReplayController
    from gputui.sources.recorded import ReplaySource

    header = recording.header
    source = ReplaySource([t.frame for t in recording.ticks], header.devices, header.interval_s)
    config = Config(interval_s=header.interval_s)
    taken_from = " · ".join(p for p in (header.source.label, header.source.detail) if p)
    detail = f"{name} ({taken_from})" if name else taken_from
    monitor = _monitor(header.devices, config, SourceInfo("REPLAY", SourceKind.REPLAY, detail))
    # the sampler plays at the replay's pace, which its speed keys change
    sampler = Sampler(source, lambda: replay.pace_s)
    replay = ReplayController(source, monitor, speed, sampler=sampler)
    notices = list(notices)
    first, last = source.start_time, source.end_time
    start_at = None
    if start_s > 0 and first is not None and last is not None:
        start_at = first + start_s
        if first + start_s > last:
            notices.append(
                f"--start {fmt_duration(start_s)} is past the end of the recording "
                f"({fmt_duration(last - first)} long): showing its last moment"
            )
    parts = AppParts(
        monitor,
        sampler=sampler,
        replay=replay,
        start_at=start_at,
        notices=tuple(notices),
        snapshot_dir=snapshot_dir,
        owns_process=owns_process,
        theme=theme,
    )
    return GpuTuiApp(parts)


def run_owned(app: GpuTuiApp) -> int:
    """Run an app that owns the process (the CLI's): its exit status, never 0 after a crash.

    SIGTERM and SIGHUP (an SSH drop) end it like ``q`` does, so the terminal is restored.
    """
    result = app.run()
    if app.panicked:  # Textual's panic leaves the return code at 0
        return max(1, app.return_code or 0)
    if isinstance(result, int):
        return result
    return app.return_code or 0


def run_app(
    source: Source,
    devices: Sequence[DeviceInfo],
    config: Config,
    *,
    snapshot_dir: Path = Path("."),
    detail: str | None = None,
    keep_secrets: bool = False,
    history: Sequence[Frame] = (),
    first: Sequence[Frame] = (),
    readonly: bool = False,
    theme: str = "dark",
) -> int:
    """The live app, owning the process; ``readonly``: it sends no signal; ``theme``: the
    one it starts in."""
    app = make_app(
        source,
        devices,
        config,
        snapshot_dir=snapshot_dir,
        detail=detail,
        keep_secrets=keep_secrets,
        owns_process=True,
        history=history,
        first=first,
        # Only a local source's PIDs are processes here: never a demo's, a recording's or a
        # remote node's.
        process_access=LocalProcesses() if source.kind is SourceKind.LIVE else None,
        readonly=readonly,
        theme=theme,
    )
    try:
        return run_owned(app)
    finally:
        # Close NVML only once no read is in flight (a hung driver call keeps the thread).
        if app.sampler is None or app.sampler.stop(timeout=2.0):
            source.close()
