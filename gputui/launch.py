"""The app factory: one function builds the app for the CLI, the tests and the screenshots."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gputui.clocks import ManualClock
from gputui.config import Config
from gputui.exporters.snapshot import SourceInfo
from gputui.model import DeviceInfo
from gputui.monitor import Monitor
from gputui.sampler import Sampler
from gputui.sources.base import Source
from gputui.sources.replay import ReplaySource
from gputui.ui.app import FrameReady, GpuTuiApp, SampleFailed


def make_app(
    source: Source,
    devices: Sequence[DeviceInfo],
    config: Config,
    *,
    snapshot_dir: Path = Path("."),
    detail: str | None = None,
    live: bool = True,
) -> GpuTuiApp:
    """The app over ``source``. With ``live=False`` no sampler runs: the caller feeds frames."""
    monitor = Monitor(devices, config, SourceInfo(source.label, source.kind, detail))
    app = GpuTuiApp(monitor, snapshot_dir=snapshot_dir)
    if live:
        app.sampler = Sampler(
            source,
            config.interval_s,
            on_frame=lambda frame: app.post_message(FrameReady(frame)),
            on_error=lambda exc: app.post_message(SampleFailed(f"{type(exc).__name__}: {exc}")),
        )
    return app


def make_demo_app(
    scenario: str | None = None,
    gpus: int = 4,
    *,
    seed: int = 0,
    warmup_s: int = 120,
    start: float = 1_800_000_000.0,
    snapshot_dir: Path = Path("."),
) -> GpuTuiApp:
    """A frozen demo on a fixed clock: the same screen on every machine (tests, screenshots)."""
    from gputui.sources.simulated import SimulatedSource, resolve_scenarios

    scenarios = resolve_scenarios(scenario, gpus)
    clock = ManualClock(start)
    source = SimulatedSource(scenarios, seed=seed, clock=clock)
    devices = source.open()
    detail = "scenarios: " + ", ".join(f"GPU{i} {s}" for i, s in enumerate(scenarios))
    app = make_app(source, devices, Config(), snapshot_dir=snapshot_dir, detail=detail, live=False)
    for _ in range(warmup_s):
        app.monitor.ingest(source.read())
        clock.advance(1.0)
    return app


def run_replay(
    source: ReplaySource,
    *,
    speed: float = 1.0,
    start_s: float = 0.0,
    snapshot_dir: Path = Path("."),
    notices: Sequence[str] = (),
) -> int:
    """The app over a recording: the same screens and advisor, with replay keys."""
    header = source.recording.header
    config = Config(interval_s=max(0.05, header.interval_s / speed))
    app = make_app(
        source,
        header.devices,
        config,
        snapshot_dir=snapshot_dir,
        detail=header.source.detail,
    )
    app.replay = source
    app.speed = speed
    app.monitor.source = SourceInfo("REPLAY", "replay", header.source.label)
    if start_s > 0 and source.start_time is not None:
        app.start_at = source.start_time + start_s
    app.pending_notices = list(notices)
    app.freeze_startup_heap = True
    app.run()
    return 0


def run_app(
    source: Source,
    devices: Sequence[DeviceInfo],
    config: Config,
    *,
    snapshot_dir: Path = Path("."),
    detail: str | None = None,
) -> int:
    app = make_app(source, devices, config, snapshot_dir=snapshot_dir, detail=detail)
    app.freeze_startup_heap = True
    try:
        result = app.run()
    finally:
        # Close NVML only once no read is in flight (a hung driver call keeps the thread).
        if app.sampler is None or app.sampler.stop(timeout=2.0):
            source.close()
    return result if isinstance(result, int) else 0
