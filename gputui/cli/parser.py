"""The command line: every command, its options and what they mean."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeAlias, cast

from gputui import __version__
from gputui.core.config import (
    DEFAULT_INTERVAL_S,
    DEMO_MAX_GPUS,
    DEMO_MIX,
    DEMO_SCENARIOS,
    MAX_BLOCK_TICKS,
    MAX_INTERVAL_S,
    MAX_RECORD_SYNC_S,
    MAX_SPEED,
    MIN_INTERVAL_S,
    MIN_SPEED,
    RECORD_BLOCK_TICKS,
    RECORD_SYNC_S,
    THEMES,
    Thresholds,
)
from gputui.core.prose import DOCTOR_EXITS
from gputui.sources.selection import parse_only

if TYPE_CHECKING:
    pass

EXIT_NO_SOURCE = 3
#: `gputui record` could not write its file (a full disk, a file system turned read-only)
EXIT_CANNOT_WRITE = 1
PROMETHEUS_INTERVAL_S = 15.0
#: `gputui doctor`'s exit statuses, as its --help prints them (numbers: exporters/doctor.py)
DOCTOR_EXIT_CODES = "; ".join(f"{status} {meaning}" for status, meaning in DOCTOR_EXITS)
#: a command line that cannot run as given (sysexits' EX_USAGE): never one of doctor's
#: verdicts, so a health gate that drains a node on 2 (critical) does not on a typo
EXIT_USAGE = 64
EXIT_NO_TERMINAL = EXIT_USAGE
EXIT_INTERNAL = 70  # EX_SOFTWARE: distinct from every status a command documents
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a command its pipe's reader left
#: standard output could not be written (closed, a full disk: sysexits' EX_IOERR)
EXIT_OUTPUT = 74
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


def _bounded(
    kind: type[int] | type[float], low: float, high: float, low_open: bool = False
) -> Callable[[str], float]:
    """An argparse type: a finite number of ``kind`` in [low, high] (low excluded with
    ``low_open``), else a sentence saying what is accepted."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value) or value > high or value < low or (low_open and value == low):
            above = f"above {_figure(low)}" if low_open else f"from {_figure(low)}"
            raise argparse.ArgumentTypeError(f"must be {above} to {_figure(high)}, not {text!r}")
        return value

    return parse


def _figure(bound: float) -> str:
    """A bound as people write it: 31,622,400 rather than 3.16224e+07."""
    return f"{bound:,.0f}" if bound == int(bound) and abs(bound) >= 1e4 else f"{bound:g}"


_interval = _bounded(float, MIN_INTERVAL_S, MAX_INTERVAL_S)


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


def _only(text: str) -> tuple[int, ...]:
    try:
        return parse_only(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
        type=_only,
        metavar="GPUS",
        help="only these GPUs, by index as nvidia-smi numbers them: 0,2-3 (the others are "
        "not shown, judged or written; each keeps its index)",
    )
    group.add_argument("--gpus", type=_gpus, help="simulated GPUs (default 4)")
    group.add_argument("--seed", type=int, help="seed of the simulation")
    group.add_argument(
        "--interval",
        type=_interval,
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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gputui",
        description="A terminal GPU monitor that tells you why your training job is slow.",
        parents=[_source_options(for_command=False)],
    )
    parser.set_defaults(
        gpus=4, seed=0, interval=None, source=None, prometheus=None, match=None, only=None
    )
    common = _source_options(for_command=True)
    parser.add_argument("--version", action="version", version=f"gputui {__version__}")
    parser.add_argument(
        "--snapshot-dir",
        type=_directory,
        default=Path("."),
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
        default=THEMES[0],
        help="the screen's colours: dark (the default) or light, for a light terminal; b "
        "switches while it runs",
    )
    _secrets_option(parser, for_command=False)
    # its commands' parsers are _Parser too; typed as the ArgumentParser they extend
    sub = cast("Commands", parser.add_subparsers(dest="command", metavar="COMMAND"))
    for add in (_snapshot, _doctor, _record, _replay, _export, _report, _rules):
        add(sub, common)
    _completion(sub)
    return parser


def _completion(sub: Commands) -> None:
    completion = sub.add_parser(
        "completion",
        help="print shell completion for bash, zsh or fish",
        description="Print a completion script: every command, option and scenario. bash: "
        'eval "$(gputui completion bash)" in ~/.bashrc; zsh: the same in ~/.zshrc with zsh; '
        "fish: gputui completion fish > ~/.config/fish/completions/gputui.fish",
    )
    completion.add_argument("shell", choices=SHELLS, help="bash, zsh or fish")


