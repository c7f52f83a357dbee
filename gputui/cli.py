"""The composition root: arguments -> config -> source -> sampler -> app or a headless command."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from gputui import __version__
from gputui.clocks import ManualClock
from gputui.config import DEFAULT_INTERVAL_S, MAX_INTERVAL_S, MIN_INTERVAL_S, Config
from gputui.sources.base import Source, SourceUnavailable
from gputui.sources.simulated import MIX, SCENARIOS

EXIT_NO_SOURCE = 3
COMMANDS = ("snapshot",)


def _interval(text: str) -> float:
    value = float(text)
    if not MIN_INTERVAL_S <= value <= MAX_INTERVAL_S:
        raise argparse.ArgumentTypeError(
            f"must be between {MIN_INTERVAL_S} and {MAX_INTERVAL_S} seconds"
        )
    return value


def _gpus(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError("must be between 1 and 64")
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
        const=MIX,
        metavar="SCENARIO",
        choices=(*SCENARIOS, MIX),
        help=f"simulated GPUs instead of NVML; scenario: {', '.join(SCENARIOS)} or {MIX} "
        "(default: mix, several causes at once)",
    )
    group.add_argument("--gpus", type=_gpus, help="simulated GPUs (default 4)")
    group.add_argument("--seed", type=int, help="seed of the simulation")
    group.add_argument(
        "--interval",
        type=_interval,
        metavar="SECONDS",
        help=f"sampling interval (default {DEFAULT_INTERVAL_S:g} s)",
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputui",
        description="A terminal GPU monitor that tells you why your training job is slow.",
        parents=[_source_options(for_command=False)],
    )
    parser.set_defaults(gpus=4, seed=0, interval=DEFAULT_INTERVAL_S)
    common = _source_options(for_command=True)
    parser.add_argument("--version", action="version", version=f"gputui {__version__}")
    parser.add_argument(
        "--snapshot-dir",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where the app's snapshot key writes (default: current directory)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    snap = sub.add_parser(
        "snapshot",
        parents=[common],
        help="write the current state (readings, history, findings) as JSON or Markdown",
        description="Sample briefly, then write the state as JSON (or Markdown with a .md "
        "name or --format markdown); to stdout without -o. Files are written atomically, "
        "mode 0600.",
    )
    snap.add_argument("-o", "--output", type=Path, help="file to write (default: stdout)")
    snap.add_argument("--format", choices=("json", "markdown"), help="default: by file name")
    snap.add_argument(
        "--samples", type=int, default=3, help="readings to take (>= 2 for rates; default 3)"
    )
    snap.add_argument(
        "--warmup",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="with --demo: simulated seconds of history before the snapshot (default 120)",
    )
    return parser


def _normalise(argv: Sequence[str]) -> list[str]:
    """``--demo snapshot`` means the default mix, not a scenario called 'snapshot'."""
    out = list(argv)
    for i, token in enumerate(out[:-1]):
        if token == "--demo" and out[i + 1] in COMMANDS:
            out[i] = f"--demo={MIX}"
    return out


def make_source(args: argparse.Namespace, clock: Callable[[], float] = time.time) -> Source:
    if args.demo is not None:
        from gputui.sources.simulated import SimulatedSource, resolve_scenarios

        return SimulatedSource(resolve_scenarios(args.demo, args.gpus), seed=args.seed, clock=clock)
    from gputui.sources.host import HostReader
    from gputui.sources.nvml import NvmlSource

    return NvmlSource(host=HostReader(), clock=clock)


def source_detail(args: argparse.Namespace) -> str | None:
    if args.demo is None:
        return None
    from gputui.sources.simulated import resolve_scenarios

    scenarios = resolve_scenarios(args.demo, args.gpus)
    return "scenarios: " + ", ".join(f"GPU{i} {s}" for i, s in enumerate(scenarios))


def _fail(message: str) -> int:
    print(f"gputui: {message}", file=sys.stderr)
    return EXIT_NO_SOURCE


def cmd_snapshot(args: argparse.Namespace) -> int:
    from gputui.exporters.files import write_atomic
    from gputui.exporters.snapshot import SourceInfo, dumps, markdown_report, snapshot_dict
    from gputui.history import History
    from gputui.sampler import Sampler

    config = Config(interval_s=args.interval)
    simulated = args.demo is not None
    clock = ManualClock(time.time() - args.warmup) if simulated else time.time
    source = make_source(args, clock)
    try:
        devices = source.open()
    except SourceUnavailable as exc:
        return _fail(str(exc))
    history = History(config.history_points)
    sampler = Sampler(source, config.interval_s, on_frame=history.add)
    try:
        if isinstance(clock, ManualClock):
            # The simulation needs no waiting: step its clock through the warm-up.
            steps = max(args.samples, int(args.warmup / config.interval_s) + 1)
            for _ in range(steps):
                history.add(sampler.read_once())
                clock.advance(config.interval_s)
        else:
            for i in range(max(1, args.samples)):
                if i:
                    time.sleep(config.interval_s)
                history.add(sampler.read_once())
    finally:
        source.close()
    document = snapshot_dict(
        SourceInfo(source.label, source.kind, source_detail(args)),
        devices,
        history,
        config.interval_s,
    )
    fmt = args.format or (
        "markdown" if args.output is not None and args.output.suffix.lower() == ".md" else "json"
    )
    text = markdown_report(document) if fmt == "markdown" else dumps(document)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        path = write_atomic(args.output, text)
    except OSError as exc:
        print(f"gputui: could not write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"gputui: snapshot written to {path}", file=sys.stderr)
    return 0


def cmd_app(args: argparse.Namespace) -> int:
    source = make_source(args)
    try:
        devices = source.open()
    except SourceUnavailable as exc:
        return _fail(str(exc))
    from gputui.ui.run import run_app  # Textual loads only once there is something to show

    return run_app(
        source,
        devices,
        Config(interval_s=args.interval),
        snapshot_dir=args.snapshot_dir,
        detail=source_detail(args),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_normalise(sys.argv[1:] if argv is None else argv))
    try:
        if args.command == "snapshot":
            return cmd_snapshot(args)
        return cmd_app(args)
    except KeyboardInterrupt:
        return 130
