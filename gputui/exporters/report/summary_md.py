"""The report as a Markdown summary for a ticket (``gputui report --format md``): the
facts, the "where the time went" table, the worst stretches, the findings in time order.
Outside text is escaped for Markdown (``exporters.markdown.md``) and masked unless kept."""

from __future__ import annotations

from gputui.exporters.markdown import md
from gputui.exporters.report.accounting import CAUSES, Accounting, Cause
from gputui.exporters.report.charts import text
from gputui.exporters.report.run import Run
from gputui.exporters.report.summary import (
    METHOD,
    episode_head,
    episodes,
    facts,
    gpu_hours,
    pct,
    rows,
    stretch_line,
    worst,
)

#: findings listed in full; the rest are counted
MAX_FINDINGS = 50


def render_markdown(run: Run, accounting: Accounting, keep_secrets: bool = False) -> str:
    lines = [f"# gputui report: {md(text(run.origin, keep_secrets))}", ""]
    lines += [f"- {k}: {md(v)}" for k, v in facts(run, keep_secrets)]
    lines += ["", "## Where the time went", ""]
    lines += _table(run, accounting)
    lines += ["", "### Worst stretch of each cause", ""]
    found = [s for s in worst(accounting) if s.cause is not Cause.BUSY]
    lines += [f"- {md(stretch_line(run, s))}" for s in found] or ["- none"]
    listed = episodes(run)
    lines += ["", f"## Findings ({len(listed)})", ""]
    for episode in listed[:MAX_FINDINGS]:
        lines.append(f"- {md(episode_head(run, episode, keep_secrets))}")
        lines += [f"  - {md(text(e, keep_secrets))}" for e in episode.finding.evidence[:4]]
        if episode.finding.remedies:
            lines.append(f"  - what to do: {md(text(episode.finding.remedies[0], keep_secrets))}")
    if len(listed) > MAX_FINDINGS:
        lines.append(f"- and {len(listed) - MAX_FINDINGS} more (the HTML report lists all)")
    if not listed:
        lines.append("The advisor found nothing over the whole run.")
    lines += ["", "## How this is counted", "", md(METHOD)]
    lines += [f"- {md(n)}" for n in run.notices]
    return "\n".join(lines).rstrip() + "\n"


def _table(run: Run, accounting: Accounting) -> list[str]:
    head = "| GPU | " + " | ".join(c.label for c in CAUSES) + " |"
    rule = "|---" * (len(CAUSES) + 1) + "|"
    out = [head, rule]
    for row in rows(run, accounting):
        out.append(f"| {md(row.name)} | " + " | ".join(pct(row.account, c) for c in CAUSES) + " |")
    total = accounting.total
    out.append("| GPU-hours | " + " | ".join(gpu_hours(total.seconds[c]) for c in CAUSES) + " |")
    out.append(
        "| GPU-hours lost | "
        + " | ".join("-" if c is Cause.BUSY else gpu_hours(total.lost_s[c]) for c in CAUSES)
        + " |"
    )
    return out