def _snapshot(sub: Commands, common: argparse.ArgumentParser) -> None:
    snap = sub.add_parser(
        "snapshot",
        parents=[common],
        help="write the current state (readings, history, findings) as JSON or Markdown",
        description="Sample briefly (--samples readings, 5 by default: what the advisor needs "
        "to judge), then write the state as JSON (or Markdown with a .md name or --format "
        "markdown); to stdout without -o. The findings are a point-in-time verdict, as "
        "doctor's: a condition that held through every reading is written even before the "
        "live screen's hold would show it. Files are written atomically, mode 0600.",
    )
    snap.add_argument(
        "-o",
        "--output",
        type=Path,
        help="file to write (default: stdout); a directory: a new file in it, named by the "
        "time as the app's s key names its own (-2, -3... in the same second), never an "
        "earlier one replaced",
    )
    snap.add_argument("--format", choices=("json", "markdown"), help="default: by file name")
    _secrets_option(snap, for_command=True)
    # the readings the rules need before they judge: a condition that held through them
    # all is in the file (a point-in-time verdict, as doctor's)
    _sampling_options(snap, samples=Thresholds().min_points)


def _doctor(sub: Commands, common: argparse.ArgumentParser) -> None:
    doctor = sub.add_parser(
        "doctor",
        parents=[common],
        help="sample for a while, then report the advisor's findings; exit 0/1/2/3/4",
        description="Sample the GPUs for --duration seconds, then print the devices and the "
        "advisor's findings with their evidence and remedies. A point-in-time test: a "
        "condition that held through the whole sampled window is reported even when the "
        "window is shorter than the live screen's hold, and its evidence says over how long. "
        "Rules that could not judge (too little history, a reading that should be there "
        "and is not) are listed as not judged; a condition seen that must hold longer "
        "than the run before it is called (a leak's growth, a hang) as watching; rules "
        "that do not apply to this board (a reading it does not offer) as not applicable. "
        "Exit status: "
        + DOCTOR_EXIT_CODES
        + ". Good for a cron job or a health gate before a training run: the default 30 s "
        "gives every rule its window; a verdict that needs longer says watching.",
    )
    doctor.add_argument(
        "--duration",
        type=_bounded(float, 0.0, MAX_SAMPLING_S),
        default=30.0,
        metavar="SECONDS",
        help=f"default 30, at most {MAX_SAMPLING_S:,.0f}",
    )
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.add_argument(
        "--config",
        action="store_true",
        help="check the configuration only, at once, no sampling window: the job's cgroup "
        "(CPU quota, memory limit, cpuset), /dev/shm, open-files limit and environment, "
        "gputui's own included (the job a script is about to start), the host's settings and "
        "the GPUs' modes, clocks and peer-to-peer paths; every check listed, same exit codes",
    )
    doctor.add_argument(
        "--workers",
        type=_bounded(int, 0, 1_000_000),
        metavar="N",
        help="the data-loader workers the job will start, for the checks of gputui's own job "
        "(a running job's workers are counted)",
    )
    _secrets_option(doctor, for_command=True)
    _sampling_options(doctor, samples=2)


def _record(sub: Commands, common: argparse.ArgumentParser) -> None:
    rec = sub.add_parser(
        "record",
        parents=[common],
        help="record frames and findings to a JSON-lines file (.gz to compress)",
        description="Record every tick (readings, processes, findings) to a JSON-lines file, "
        "gzip-compressed with a .gz name, until --duration, Ctrl+C, SIGTERM or SIGHUP (the "
        "block closed, the file synced, exit 0). Every tick is in the file (its journal, "
        "FILE.journal, until its block is written) as it is taken: a recorder killed at any "
        f"moment loses at most the tick it was writing; exit {EXIT_CANNOT_WRITE} where the file "
        "cannot be written (a full disk), saying up to when it holds. Format: docs/record.md.",
    )
    rec.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        metavar="FILE",
        help="run.jsonl or run.jsonl.gz; never an existing file unless --force or --rotate-mb",
    )
    rec.add_argument(
        "--force",
        action="store_true",
        help="replace an existing file (a new file in its place: other hard links keep theirs)",
    )
    rec.add_argument(
        "--duration",
        type=_bounded(float, 0.0, MAX_RECORD_S, low_open=True),
        metavar="SECONDS",
        help="stop after this long",
    )
    rec.add_argument(
        "--rotate-mb",
        type=_bounded(float, 0.0, MAX_ROTATE_MB),
        default=0.0,
        metavar="MB",
        help="start a new file past this size (run.1.jsonl, run.2.jsonl... keep the older); an "
        "existing recording is rotated away first, its journal folded in (a restarted "
        f"recorder); 0 (the default): never; at most {MAX_ROTATE_MB:,.0f}",
    )
    rec.add_argument(
        "--keep",
        type=_bounded(int, 1, MAX_KEEP),
        default=5,
        help=f"rotated files to keep, 1 to {MAX_KEEP} (default 5)",
    )
    _durability_options(rec)
    _secrets_option(rec, for_command=True)


