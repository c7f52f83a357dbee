"""Textual's floor: a bare app, one Static with a row per GPU, nothing read and nothing
refreshed. Run in a plain interpreter (``python benchmarks/bare_app.py 8``) it is what any
Textual monitor costs before it does anything; vs_nvitop.py's harness runs it too."""

from __future__ import annotations

import sys


def run(gpus: int) -> int:
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    rows = "\n".join(f"bare {i} H100 80GB HBM3" for i in range(gpus))

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            yield Static(rows)

    Bare().run()
    return 0


if __name__ == "__main__":
    raise SystemExit(run(int(sys.argv[1]) if len(sys.argv) > 1 else 8))
