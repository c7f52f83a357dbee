"""The report as one self-contained HTML file: the answer first (where the time went), the
charts, then the findings as a timeline. Scripts, styles and data are inlined; a Content
Security Policy forbids the page any request, so it opens the same from a mail attachment
on an air-gapped laptop. uPlot (MIT, vendored in ``assets/``) draws the charts.

Every piece of outside text is escaped for HTML here (``esc``), and sits in the data only
as JSON that the script sets with ``textContent``; credentials are masked unless kept.
"""

from __future__ import annotations

import json
from html import escape
from importlib import resources
from typing import Any, Final

from gputui.core.model import finding_order
from gputui.core.names import RuleId
from gputui.core.units import fmt_duration
from gputui.exporters.report.accounting import CAUSES, Accounting, Cause
from gputui.exporters.report.charts import payload, text
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
    when,
    worst,
)
from gputui.sampling.runlog import Episode

#: nothing leaves the page: no fetch, no image, no font, no frame, no form
CSP: Final = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def _asset(name: str) -> str:
    return (resources.files("gputui.exporters.report") / "assets" / name).read_text("utf-8")


def script_json(value: Any) -> str:
    """JSON that cannot end its <script> element or open a comment, whatever it holds."""
    raw = json.dumps(value, allow_nan=False, separators=(",", ":"))
    return raw.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _inline_script(source: str) -> str:
    if "</script" in source.lower():  # a vendored file must not end its own element
        raise ValueError("a script asset holds </script")
    return source


def render(run: Run, accounting: Accounting, keep_secrets: bool = False) -> str:
    title = f"gputui report: {text(run.origin, keep_secrets)}"
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title>",
        f"<style>{_asset('uPlot.min.css')}\n{_asset('report.css')}</style>",
        "</head><body>",
        f"<h1>{esc(title)}</h1>",
        _facts(run, keep_secrets),
        _answer(run, accounting),
        _table(run, accounting),
        _worst(run, accounting),
        _charts(),
        _timeline(run, keep_secrets),
        _notes(run),
        f'<script type="application/json" id="gputui-data">'
        f"{script_json(payload(run, accounting, keep_secrets))}</script>",
        f"<script>{_inline_script(_asset('uPlot.iife.min.js'))}</script>",
        f"<script>{_inline_script(_asset('report.js'))}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _facts(run: Run, keep_secrets: bool) -> str:
    items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts(run, keep_secrets))
    return f'<dl class="facts">{items}</dl>'


def _answer(run: Run, accounting: Accounting) -> str:
    """The one-paragraph answer: how much was lost, and to what."""
    total = accounting.total
    lost = sum(total.lost_s[c] for c in CAUSES if c is not Cause.NOT_RUNNING)
    notices = "".join(f"<li>{esc(n)}</li>" for n in run.notices)
    said = f'<ul class="notices">{notices}</ul>' if notices else ""
    if total.wall_s <= 0:
        return (
            "<h2>Where the time went</h2>"
            f'<p class="answer">The run is too short to account for (one tick).</p>{said}'
        )
    causes = sorted(
        (c for c in CAUSES if c not in (Cause.BUSY, Cause.NOT_RUNNING) and total.lost_s[c] > 0),
        key=lambda c: -total.lost_s[c],
    )
    named = ", ".join(f"{c.label} {gpu_hours(total.lost_s[c])} GPU-h" for c in causes[:3])
    busy = pct(total, Cause.BUSY) if total.seconds[Cause.BUSY] > 0 else "none"
    sentence = f"Busy and unthrottled: {busy} of the GPU time. " + (
        f"{gpu_hours(lost)} GPU-hours lost to what the advisor found: {named}."
        if causes
        else "Nothing the advisor found cost GPU time."
    )
    if total.seconds[Cause.NOT_RUNNING] > 0:
        sentence += f" Not running: {pct(total, Cause.NOT_RUNNING)}."
    return f'<h2>Where the time went</h2><p class="answer">{esc(sentence)}</p>{said}'


def _bar(account: Any) -> str:
    spans = "".join(
        f'<span class="c-{c.value}" style="width:{100 * account.share(c):.3f}%" '
        f'title="{esc(c.label)} {esc(pct(account, c))}"></span>'
        for c in CAUSES
        if account.seconds[c] > 0
    )
    return f'<div class="bar">{spans}</div>'


def _table(run: Run, accounting: Accounting) -> str:
    head = "".join(
        f'<th><span class="swatch c-{c.value}"></span>{esc(c.label)}</th>' for c in CAUSES
    )
    body = []
    listed = rows(run, accounting)
    for k, row in enumerate(listed):
        cls = ' class="total"' if len(listed) > 1 and k == len(listed) - 1 else ""
        cells = "".join(f"<td>{esc(pct(row.account, c))}</td>" for c in CAUSES)
        body.append(f"<tr{cls}><td>{esc(row.name)}{_bar(row.account)}</td>{cells}</tr>")
    lost = "".join(
        f"<td>{esc(gpu_hours(accounting.total.lost_s[c]))}</td>"
        if c is not Cause.BUSY
        else "<td>-</td>"
        for c in CAUSES
    )
    hours = "".join(f"<td>{esc(gpu_hours(accounting.total.seconds[c]))}</td>" for c in CAUSES)
    return (
        '<h3>Share of wall time, per GPU</h3><div class="scroll"><table><thead><tr><th>GPU</th>'
        f"{head}</tr></thead><tbody>{''.join(body)}"
        f'<tr class="total"><td>GPU-hours</td>{hours}</tr>'
        f"<tr><td>GPU-hours lost</td>{lost}</tr></tbody></table></div>"
    )


