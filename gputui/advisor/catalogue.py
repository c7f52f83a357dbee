"""The rule catalogue as a document: docs/advisor.md is this module's output."""

from __future__ import annotations

import dataclasses

from gputui.advisor import RULES, Rule
from gputui.advisor.coverage import WORDS
from gputui.config import Thresholds

_INTRO = """# The advisor's rule catalogue

gputui's advisor reads the recent history of every GPU (and the host) and names the causes
of slow training from the article behind this project: (1) thermal throttling, (2) VRAM
exhaustion, (3) CUDA / driver configuration, (4) PCIe bandwidth, (5) the software stack
(data loaders, the GIL, I/O); plus power limits, hardware errors and stragglers.

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
cannot do without (the "needs" column). Until a GPU has that history the screen, `doctor`
and `snapshot` say "gathering: 4 s of 10 s" instead of "no findings"; a rule that lacks a
reading (not supported on this board, MIG mode, a remote source) or could not decide is
listed as "not judged: <what is missing>", and the GPU shows that instead of "✓ ok".
Evidence names the window actually sampled ("over the last 42 s"), never the configured
one when less was seen. Without a utilisation reading (MIG mode) "under load" is read from
the SM activity or the power draw (>= `busy_power_share` of the limit), and the evidence
says so. `gputui doctor` is a point-in-time test: a condition that held through the whole
sampled window counts even when the window is shorter than the live hold. Its exit
status: 0 everything was judged and nothing was found (info lines are context), 1
warnings, 2 critical findings, 3 no GPUs could be read, 4 nothing found so far but not
everything was judged.

This page is generated from the code (`python -m gputui.advisor.catalogue`); a test keeps
it in step.

## Rules
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
    lines = [_INTRO]
    lines.append("| id | cause | reads | needs | fires when | never claims | suggests |")
    lines.append("|---|---|---|---|---|---|---|")
    for rule in RULES:
        lines.append(
            f"| `{rule.id}` | {rule.cause} | {rule.what_it_reads(t)} | {_needs(rule, t)} "
            f"| {rule.when_it_fires(t)} | {rule.what_it_never_claims(t) or '—'} "
            f"| {rule.suggests} |"
        )
    lines += ["", "## Thresholds (defaults, in `gputui/config.py`)", ""]
    lines.append("| name | default |")
    lines.append("|---|---|")
    for field in dataclasses.fields(t):
        lines.append(f"| `{field.name}` | {getattr(t, field.name)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(catalogue_markdown(), end="")
