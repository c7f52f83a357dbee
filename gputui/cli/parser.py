"""The command line: every command, its options and what they mean."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import NoReturn, TypeAlias, TypeVar, cast

from gputui import __version__
from gputui.cli.exits import EXIT_USAGE
from gputui.cli.monitor_line import (
    MONITOR_DEFAULTS,
    PROMETHEUS_INTERVAL_S,
    interval,
    number_between,
)
from gputui.core.config import DEFAULT_INTERVAL_S, DEMO_MAX_GPUS, DEMO_MIX, DEMO_SCENARIOS, THEMES
from gputui.sources.selection import parse_only

T = TypeVar("T")

SHELLS = ("bash", "zsh", "fish")  # what `gputui completion` writes for
COMMANDS = ("snapshot", "doctor", "record", "replay", "export", "report", "rules", "completion")


# Bounds of the record options: a year, a terabyte a file, a thousand files.
MAX_RECORD_S = 366 * 86400.0
MAX_ROTATE_MB = 1_000_000.0
MAX_KEEP = 1000
# snapshot/doctor: a day of readings at most; the demo's warm-up within the history window
MAX_SAMPLES = 86_400
#: `report --prometheus`: each query, and every query of the range together
REPORT_QUERY_TIMEOUT_S = 30.0
REPORT_DEADLINE_S = 300.0
MAX_REPORT_DEADLINE_S = 86_400.0
MAX_SAMPLING_S = 86_400.0
MAX_WARMUP_S = 3600.0
#: the scrape intervals `gputui rules` writes for, and its default (dcgm-exporter collects
#: every 30 s: a faster scrape repeats its readings)
RULES_SCRAPE_S = 30.0
MAX_SCRAPE_S = 600.0


def bounded(
    kind: type[int] | type[float], low: float, high: float, low_open: bool = False
) -> Callable[[str], float]:
    """An argparse type: a finite number of ``kind`` in [low, high] (low excluded with
    ``low_open``), else a sentence saying what is accepted."""
    return _argparse_type(number_between(kind, low, high, low_open))


def _argparse_type(read: Callable[[str], T]) -> Callable[[str], T]:
    """``read`` as an argparse type: the ValueError it raises, said as argparse's error."""

    def parse(text: str) -> T:
        try:
            return read(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


interval_seconds = _argparse_type(interval)


def _directory(text: str) -> Path:
    """An argparse type: a directory that exists and this user may write in (where the
    app's ``s`` key writes: said at the start, not when the key is pressed)."""
    path = Path(text)
    if not path.is_dir():
        what = "is not a directory" if path.exists() else "does not exist"
        raise argparse.ArgumentTypeError(f"{text!r} {what}")
    if not os.access(path, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text!r} is not writable by this user")
    return path


def _gpus(text: str) -> int:
    value = int(text)
    if not 1 <= value <= DEMO_MAX_GPUS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {DEMO_MAX_GPUS}")
    return value


def _source_options(for_command: bool) -> argparse.ArgumentParser:
    """Source options, accepted before and after the command name.

    A command's copy leaves unset options alone (SUPPRESS), so ``gputui --demo snapshot``
    keeps the --demo given before the command.
    """
    common = argparse.ArgumentParser(
        add_help=False, argument_default=argparse.SUPPRESS if for_command else None
    )
    group = common.add_argument_group("data source")
    group.add_argument(
        "--demo",
        nargs="?",
        const=DEMO_MIX,
        metavar="SCENARIO",
        choices=(*DEMO_SCENARIOS, DEMO_MIX),
        help=f"simulated GPUs instead of NVML; scenario: {', '.join(DEMO_SCENARIOS)} or {DEMO_MIX} "
        "(default: mix, several causes at once)",
    )
    group.add_argument(
        "--source",
        action="append",
        metavar="URL",
        help="read a remote node's Prometheus endpoint (dcgm-exporter or gputui export) "
        "instead of local GPUs; repeat for several nodes. Each read is bounded: the whole "
        "request within min(5 s, max(0.5 s, --interval)), 10 MB, 200,000 series, 256 GPUs a "
        "node, redirects only to the same host and port (docs/security.md)",
    )
    group.add_argument(
        "--prometheus",
        metavar="URL",
        help="read every node's dcgm-exporter metrics from a Prometheus server's HTTP API "
        "(/api/v1/query, /api/v1/query_range: Prometheus, Thanos, VictoriaMetrics, Mimir); "
        "credentials from GPUTUI_PROMETHEUS_TOKEN(_FILE) or GPUTUI_PROMETHEUS_USER/_PASSWORD, "
        "never the command line; TLS verified (docs/cluster.md)",
    )
    group.add_argument(
        "--match",
        metavar="SELECTOR",
        help="with --prometheus: label matchers that pick the nodes, e.g. 'job=\"dcgm\"'",
    )
    group.add_argument(
        "--only",
        type=_argparse_type(parse_only),
        metavar="GPUS",
        help="only these GPUs, by index as nvidia-smi numbers them: 0,2-3 (the others are "
        "not shown, judged or written; each keeps its index)",
    )
    group.add_argument("--gpus", type=_gpus, help="simulated GPUs (default 4)")
    group.add_argument("--seed", type=int, help="seed of the simulation")
    group.add_argument(
        "--interval",
        type=interval_seconds,
        metavar="SECONDS",
        help=f"sampling interval (default {DEFAULT_INTERVAL_S:g} s; "
        f"{PROMETHEUS_INTERVAL_S:g} s with --prometheus)",
    )
    return common


#: the subcommands' parsers, each command adds its own
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its usage errors exiting ``EXIT_USAGE`` instead of 2 (argparse's
    own), which is doctor's status for critical findings. Its commands' parsers are of
    this class too (``add_subparsers`` makes them of the parser's own)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


class _NotTheMonitors(Exception):
    """A command line the monitor's own options cannot parse."""


class _MonitorParser(_Parser):
    """The parser without the commands, for a command line that names none: a usage
    error (or anything it does not know, --help included) is left to the whole parser."""

    def error(self, message: str) -> NoReturn:
        raise _NotTheMonitors(message)


def build_parser(commands: bool = True) -> argparse.ArgumentParser:
    """The command line's parser; without ``commands``, the monitor's options alone (and
    no --help: see ``parse_command_line``)."""
    parser = (_Parser if commands else _MonitorParser)(
        prog="gputui",
        description="A terminal GPU monitor that tells you why your training job is slow.",
        parents=[_source_options(for_command=False)],
        add_help=commands,
    )
    parser.add_argument("--version", action="version", version=f"gputui {__version__}")
    parser.add_argument(
        "--snapshot-dir",
        type=_directory,
        metavar="DIR",
        help="where the app's snapshot key writes (default: current directory); a "
        "directory that exists and gputui may write in, checked at the start",
    )
    parser.add_argument(
        "--readonly",
        action="store_true",
        help="the monitor sends no signal (T I K refused, with or without tags): for a "
        "screen others watch; processes are still looked into",
    )
    parser.add_argument(
        "--theme",
        choices=THEMES,
        help="the screen's colours: dark (the default) or light, for a light terminal; b "
        "switches while it runs",
    )
    secrets_option(parser, for_command=False)
    parser.set_defaults(**MONITOR_DEFAULTS)  # what the monitor's own reader leaves too
    if not commands:
        return parser
    common = _source_options(for_command=True)
    # its commands' parsers are _Parser too; typed as the ArgumentParser they extend
    sub = cast("Commands", parser.add_subparsers(dest="command", metavar="COMMAND"))
    from gputui.cli.command_parsers import add_commands  # only where a command may be named

    add_commands(sub, common)
    return parser


def parse_command_line(argv: Sequence[str]) -> tuple[SimpleNamespace, argparse.ArgumentParser]:
    """The arguments, and the parser that read them. A command line that names no command
    (the monitor's: what a user types most, and waits on for the first screen) is read by
    the monitor's options alone: making every command's parser took more than the parse.
    Anything else (a command, --help, a mistake) goes to the whole parser, which answers
    and fails as it always has."""
    tokens = normalise(argv)
    monitor = build_parser(commands=False)
    try:
        args, rest = monitor.parse_known_args(tokens, SimpleNamespace())
    except _NotTheMonitors:
        rest = tokens
    if not rest:
        return args, monitor
    parser = build_parser()
    return parser.parse_args(tokens, SimpleNamespace()), parser


def secrets_option(parser: argparse.ArgumentParser, for_command: bool) -> None:
    parser.add_argument(
        "--keep-secrets",
        action="store_true",
        # a command's copy leaves the main parser's value alone when not given
        default=argparse.SUPPRESS if for_command else False,
        help="keep credentials in command lines in files written (snapshots, recordings, "
        "the SVG); by default values of --password/--token/--api-key-like options, "
        "*_TOKEN=/*_KEY=-like variables and user:password@ in URLs become ***",
    )


def normalise(argv: Sequence[str]) -> list[str]:
    """``--demo snapshot`` means the default mix, not a scenario called 'snapshot'."""
    out = list(argv)
    for i, token in enumerate(out[:-1]):
        if token == "--demo" and out[i + 1] in COMMANDS:
            out[i] = f"--demo={DEMO_MIX}"
    return out
