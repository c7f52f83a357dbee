"""The app's snapshot key: the state as JSON, Markdown and a picture of the screen, and the
report of the history the app holds (HTML), written all four or none."""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from gputui.exporters.files import write_atomic
from gputui.exporters.markdown import markdown_report
from gputui.exporters.report import report_text, run_of_monitor
from gputui.formats.snapshot import dumps, snapshot_of
from gputui.sampling.monitor import Monitor

#: snapshots taken under one name at most (one second's, or a paused screen's)
MAX_SAME_NAME = 1000
#: the files of one snapshot: a name with any of them is taken (a JSON file of the
#: command's beside the app's Markdown would read as one snapshot)
SUFFIXES = (".json", ".md", ".svg", ".report.html")


def save_snapshot(
    monitor: Monitor, directory: Path, screen_svg: Callable[[], str], keep_secrets: bool
) -> Path:
    """Write ``gputui-snapshot-<time>.{json,md,svg,report.html}`` in ``directory``, under a
    name of its own (``unique_files``); the base path.

    Raises OSError after removing what was already written: nothing half-saved is left."""
    document = snapshot_of(monitor, keep_secrets=keep_secrets)
    texts = (
        (".json", dumps(document)),
        (".md", markdown_report(document)),
        (".svg", screen_svg()),
        (".report.html", _report(monitor, keep_secrets)),
    )
    return unique_files(directory, snapshot_stem(monitor), texts)


def snapshot_stem(monitor: Monitor) -> str:
    """'gputui-snapshot-20261205-171200': the time of the latest frame (now without one)."""
    frame = monitor.latest
    when = time.localtime(frame.time if frame else time.time())
    return f"gputui-snapshot-{time.strftime('%Y%m%d-%H%M%S', when)}"


def unique_files(directory: Path, stem: str, texts: Sequence[tuple[str, str]]) -> Path:
    """Each ``(suffix, text)`` written as ``directory/<name><suffix>``, all or none, under
    a name no snapshot file has yet (``SUFFIXES``): ``stem``, else ``stem-2``,
    ``stem-3``...; the base path. An earlier file is never replaced: two snapshots in one
    second, or of a paused screen (whose frame time stands still), get two names.

    Raises OSError after removing what was already written."""
    suffixes = {*SUFFIXES, *(suffix for suffix, _text in texts)}
    for number in range(1, MAX_SAME_NAME + 1):
        base = directory / (stem if number == 1 else f"{stem}-{number}")
        if any(os.path.lexists(f"{base}{suffix}") for suffix in suffixes):
            continue
        written: list[Path] = []
        try:
            for suffix, text in texts:
                path = base.parent / f"{base.name}{suffix}"
                written.append(write_atomic(path, text, replace=False))
        except OSError as exc:
            for path in written:
                with contextlib.suppress(OSError):
                    path.unlink()
            if isinstance(exc, FileExistsError):
                continue  # that name is taken: the next one
            raise
        return base
    raise FileExistsError(
        errno.EEXIST, f"{MAX_SAME_NAME} snapshots named {stem} already", str(directory)
    )


def _report(monitor: Monitor, keep_secrets: bool) -> str:
    """The report of the history the app holds: its window, findings and processes."""
    minutes = monitor.config.history_s / 60.0
    origin = f"the app's history ({monitor.source.label}, up to {minutes:g} min)"
    return report_text(run_of_monitor(monitor, origin), "html", keep_secrets)
