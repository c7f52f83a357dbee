"""What a key asks of the screen beyond new choices: say something, open a page, ask
before a signal, press another key. The key groups (``view.navigation``,
``view.process_keys``, ``view.replay_keys``, ``view.snapshot_key``) return these; the
screen (``gputui.ui``) carries them out. Plain records, so a key's whole effect is tested
without an app."""

from __future__ import annotations

from enum import Enum
from typing import Literal, TypeAlias

from gputui.core.model import Finding, ProcessSample
from gputui.core.records import frozen
from gputui.view.choices import Choices

#: how a message is shown, in Textual's words (information, warning, error)
Tone = Literal["information", "warning", "error"]


@frozen
class Notify:
    """A line for the user: a toast, or the open page's own border."""

    text: str
    title: str = ""
    tone: Tone = "information"
    #: seconds it stays; None: the screen's default
    timeout: float | None = None


class Page(Enum):
    """The pages over the panels that open with nothing more than the monitor's state."""

    HELP = "help"
    RULES = "rules"
    CLUSTER = "cluster"
    TOPOLOGY = "topology"
    ALL_PROCESSES = "all processes"
    FILTER = "filter"


@frozen
class OpenPage:
    page: Page


@frozen
class OpenFinding:
    """A finding in full."""

    finding: Finding


@frozen
class OpenProcess:
    """One process looked into: the PID and start time it was opened for (a PID alone can
    be taken by a new process)."""

    pid: int
    started: float | None


@frozen
class AskSignal:
    """The confirmation a signal needs, naming the process; sent only on yes."""

    process: ProcessSample
    signum: int
    name: str


@frozen
class AskSignals:
    """The one confirmation several tagged processes need, naming each; sent to each (by
    its PID and start time) only on yes. ``refused``: the tagged ones that will not be
    sent it, each with why (gone, another process now, not the user's)."""

    processes: tuple[ProcessSample, ...]
    signum: int
    name: str
    refused: tuple[tuple[int, str], ...] = ()


@frozen
class PressKey:
    """A key pressed as if typed (the footer's keys, clicked)."""

    key: str


Effect: TypeAlias = (
    "Choices | Notify | OpenPage | OpenFinding | OpenProcess | AskSignal | AskSignals | PressKey"
)
