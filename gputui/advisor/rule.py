"""A rule of the catalogue: its documentation and the function that checks it."""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable
from typing import Any

from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate
from gputui.core.config import Thresholds
from gputui.core.names import RuleId
from gputui.core.records import frozen

Check = Callable[[Context], Iterable[Candidate]]

#: the causes of slow training the article behind gputui names, by the number a rule's
#: ``cause`` begins with ("1 thermal", "3 configuration")
ARTICLE_CAUSES = (
    "(1) thermal throttling, (2) VRAM exhaustion, (3) CUDA / driver configuration, "
    "(4) PCIe bandwidth, (5) the software stack (data loaders, the GIL, I/O)"
)


@frozen
class Rule:
    """One cause the advisor recognises: its prose and the function that judges it.

    ``reads`` and ``fires_when`` are templates over the thresholds (``{t.window_s:g}``):
    the numbers in the prose are the ones the rule uses, whatever the config says. A rule
    is added to ``advisor.catalogue.CATALOGUE``; docs/advisor.md is generated from it.

    Args:
        id: its name (``core.names.RuleId``), in findings, files and the engine's rules.
        cause: the article's cause it belongs to, its number first (``ARTICLE_CAUSES``).
        reads: what it reads, in words.
        fires_when: when it fires, with the numbers it uses.
        suggests: what its remedies say.
        check: the judgement: given a ``Context`` (the history, the devices, the newest
            frame, the thresholds), the ``Candidate`` findings that hold now, each with
            its evidence as numbers in sentences and its remedies; nothing where all is
            well. It reads, never writes, and decides on values, never on its own prose.
    """

    id: RuleId
    cause: str  # the source article's cause it belongs to (its number: ARTICLE_CAUSES)
    reads: str
    fires_when: str
    suggests: str
    check: Check
    #: the ``Thresholds`` field that says how much history the rule needs before "nothing
    #: found" means anything (its window, by default); "" for rules over static facts and
    #: states, judged at once
    needs_history: str = "window_s"
    #: readings without which it cannot judge (a GpuSample or DeviceInfo field; "host.x" a
    #: HostSample field); "a|b" is either. Missing ones make it "not judged" on that GPU.
    needs: tuple[str, ...] = ()
    #: what the rule never claims (template over the thresholds, like ``reads``)
    never_claims: str = ""

    def what_it_reads(self, t: Thresholds) -> str:
        return _PROSE.format(self.reads, t=t)

    def when_it_fires(self, t: Thresholds) -> str:
        return _PROSE.format(self.fires_when, t=t)

    def history_needed_s(self, t: Thresholds) -> float:
        return float(getattr(t, self.needs_history)) if self.needs_history else 0.0

    def what_it_never_claims(self, t: Thresholds) -> str:
        return _PROSE.format(self.never_claims, t=t)


class _Prose(string.Formatter):
    """Format specs for numbers in words: ``share`` (0.3 -> "30 %"), ``gib``, ``mbps``."""

    def format_field(self, value: Any, format_spec: str) -> str:
        if format_spec == "share":
            return f"{value * 100:g} %"
        if format_spec == "gib":
            return f"{value / 2**30:g} GiB"
        if format_spec == "mbps":
            return f"{value / 1e6:g} MB/s"
        return str(super().format_field(value, format_spec))


_PROSE = _Prose()
