"""The monitor's command line where it is plain, read without argparse; and the monitor's
options' defaults, which the whole parser (``parser.py``) takes from here too.

A monitor is started far more often than anything else gputui does, and waited on for its
first screen: importing argparse and making its parser took 5-8 ms of the ~50 that gputui
adds to Textual's start, for a line that is most often empty or ``--interval 2``. A line
made only of the options below, each spelt out in full once with a value that does not
begin with a dash, is read here; anything else (any other option, a command, an
abbreviation, --help, a value argparse would refuse) returns None, and the whole parser
reads the line and answers or fails as it always has. What is read here is converted by
the same functions argparse is given, into the same values."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace

from gputui.core.config import MAX_INTERVAL_S, MIN_INTERVAL_S, THEMES
from gputui.sources.selection import parse_only

#: the interval with --prometheus: a server holds what exporters collected every 15-30 s
PROMETHEUS_INTERVAL_S = 15.0

#: every option of the monitor's command line (a command's own are not here), as the whole
#: parser leaves it when the line does not give it
MONITOR_DEFAULTS: dict[str, object] = {
    "demo": None,
    "source": None,
    "prometheus": None,
    "match": None,
    "only": None,
    "gpus": 4,
    "seed": 0,
    "interval": None,
    "snapshot_dir": Path("."),
    "readonly": False,
    "theme": THEMES[0],
    "keep_secrets": False,
    "command": None,
}


def number_between(
    kind: type[int] | type[float], low: float, high: float, low_open: bool = False
) -> Callable[[str], float]:
    """A number of ``kind`` in [low, high] (low excluded with ``low_open``) read from a
    text; ValueError with a sentence saying what is accepted otherwise."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
        if not math.isfinite(value) or value > high or value < low or (low_open and value == low):
            above = f"above {_figure(low)}" if low_open else f"from {_figure(low)}"
            raise ValueError(f"must be {above} to {_figure(high)}, not {text!r}")
        return value

    return parse


def _figure(bound: float) -> str:
    """A bound as people write it: 31,622,400 rather than 3.16224e+07."""
    return f"{bound:,.0f}" if bound == int(bound) and abs(bound) >= 1e4 else f"{bound:g}"


interval = number_between(float, MIN_INTERVAL_S, MAX_INTERVAL_S)


def _theme(text: str) -> str:
    if text not in THEMES:
        raise ValueError(text)
    return text


#: the options read here that take a value, each with what reads it
_VALUED: dict[str, tuple[str, Callable[[str], object]]] = {
    "--interval": ("interval", interval),
    "--only": ("only", parse_only),
    "--theme": ("theme", _theme),
}
_FLAGS = {"--readonly": "readonly", "--keep-secrets": "keep_secrets"}


def plain_monitor_line(argv: Sequence[str]) -> SimpleNamespace | None:
    """The arguments of a plain monitor command line, with every other option at its
    default; None for any line that is not plain (the whole parser reads it)."""
    values = dict(MONITOR_DEFAULTS)
    given: set[str] = set()
    tokens = iter(argv)
    for token in tokens:
        name, equals, text = token.partition("=")
        if name in given:
            return None  # said twice: argparse's rule (the last) is argparse's to apply
        given.add(name)
        if name in _FLAGS and not equals:
            values[_FLAGS[name]] = True
            continue
        if name not in _VALUED:
            return None
        if not equals:
            text = next(tokens, "-")  # none: as one that begins with a dash
        if text.startswith("-"):
            return None
        dest, read = _VALUED[name]
        try:
            values[dest] = read(text)
        except ValueError:
            return None  # argparse says what is wrong with it
    return SimpleNamespace(**values)
