"""A rule of the catalogue: its documentation and the function that checks it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate

Check = Callable[[Context], Iterable[Candidate]]


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    cause: str  # the source article's cause it belongs to
    reads: str
    fires_when: str
    suggests: str
    check: Check