def _durability_options(rec: argparse.ArgumentParser) -> None:
    """What a power cut may take (``--sync``), and how long a block is (``--block``)."""
    rec.add_argument(
        "--sync",
        type=_bounded(float, 0.0, MAX_RECORD_SYNC_S),
        default=RECORD_SYNC_S,
        metavar="SECONDS",
        help="sync the ticks to the disk at least this often: what a power cut may take, in "
        f"seconds of ticks (default {RECORD_SYNC_S:g}; 0: every tick; at most "
        f"{MAX_RECORD_SYNC_S:,.0f})",
    )
    rec.add_argument(
        "--block",
        type=_bounded(int, 1, MAX_BLOCK_TICKS),
        default=RECORD_BLOCK_TICKS,
        metavar="TICKS",
        help=f"ticks a block holds, and seconds of them, at most (default {RECORD_BLOCK_TICKS}, "
        f"1 to {MAX_BLOCK_TICKS:,}): longer blocks make a smaller file that reads faster; what "
        "a crash loses is the same",
    )


def _replay(sub: Commands, _common: argparse.ArgumentParser) -> None:
    replay = sub.add_parser(
        "replay",
        help="the monitor over a recording (pause, step, seek, speed)",
        description="Play a recording back in the app, advisor included. Keys: p pause, "
        ". step, [ ] seek one minute, { } ten minutes, < > speed. A file is checked as it is "
        "read (lines up to 16 MiB, 1,024 GPUs, values of the right kind, times in order); a "
        "damaged or foreign one is refused naming the line, exit 3.",
    )
    replay.add_argument("file", type=Path, help="a file written by gputui record")
    replay.add_argument(
        "--speed",
        type=_bounded(float, MIN_SPEED, MAX_SPEED),
        default=1.0,
        help=f"playback speed, {MIN_SPEED:g} to {MAX_SPEED:g} (default 1)",
    )
    replay.add_argument(
        "--start",
        default="0",
        metavar="WHEN",
        help="where to start: seconds into the recording (90, or 5m: s, m, h, d), a negative "
        "one back from its end (--start=-5m: its last five minutes; as report --since=-8h "
        "counts back from now), or a clock time (14:05[:30])",
    )


def _export(sub: Commands, common: argparse.ArgumentParser) -> None:
    export = sub.add_parser(
        "export",
        parents=[common],
        help="serve the readings and findings to Prometheus (dcgm-exporter's metric names)",
        description="Serve /metrics for Prometheus with dcgm-exporter's metric names and "
        "labels, plus gputui_finding and the limits dcgm-exporter lacks. Samples on its own "
        "interval; a scrape never waits for NVML. Listens on localhost unless told otherwise.",
    )
    export.add_argument(
        "--listen",
        default="127.0.0.1:9400",
        metavar="HOST:PORT",
        help="address to serve on (default 127.0.0.1:9400: this machine only)",
    )
    export.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --listen on an address other machines can reach (GPU, host and finding "
        "names become readable to them); 32 requests served at once, 10 s each, and 2 s "
        "for a client to send its request",
    )


def _report(sub: Commands, _common: argparse.ArgumentParser) -> None:
    report = sub.add_parser(
        "report",
        help="after the run: where the GPU time went, findings and charts in one HTML file",
        description="Read a recording (or a Prometheus server's range), take the findings "
        "its recorder's advisor judged live (a file this release recorded) or run the "
        "advisor over all of it with the live screen's rules, and write one self-contained "
        "HTML file "
        "(charts inlined, no network request) or a Markdown summary: the share of wall "
        "time each GPU was busy, throttled, capped, starved, waiting, idle or not running, "
        "the GPU-hours lost to each cause and its worst stretch, the findings as a timeline "
        "with their evidence and remedies. docs/report.md says how the time is counted.",
    )
    report.add_argument("file", type=Path, nargs="?", help="a recording (run.jsonl[.gz])")
    report.add_argument(
        "-o",
        "--output",
        type=Path,
        help="file to write (default: RUN.report.html here; Markdown to stdout)",
    )
    report.add_argument("--format", choices=("html", "md"), help="default: by file name")
    report.add_argument(
        "--prometheus",
        metavar="URL",
        default=argparse.SUPPRESS,
        help="read the range from a Prometheus server (Thanos, VictoriaMetrics...) instead; "
        "credentials as for the live --prometheus source (GPUTUI_PROMETHEUS_TOKEN...)",
    )
    report.add_argument(
        "--match", metavar="SELECTOR", default=argparse.SUPPRESS, help="label matchers"
    )
    _range_options(report)
    report.add_argument(
        "--rejudge",
        action="store_true",
        help="run this gputui's advisor over the recording again, even where it holds the "
        "findings its recorder judged live with this release (taken as they stand by "
        "default: the ones the live screen showed)",
    )
    _secrets_option(report, for_command=True)


