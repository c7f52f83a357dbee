"""The rule catalogue as a document: docs/advisor.md is this module's output."""

from __future__ import annotations

import dataclasses
import textwrap

from gputui.advisor import RULES, Rule
from gputui.advisor.coverage import WORDS
from gputui.advisor.promrules import ENGINE_NOTES, Terms, engine, not_in_engine
from gputui.advisor.rule import ARTICLE_CAUSES
from gputui.core.config import Thresholds
from gputui.core.prose import DOCTOR_EXITS
from gputui.core.xid import XIDS

_INTRO = """# The advisor's rule catalogue

{ARTICLE}

Every finding has a rule id, a severity (info / warning / critical), the GPU (or the host),
the evidence as numbers, and remedies as text: gputui never changes a GPU setting.

Calm by design: a finding starts only after its condition held for `start_after_s` and ends
only after it stopped for `end_after_s`. Rules marked "under load" look only at GPUs whose
mean utilisation over the window is at least `busy_util_pct`, so an idle GPU (link at Gen1,
low clocks, idle reason) raises nothing. A rule that lacks a reading (not supported on this
board) stays silent instead of guessing. The rules judge every `judge_every_s` of frame time
(each tick when the refresh is slower), since their windows are tens of seconds long; a
lost GPU is judged at once.

Honest about what it saw: every rule declares the history it needs and the readings it
cannot do without (the "needs" column). Until every rule has had its window (`window_s`) the
screen, `doctor` and `snapshot` say "still judging: 18 s to go" and never "nothing slows
these GPUs down". A rule without a reading is one of three things, each listed: **not
judged** when the reading should be there and is not (no permission, a GPU that stopped
answering, a source that cannot say); **not applicable** when the board, driver or machine
does not offer it at all (NVML's NotSupported, a NUMA node of -1: the rule does not apply,
calmly); **watching** when the verdict needs a longer stretch than was sampled (an
allocation idle for 5 minutes, memory growing for less than its growth window, ranks
waiting in a collective for less than a hang takes): no all-clear then, and `doctor`
exits 4. Evidence names the window actually sampled ("over the last
42 s"), never the configured one when less was seen, and never more time held than the
window it is measured over. Without a utilisation reading (MIG mode) "under load" is read
from the SM activity or the power draw (>= `busy_power_share` of the limit), and the
evidence says so. `gputui doctor` is a point-in-time test over 30 s by default: a condition
that held through the whole sampled window counts even when the window is shorter than the
live hold; one finding on several GPUs is one block ("GPUs 0-3"), the verdict line first.

This page is generated from the code (`python -m gputui.advisor.catalogue`); a test keeps
it in step.
"""


def _needs(rule: Rule, t: Thresholds) -> str:
    seconds = rule.history_needed_s(t)
    history = f"{seconds:g} s of history" if seconds else "judged at once"
    readings = ", ".join(
        " or ".join(dict.fromkeys(WORDS.get(n, n) for n in need.split("|"))) for need in rule.needs
    )
    return f"{history}; {readings}" if readings else history


def catalogue_markdown(thresholds: Thresholds | None = None) -> str:
    t = thresholds or Thresholds()
    article = textwrap.fill(
        "gputui's advisor reads the recent history of every GPU (and the host) and names "
        f"the causes of slow training from the article behind this project: {ARTICLE_CAUSES}; "
        "plus power limits, hardware errors and stragglers. A rule's cause begins with that "
        "number.",
        width=91,
    )
    lines = [_INTRO.replace("{ARTICLE}", article)]
    lines += ["## Exit status of `gputui doctor`", "", "| status | meaning |", "|---|---|"]
    lines += [f"| {status} | {meaning} |" for status, meaning in DOCTOR_EXITS]
    lines += ["", "## Rules", ""]
    lines.append("| id | cause | reads | needs | fires when | never claims | suggests |")
    lines.append("|---|---|---|---|---|---|---|")
    for rule in RULES:
        lines.append(
            f"| `{rule.id}` | {rule.cause} | {rule.what_it_reads(t)} | {_needs(rule, t)} "
            f"| {rule.when_it_fires(t)} | {rule.what_it_never_claims(t) or '—'} "
            f"| {rule.suggests} |"
        )
    lines += _engine_section()
    lines += ["", "## Xid errors by class (`gpu-errors`)", ""]
    lines.append(
        "From NVIDIA's public Xid catalogue. The class says whose problem an Xid usually is; "
        "an application Xid points at the program, never at draining the node. An Xid not "
        "listed is checked as hardware (warning) rather than ignored."
    )
    lines += ["", "| Xid | meaning | class | severity | first remedy |", "|---|---|---|---|---|"]
    for code, xid in sorted(XIDS.items()):
        first = xid.remedies[0].replace("{gpu}", "N")
        lines.append(f"| {code} | {xid.meaning} | {xid.origin} | {xid.level} | {first} |")
    lines += ["", "## Thresholds (defaults, in `gputui/core/config.py`)", ""]
    lines.append("| name | default |")
    lines.append("|---|---|")
    for field in dataclasses.fields(t):
        lines.append(f"| `{field.name}` | {getattr(t, field.name)} |")
    return "\n".join(lines) + "\n"


#: the scrape interval the engine section is written for (`gputui rules`' default)
ENGINE_SCRAPE_S = 30.0


def _engine_section() -> list[str]:
    """Rule by rule, live and in the engine: the alerts `gputui rules` writes for each, how
    they differ from the live rule, or why the engine has none."""
    terms = Terms(ENGINE_SCRAPE_S)
    found = engine(terms)
    alerts = {a.name: a for a in found.alerts}
    by_rule = found.by_rule()
    lines = ["", "## Live and in the engine (`gputui rules`)", ""]
    lines.append(
        "`gputui rules` writes the rules below as Prometheus recording and alerting rules "
        "over dcgm-exporter's metrics (docs/alerting.md), with the same thresholds and the "
        "live rules' windows and holds stretched to the scrape interval (here "
        f"{ENGINE_SCRAPE_S:g} s, the default: windows of {terms.window:g} s, an alert held "
        f"for one scrape at least). The live advisor judges every rule its source feeds; "
        "the engine judges those dcgm-exporter's metrics can express, for every GPU, all the "
        "time, and Alertmanager routes what it finds."
    )
    lines += ["", "| id | in the engine | how it differs from the live rule |", "|---|---|---|"]
    missing = not_in_engine(RULES, by_rule)
    for rule in RULES:
        names = by_rule.get(rule.id)
        if names is None:
            lines.append(f"| `{rule.id}` | — | not in the engine: {missing[rule.id]} |")
            continue
        said = ", ".join(f"`{n}` ({alerts[n].severity})" for n in names)
        lines.append(f"| `{rule.id}` | {said} | {ENGINE_NOTES.get(rule.id, 'as live')} |")
    return lines


if __name__ == "__main__":
    print(catalogue_markdown(), end="")
