"""Prose for the text surfaces (the doctor report, the Markdown report).

Word wrapping with a hanging indent, and honest words for how much history a report
covers. Core: imports nothing of gputui but ``units``.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate

from rich.cells import get_character_cell_size

from gputui.core.units import fmt_duration

#: below this many columns, wrapping stops helping: lines are laid out for this width
MIN_WIDTH = 32

#: ``gputui doctor``'s exit statuses and what each means: the one text behind its --help,
#: docs/advisor.md and the README's table
DOCTOR_EXITS: tuple[tuple[int, str], ...] = (
    (
        0,
        "everything that can be judged here was, and nothing was found (info lines and "
        "rules that do not apply to this board are context, not problems)",
    ),
    (1, "warnings"),
    (2, "critical findings"),
    (3, "no GPUs could be read"),
    (
        4,
        "nothing found so far, but not everything could be judged (too little history "
        "sampled, a reading that should be there and is not, such as no permission or a GPU "
        "that stopped answering, a source that cannot say, or a verdict that needs a longer "
        "watch than the run, such as a leak's growth or a hang: the report lists what)",
    ),
    (
        64,
        "the command line cannot run as given (an unknown option, a value out of range, no "
        "terminal for a screen): no verdict at all, whatever the node's state",
    ),
    (74, "the output could not be written (standard output closed, a full disk): no verdict"),
    (141, "the output's reader went away before it was all written (a pipe into head): no verdict"),
)


def hang(width: int, indent: int) -> int:
    """The indent continuation lines get: ``indent``, but never more than half the line."""
    return max(0, min(indent, width // 2))


def _anything(_word: str) -> bool:
    return True


#: words a number keeps on its line: '2 min 02 s' and '-31 %' never break before the unit
UNITS = frozenset(
    {"s", "ms", "min", "h", "%", "°C", "°F", "W", "MHz", "GHz", "GiB", "MiB", "KiB", "GB", "MB"}
)


def starts_no_unit(word: str) -> bool:
    """False for a unit ('s', '%),', 'GiB'): a line should not start with one."""
    return word.rstrip(",.;:)") not in UNITS


def spans(
    text: str,
    width: int,
    indent: int = 0,
    *,
    may_start: Callable[[str], bool] = _anything,
    cut_long_words: bool = True,
) -> list[tuple[int, int]]:
    """Where to cut ``text`` into lines: ``(start, end)`` slices, in order.

    The first line holds at most ``width`` cells; each later one at most ``width`` less
    ``hang(width, indent)``, since it is printed after that many spaces. Lines break at
    spaces, never inside the first ``indent`` cells (the bullet or label the continuation
    lines up under); the spaces at a break belong to no line, so no line ends with one and
    no continuation starts with one. A word that ``may_start`` refuses stays at the end of
    the line before. A word longer than a line is cut when ``cut_long_words``, else it
    runs past the width (a cut would change Markdown's text).
    """
    n = len(text)
    cum = [0, *accumulate(get_character_cell_size(c) for c in text)]
    width = max(width, 1)
    rest = max(1, width - hang(width, indent))
    lines: list[tuple[int, int]] = []
    pos, avail, floor = 0, width, indent  # the first line keeps its leading spaces
    while pos < n:
        if cum[n] - cum[pos] <= avail:
            end = n
        else:
            end = _break(text, cum, pos, avail, floor, may_start, cut_long_words)
        stop = end
        while stop > pos and text[stop - 1] == " ":
            stop -= 1
        lines.append((pos, stop))
        pos = end
        while pos < n and text[pos] == " ":
            pos += 1
        avail, floor = rest, 0
    return lines or [(0, 0)]


def _break(
    text: str,
    cum: list[int],
    pos: int,
    avail: int,
    floor: int,
    may_start: Callable[[str], bool],
    cut_long_words: bool,
) -> int:
    """Where the line that starts at ``pos`` ends (the index of a space, or a cut)."""
    n = len(text)

    def allowed(i: int) -> bool:
        """A break at the space ``i``: after some text past the label, before a word that
        may start a line."""
        if text[i] != " " or text[i - 1] == " " or i <= pos + floor:
            return False
        if not text[pos + floor : i].strip():
            return False
        j = i
        while j < n and text[j] == " ":
            j += 1
        if j == n:
            return False
        k = text.find(" ", j)
        return may_start(text[j : n if k < 0 else k])

    best = None
    i = pos + 1
    while i < n and cum[i] - cum[pos] <= avail:
        if allowed(i):
            best = i
        i += 1
    if best is not None:
        return best
    if cut_long_words:
        i = pos + 1  # as much of the long word as fits, at least one character
        while i < n and cum[i + 1] - cum[pos] <= avail:
            i += 1
        return i
    for i in range(pos + 1, n):  # the first break there is, past the width
        if allowed(i):
            return i
    return n


def wrap(
    text: str,
    width: int,
    indent: int = 0,
    *,
    may_start: Callable[[str], bool] = _anything,
    cut_long_words: bool = True,
) -> list[str]:
    """``text`` as lines of at most ``width`` cells, each after the first starting with
    ``hang(width, indent)`` spaces; no line ends with a space."""
    prefix = " " * hang(width, indent)
    return [
        (prefix if i else "") + text[a:b]
        for i, (a, b) in enumerate(
            spans(text, width, indent, may_start=may_start, cut_long_words=cut_long_words)
        )
    ]


def simulated_span(total_s: float, warmup_s: float) -> str:
    """What a demo's history covers, without calling it sampled: the demo steps a simulated
    clock through ``--warmup`` seconds and then the seconds asked for, all at once.

    'simulated 2 s after 2 min 00 s of simulated warm-up (demo: nothing sampled live)'.
    """
    warm = min(max(warmup_s, 0.0), max(total_s, 0.0))
    window = max(total_s, 0.0) - warm
    if round(warm) == 0:
        body = f"simulated {fmt_duration(window)}"
    elif round(window) == 0:
        body = f"simulated {fmt_duration(warm)} of warm-up"
    else:
        body = f"simulated {fmt_duration(window)} after {fmt_duration(warm)} of simulated warm-up"
    return f"{body} (demo: nothing sampled live)"
