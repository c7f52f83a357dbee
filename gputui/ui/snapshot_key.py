"""The ``s`` key: the current state to files (JSON, Markdown, the screen as SVG, and the
report of the history held, HTML)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gputui.ui.app import GpuTuiApp


class SnapshotKey:
    def __init__(self, app: GpuTuiApp) -> None:
        self._app = app

    def save(self) -> None:
        # the writers (JSON, Markdown, SVG, the HTML report) load on the first snapshot:
        # the first frame does not wait for them
        from gputui.exporters.snapshot_files import save_snapshot

        app = self._app
        try:
            base = save_snapshot(app.monitor, app.snapshot_dir, self._svg, app.keep_secrets)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            app.notify(
                f"Snapshot not saved: cannot write to {app.snapshot_dir}: {reason}",
                title="Snapshot failed",
                severity="error",
                timeout=8,
            )
            return
        where = base.parent.resolve()
        app.notify(
            f"{base.name}.json, .md, .svg and .report.html in {where}",
            title="Snapshot saved",
            timeout=6,
        )

    def _svg(self) -> str:
        """The screen as SVG for a file that travels: credentials masked, local fonts only."""
        from gputui.ui.svg import local_fonts_only

        app = self._app
        shown = app.choices
        app.choices = replace(shown, mask=not app.keep_secrets)
        try:
            app.redraw()
            svg = app.export_screenshot(title="gputui snapshot")
        finally:
            app.choices = shown
            app.redraw()
        return local_fonts_only(svg)
