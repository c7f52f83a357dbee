"""The composition root: arguments -> config -> source -> sampler -> app or a headless command.

One module a job: ``monitor_line`` (a plain monitor command line, read without argparse),
``parser`` (every command and option), ``exits`` (the exit statuses), ``opening`` (the
source the arguments name and its first readings), ``commands`` (what each command does;
``record`` and ``report`` have their own).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from gputui.cli.commands import (
    cmd_app,
    cmd_doctor,
    cmd_export,
    cmd_replay,
    cmd_snapshot,
)
from gputui.cli.exits import (
    DOCTOR_EXIT_CODES,
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_NO_SOURCE,
    EXIT_NO_TERMINAL,
    EXIT_OUTPUT,
    EXIT_USAGE,
)
from gputui.cli.monitor_line import PROMETHEUS_INTERVAL_S, plain_monitor_line
from gputui.cli.output import OutputError, drop_stdout, guarded_stdout
from gputui.core.config import DEFAULT_INTERVAL_S
from gputui.core.sanitize import clean

if TYPE_CHECKING:
    from types import SimpleNamespace


def main(argv: Sequence[str] | None = None) -> int:
    args = read_command_line(sys.argv[1:] if argv is None else argv)
    if args.interval is None:
        # A Prometheus server holds what exporters collected every 15-30 s: reading it every
        # second costs a query over the whole cluster for the same answer.
        remote = getattr(args, "prometheus", None) and getattr(args, "demo", None) is None
        args.interval = PROMETHEUS_INTERVAL_S if remote else DEFAULT_INTERVAL_S
    headless = args.command not in (None, "replay")  # the screens need the real ones
    try:
        with guarded_stdout() if headless else contextlib.nullcontext():
            return _run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the output's reader went away (`| head`): nothing to tell it
        drop_stdout()
        return EXIT_BROKEN_PIPE
    except OutputError as exc:  # closed, a full disk: said, with a status of its own
        drop_stdout()
        print(f"gputui: the output could not be written: {clean(str(exc))}", file=sys.stderr)
        return EXIT_OUTPUT
    except Exception as exc:  # a bug: say so plainly, and never with a status that means "ok"
        if os.environ.get("GPUTUI_DEBUG"):
            raise
        print(
            f"gputui: internal error ({type(exc).__name__}: {clean(str(exc))}); run again "
            "with GPUTUI_DEBUG=1 for the traceback, and please report it",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def read_command_line(argv: Sequence[str]) -> SimpleNamespace:
    """The arguments: a plain monitor command line read by the monitor's own reader,
    anything else by argparse (``parser``, loaded only then)."""
    plain = plain_monitor_line(argv)
    if plain is not None:
        return plain
    from gputui.cli.parser import parse_command_line

    return parse_command_line(argv)[0]


def _run(args: SimpleNamespace) -> int:
    """The command the arguments name, run."""
    if args.command == "snapshot":
        return cmd_snapshot(args)
    if args.command == "doctor":
        return cmd_doctor(args)
    if args.command == "record":
        from gputui.cli.record import cmd_record

        return cmd_record(args)
    if args.command == "replay":
        with _start_without_collector():
            return cmd_replay(args)
    if args.command == "export":
        return cmd_export(args)
    if args.command == "completion":
        from gputui.cli.completion import script
        from gputui.cli.parser import build_parser

        print(script(args.shell, build_parser()), end="")
        return 0
    if args.command == "report":
        from gputui.cli.report import cmd_report

        return cmd_report(args)
    if args.command == "rules":
        from gputui.cli.rules import cmd_rules

        return cmd_rules(args)
    with _start_without_collector():
        return cmd_app(args)


@contextlib.contextmanager
def _start_without_collector() -> Iterator[None]:
    """An app's start with Python's cyclic collector off. Textual's and gputui's imports and
    the first screen make ~100,000 objects, nearly all living as long as the app, and the
    collector walked them ~140 times over before the first frame (~30 ms, a tenth of the
    start) for the few cycles they leave. The app collects once, freezes what is left and
    turns the collector on after its first paint (``GpuTuiApp._after_first_paint``); an
    app that ends before that gets it back here."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


__all__ = [
    "DOCTOR_EXIT_CODES",
    "EXIT_INTERNAL",
    "EXIT_NO_SOURCE",
    "EXIT_NO_TERMINAL",
    "EXIT_USAGE",
    "main",
]