#: the scrape intervals `gputui rules` writes for, and its default (dcgm-exporter collects
#: every 30 s: a faster scrape repeats its readings)
RULES_SCRAPE_S = 30.0
MAX_SCRAPE_S = 600.0


def _rules(sub: Commands, _common: argparse.ArgumentParser) -> None:
    rules = sub.add_parser(
        "rules",
        help="write the advisor's rules for Prometheus (recording and alerting rules, YAML)",
        description="Write the advisor's catalogue as Prometheus recording and alerting "
        "rules for dcgm-exporter's metrics: the same thresholds, the windows and holds "
        "(for:) stretched to the scrape interval as the live rules stretch theirs, each "
        "alert with the finding's title, evidence and remedies as annotations, and the "
        "rules the engine cannot express listed at the head of the file. Check it with "
        "promtool check rules; docs/alerting.md says how to load it and route the alerts.",
    )
    rules.add_argument(
        "--scrape-interval",
        type=_bounded(float, 1.0, MAX_SCRAPE_S),
        metavar="SECONDS",
        help=f"the scrape interval of dcgm-exporter's targets (default {RULES_SCRAPE_S:g}, or "
        "as measured with --prometheus)",
    )
    rules.add_argument(
        "--prometheus",
        metavar="URL",
        default=argparse.SUPPRESS,
        help="measure the scrape interval on this server (credentials as for the live "
        "--prometheus source)",
    )
    rules.add_argument(
        "--match",
        metavar="SELECTOR",
        default=argparse.SUPPRESS,
        help="label matchers every selector of the rules carries, e.g. 'cluster=\"a\"'",
    )
    rules.add_argument(
        "--engine",
        choices=("prometheus", "vmalert", "thanos"),
        default="prometheus",
        help="the group options of the engine that evaluates them: Prometheus (the default), "
        "vmalert (VictoriaMetrics) or Thanos Ruler",
    )
    rules.add_argument(
        "--job-label",
        action="append",
        metavar="LABEL",
        help="a label whose value names a job (a straggler is judged among its GPUs); "
        "repeat, the first a series has wins (default: exported_pod, pod, hpc_job)",
    )
    rules.add_argument(
        "-o", "--output", type=Path, help="file to write (default: stdout), mode 0600"
    )


def _range_options(parser: argparse.ArgumentParser) -> None:
    """`report --prometheus`'s range: where it starts and ends, its step, its deadline."""
    parser.add_argument(
        "--since",
        metavar="WHEN",
        help="the range's start: 2026-12-03T22:00, --since=-8h (s, m, h, d before now), "
        "or seconds since the epoch",
    )
    parser.add_argument("--until", metavar="WHEN", help="the range's end (default: now)")
    parser.add_argument(
        "--step",
        type=_interval,
        metavar="SECONDS",
        help="seconds between readings asked of the server (default: the range bounded to "
        "20,000 readings a series, fewer on a large cluster, at least 1 s)",
    )
    parser.add_argument(
        "--deadline",
        type=_bounded(float, 1.0, MAX_REPORT_DEADLINE_S),
        metavar="SECONDS",
        help="with --prometheus: the most reading the whole range may take, every query "
        f"together (default {REPORT_DEADLINE_S:g}; each query {REPORT_QUERY_TIMEOUT_S:g} at "
        "most); a slower server is left with a sentence, not waited for",
    )


def _secrets_option(parser: argparse.ArgumentParser, for_command: bool) -> None:
    parser.add_argument(
        "--keep-secrets",
        action="store_true",
        # a command's copy leaves the main parser's value alone when not given
        default=argparse.SUPPRESS if for_command else False,
        help="keep credentials in command lines in files written (snapshots, recordings, "
        "the SVG); by default values of --password/--token/--api-key-like options, "
        "*_TOKEN=/*_KEY=-like variables and user:password@ in URLs become ***",
    )


def _sampling_options(parser: argparse.ArgumentParser, samples: int) -> None:
    parser.add_argument(
        "--samples",
        type=_bounded(int, 1, MAX_SAMPLES),
        default=samples,
        help=f"at least this many readings (>= 2 for rates; default {samples})",
    )
    parser.add_argument(
        "--warmup",
        type=_bounded(float, 0.0, MAX_WARMUP_S),
        default=120.0,
        metavar="SECONDS",
        help="with --demo: simulated seconds of history before sampling (default 120)",
    )


def normalise(argv: Sequence[str]) -> list[str]:
    """``--demo snapshot`` means the default mix, not a scenario called 'snapshot'."""
    out = list(argv)
    for i, token in enumerate(out[:-1]):
        if token == "--demo" and out[i + 1] in COMMANDS:
            out[i] = f"--demo={DEMO_MIX}"
    return out
