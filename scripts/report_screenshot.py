"""Regenerate screenshots/report-*.png: the report of 30 minutes of the demo mix (4 GPUs,
1 s, a fixed clock), opened by headless Chromium with the network off: the answer and its
table, then the charts of the thermally throttled GPU.

Usage: python scripts/report_screenshot.py [OUTPUT_DIR]   (needs Debian's chromium)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gputui.cli.report import REPORT_MAX_TICKS  # noqa: E402
from gputui.exporters.report import report_text  # noqa: E402
from gputui.exporters.report.segments import judge_recording  # noqa: E402
from tests.browser import chromium, open_page  # noqa: E402
from tests.live_recording import record_live  # noqa: E402

START = 1_800_000_000.0
SECONDS = 30 * 60
#: the charts of the throttled GPU, scrolled into view
CHARTS = (
    "(function(){var b=document.querySelectorAll('#gpu-picker button')[1];b.click();"
    "document.getElementById('charts-title').scrollIntoView();return 1})()"
)


def report_html() -> str:
    """The report of a file recorded as ``gputui record`` records it: every tick with the
    findings its live advisor gave, reported as ``gputui report`` reports it."""
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "night-run.jsonl.gz"
        record_live(path, SECONDS)
        run = judge_recording(path, REPORT_MAX_TICKS)
    assert run is not None
    return report_text(run, "html")


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else ROOT / "screenshots"
    if chromium() is None:
        print("no chromium: apt-get install chromium", file=sys.stderr)
        return 1
    os.environ["TZ"] = "UTC"
    time.tzset()
    with tempfile.TemporaryDirectory() as work:
        page = Path(work) / "report.html"
        page.write_text(report_html())
        for name, checks in (("report-answer", {}), ("report-charts", {"scrolled": CHARTS})):
            result = open_page(page, checks, width=1300, height=1500)
            if result.requests or result.errors:
                print(f"{name}: {result.requests} {result.errors}", file=sys.stderr)
                return 1
            (out / f"{name}.png").write_bytes(result.screenshot)
            print(out / f"{name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
