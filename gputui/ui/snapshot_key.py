"""The ``s`` key: the current state to files (JSON, Markdown, and the screen as SVG)."""

from __future__ import annotations

from dataclasses import replace

from gputui.exporters.snapshot_files import save_snapshot
from gputui.ui.shell import Shell
from gputui.ui.svg import local_fonts_only


class SnapshotKey(Shell):
    def action_snapshot(self) -> None:
        try:
            base = save_snapshot(
                self.monitor, self.snapshot_dir, self._screenshot_for_a_file, self.keep_secrets
            )
        except OSError as exc:
            reason = exc.strerror or str(exc)
            self.notify(
                f"Snapshot not saved: cannot write to {self.snapshot_dir}: {reason}",
                title="Snapshot failed",
                severity="error",
                timeout=8,
            )
            return
        self.notify(f"{base}.json (+ .md, .svg)", title="Snapshot saved", timeout=6)

    def _screenshot_for_a_file(self) -> str:
        """The screen as SVG for a file that travels: credentials masked, local fonts only."""
        shown = self.choices
        self.choices = replace(shown, mask=not self.keep_secrets)
        try:
            self.redraw()
            svg = self.export_screenshot(title="gputui snapshot")
        finally:
            self.choices = shown
            self.redraw()
        return local_fonts_only(svg)