def _worst(run: Run, accounting: Accounting) -> str:
    items = [
        f'<li><a href="#charts" data-zoom-gpu="{s.gpu}" data-from="{s.start}" '
        f'data-to="{s.end}">{esc(stretch_line(run, s))}</a></li>'
        for s in worst(accounting)
        if s.cause is not Cause.BUSY
    ]
    if not items:
        return "<h3>Worst stretches</h3><p>None: no time went to a cause.</p>"
    return f'<h3>Worst stretch of each cause</h3><ul class="worst">{"".join(items)}</ul>'


def _charts() -> str:
    return (
        '<h2 id="charts-title">Charts</h2><p class="hint">One time axis for every chart: '
        "drag across a chart to zoom, double-click to zoom out; the cursor follows on "
        "all of them. Findings are shaded behind the lines (blue info, orange warning, red "
        "critical); dashed lines are the board's limits. The lane on top shows where each "
        "moment's time went and which process ran. Each point pair is a time bucket's "
        'lowest and highest reading: no peak is lost.</p><div id="gpu-picker"></div>'
        '<div id="charts"></div>'
    )


#: a finding's stretches listed in words, and drawn on its bar, at most (the longest)
MAX_LISTED: Final = 12
MAX_DRAWN: Final = 300


def _group(run: Run, listed: list[Episode], keep_secrets: bool) -> str:
    """One finding (a rule on a GPU) over the run: how often and how long it was shown,
    every stretch on a bar, the longest in words, and the evidence and remedies of the
    longest as last judged. Bounded however often a finding came and went."""
    longest = max(listed, key=lambda e: (e.until - e.since, -e.since))
    f = longest.finding
    worst_ = min(listed, key=lambda e: finding_order(e.finding)).finding
    span = max(run.end - run.start, 1e-9)
    drawn = sorted(listed, key=lambda e: e.since - e.until)[:MAX_DRAWN]
    bars = "".join(
        f'<span style="left:{100 * (e.since - run.start) / span:.3f}%;'
        f'width:{100 * (e.until - e.since) / span:.3f}%"></span>'
        for e in drawn
    )
    if len(listed) == 1:
        head = episode_head(run, longest, keep_secrets)
        times = ""
    else:
        total = sum(e.until - e.since for e in listed)
        head = (
            f"{f.rule}: {text(f.title, keep_secrets)} · {worst_.severity} · shown "
            f"{len(listed)} times, {fmt_duration(total)} in all, from "
            f"{when(run, listed[0].since)} to {when(run, max(e.until for e in listed))}"
        )
        shown = sorted(drawn[:MAX_LISTED], key=lambda e: e.since)
        items = "".join(f"<li>{esc(_stretch_of(run, e))}</li>" for e in shown)
        more = len(listed) - len(shown)
        extra = f"<li>and {more} shorter</li>" if more > 0 else ""
        times = f"<b>The longest stretches</b><ul>{items}{extra}</ul>"
    evidence = "".join(f"<li>{esc(text(e, keep_secrets))}</li>" for e in f.evidence)
    remedies = "".join(f"<li>{esc(text(r, keep_secrets))}</li>" for r in f.remedies)
    zoom = (
        f' <a href="#charts" data-zoom-gpu="{f.gpu}" data-from="{longest.since}" '
        f'data-to="{longest.until}">show the longest on the charts</a>'
        if f.gpu is not None
        else ""
    )
    return (
        f'<details class="{esc(worst_.severity.value)}"><summary>{esc(head)}</summary>'
        f'<div class="when">{bars}</div>{times}'
        f"<b>Evidence</b> (the longest stretch, as last judged){zoom}<ul>{evidence}</ul>"
        f"<b>What to do</b><ul>{remedies}</ul></details>"
    )


def _stretch_of(run: Run, episode: Episode) -> str:
    return (
        f"{when(run, episode.since)} to {when(run, episode.until)} "
        f"({fmt_duration(episode.until - episode.since)})"
    )


def _timeline(run: Run, keep_secrets: bool) -> str:
    listed = episodes(run)
    if not listed:
        return "<h2>Findings</h2><p>The advisor found nothing over the whole run.</p>"
    groups: dict[int | None, dict[RuleId, list[Episode]]] = {}
    for episode in listed:
        f = episode.finding
        groups.setdefault(f.gpu, {}).setdefault(f.rule, []).append(episode)
    count = sum(len(rules) for rules in groups.values())
    parts = [
        f"<h2>Findings ({count}, shown {len(listed)} times)</h2>",
        '<div class="timeline">',
    ]
    for gpu in sorted(groups, key=lambda g: (g is None, g or 0)):
        parts.append(f"<h3>{'The host' if gpu is None else f'GPU {gpu}'}</h3>")
        for rule_episodes in groups[gpu].values():  # in the order each was first shown
            parts.append(_group(run, rule_episodes, keep_secrets))
    parts.append("</div>")
    return "".join(parts)


def _notes(run: Run) -> str:
    return f'<h2>How this is counted</h2><p class="notes">{esc(METHOD)}</p>'
