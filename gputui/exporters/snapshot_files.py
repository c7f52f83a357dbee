"""The app's snapshot key: the state as JSON, Markdown and a picture of the screen, and the
report of the history the app holds (HTML), written all four or none."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

from gputui.exporters.files import write_atomic
from gputui.exporters.markdown import markdown_report
from gputui.exporters.report import report_text, run_of_monitor
from gputui.formats.snapshot import dumps, snapshot_of
from gputui.sampling.monitor import Monitor


def save_snapshot(
    monitor: Monitor, directory: Path, screen_svg: Callable[[], str], keep_secrets: bool
) -> Path:
    """Write ``gputui-snapshot-<time>.{json,md,svg,report.html}`` in ``directory``; the
    base path.

    Raises OSError after removing what was already written: nothing half-saved is left."""
    frame = monitor.latest
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(frame.time if frame else time.time()))
    base = directory / f"gputui-snapshot-{stamp}"
    document = snapshot_of(monitor, keep_secrets=keep_secrets)
    outputs: tuple[tuple[Path, Callable[[], str]], ...] = (
        (base.with_suffix(".json"), lambda: dumps(document)),
        (base.with_suffix(".md"), lambda: markdown_report(document)),
        (base.with_suffix(".svg"), screen_svg),
        (base.parent / f"{base.name}.report.html", lambda: _report(monitor, keep_secrets)),
    )
    written: list[Path] = []
    try:
        for path, make in outputs:
            written.append(write_atomic(path, make()))
    except OSError:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()
        raise
    return base


def _report(monitor: Monitor, keep_secrets: bool) -> str:
    """The report of the history the app holds: its window, findings and processes."""
    minutes = monitor.config.history_s / 60.0
    origin = f"the app's history ({monitor.source.label}, up to {minutes:g} min)"
    return report_text(run_of_monitor(monitor, origin), "html", keep_secrets)
