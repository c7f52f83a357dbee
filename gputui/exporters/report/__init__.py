"""``gputui report``: a run (a recording, a Prometheus server's range, the app's history)
as an answer to "where did the GPU time go?", with the findings as a timeline and charts.

One module a job: ``run`` (the run in columns, and the advisor over it), ``accounting``
(every tick given to one cause), ``downsample`` (many ticks as few points, peaks kept),
``charts`` (the charts' data), ``summary`` (the words both surfaces share), ``page``
(the self-contained HTML file) and ``summary_md`` (the Markdown summary).
"""

from __future__ import annotations

from gputui.exporters.report.accounting import Accounting, Cause, account
from gputui.exporters.report.page import render
from gputui.exporters.report.run import (
    Collector,
    Run,
    recording_collector,
    recording_thresholds,
    report_thresholds,
    run_of_monitor,
)
from gputui.exporters.report.summary_md import render_markdown

FORMATS = ("html", "md")


def report_text(run: Run, fmt: str = "html", keep_secrets: bool = False) -> str:
    """The report of a run, as HTML or Markdown."""
    accounting = account(run)
    if fmt == "md":
        return render_markdown(run, accounting, keep_secrets)
    return render(run, accounting, keep_secrets)


__all__ = [
    "FORMATS",
    "Accounting",
    "Cause",
    "Collector",
    "Run",
    "account",
    "recording_collector",
    "recording_thresholds",
    "report_text",
    "report_thresholds",
    "run_of_monitor",
]
