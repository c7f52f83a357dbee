"""The ``s`` key: the current state to files (JSON, Markdown, the screen as SVG, and the
report of the history held, HTML), and what the user is told of it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gputui.sampling.monitor import Monitor
from gputui.view.effects import Notify


def save(monitor: Monitor, directory: Path, svg: Callable[[], str], keep_secrets: bool) -> Notify:
    """Write the snapshot's files into ``directory``; ``svg`` draws the screen (credentials
    masked unless ``keep_secrets``)."""
    # the writers (JSON, Markdown, SVG, the HTML report) load on the first snapshot: the
    # first frame does not wait for them
    from gputui.exporters.snapshot_files import save_snapshot

    try:
        base = save_snapshot(monitor, directory, svg, keep_secrets)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return Notify(
            f"Snapshot not saved: cannot write to {directory}: {reason}",
            title="Snapshot failed",
            tone="error",
            timeout=8,
        )
    where = base.parent.resolve()
    return Notify(
        f"{base.name}.json, .md, .svg and .report.html in {where}",
        title="Snapshot saved",
        timeout=6,
    )
