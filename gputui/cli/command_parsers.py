"""Each command's options (snapshot, doctor, record, replay, export, report, rules,
completion): made only where a command line may name one (``parser.build_parser``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from gputui.cli.exits import DOCTOR_EXIT_CODES, EXIT_CANNOT_WRITE
from gputui.cli.parser import (
    MAX_KEEP,
    MAX_RECORD_S,
    MAX_REPORT_DEADLINE_S,
    MAX_ROTATE_MB,
    MAX_SAMPLES,
    MAX_SAMPLING_S,
    MAX_SCRAPE_S,
    MAX_WARMUP_S,
    REPORT_DEADLINE_S,
    REPORT_QUERY_TIMEOUT_S,
    RULES_SCRAPE_S,
    SHELLS,
    Commands,
    bounded,
    interval_seconds,
    secrets_option,
)
from gputui.core.config import (
    MAX_BLOCK_TICKS,
    MAX_RECORD_SYNC_S,
    MAX_SPEED,
    MIN_SPEED,
    RECORD_BLOCK_TICKS,
    RECORD_SYNC_S,
    Thresholds,
)


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
    secrets_option(snap, for_command=True)
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
        type=bounded(float, 0.0, MAX_SAMPLING_S),
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
        type=bounded(int, 0, 1_000_000),
        metavar="N",
        help="the data-loader workers the job will start, for the checks of gputui's own job "
        "(a running job's workers are counted)",
    )
    secrets_option(doctor, for_command=True)
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
        type=bounded(float, 0.0, MAX_RECORD_S, low_open=True),
        metavar="SECONDS",
        help="stop after this long",
    )
    rec.add_argument(
        "--rotate-mb",
        type=bounded(float, 0.0, MAX_ROTATE_MB),
        default=0.0,
        metavar="MB",
        help="start a new file past this size (run.1.jsonl, run.2.jsonl... keep the older); an "
        "existing recording is rotated away first, its journal folded in (a restarted "
        f"recorder); 0 (the default): never; at most {MAX_ROTATE_MB:,.0f}",
    )
    rec.add_argument(
        "--keep",
        type=bounded(int, 1, MAX_KEEP),
        default=5,
        help=f"rotated files to keep, 1 to {MAX_KEEP} (default 5)",
    )
    _durability_options(rec)
    secrets_option(rec, for_command=True)


def _durability_options(rec: argparse.ArgumentParser) -> None:
    """What a power cut may take (``--sync``), and how long a block is (``--block``)."""
    rec.add_argument(
        "--sync",
        type=bounded(float, 0.0, MAX_RECORD_SYNC_S),
        default=RECORD_SYNC_S,
        metavar="SECONDS",
        help="sync the ticks to the disk at least this often: what a power cut may take, in "
        f"seconds of ticks (default {RECORD_SYNC_S:g}; 0: every tick; at most "
        f"{MAX_RECORD_SYNC_S:,.0f})",
    )
    rec.add_argument(
        "--block",
        type=bounded(int, 1, MAX_BLOCK_TICKS),
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
        type=bounded(float, MIN_SPEED, MAX_SPEED),
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
    secrets_option(report, for_command=True)


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
        type=bounded(float, 1.0, MAX_SCRAPE_S),
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
        type=interval_seconds,
        metavar="SECONDS",
        help="seconds between readings asked of the server (default: the range bounded to "
        "20,000 readings a series, fewer on a large cluster, at least 1 s)",
    )
    parser.add_argument(
        "--deadline",
        type=bounded(float, 1.0, MAX_REPORT_DEADLINE_S),
        metavar="SECONDS",
        help="with --prometheus: the most reading the whole range may take, every query "
        f"together (default {REPORT_DEADLINE_S:g}; each query {REPORT_QUERY_TIMEOUT_S:g} at "
        "most); a slower server is left with a sentence, not waited for",
    )


def _sampling_options(parser: argparse.ArgumentParser, samples: int) -> None:
    parser.add_argument(
        "--samples",
        type=bounded(int, 1, MAX_SAMPLES),
        default=samples,
        help=f"at least this many readings (>= 2 for rates; default {samples})",
    )
    parser.add_argument(
        "--warmup",
        type=bounded(float, 0.0, MAX_WARMUP_S),
        default=120.0,
        metavar="SECONDS",
        help="with --demo: simulated seconds of history before sampling (default 120)",
    )


def add_commands(sub: Commands, common: argparse.ArgumentParser) -> None:
    """Every command's parser, in the order --help lists them."""
    for add in (_snapshot, _doctor, _record, _replay, _export, _report, _rules):
        add(sub, common)
    _completion(sub)
