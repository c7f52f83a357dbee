"""The composition root: arguments -> config -> source -> sampler -> app or a headless command."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gputui import __version__
from gputui.core.config import DEFAULT_INTERVAL_S, MAX_INTERVAL_S, MIN_INTERVAL_S, Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import DeviceInfo, Frame
from gputui.core.prose import DOCTOR_EXITS
from gputui.core.sanitize import clean
from gputui.sources.base import Source, SourceUnavailable
from gputui.sources.simulated import MAX_GPUS, MIX, SCENARIOS

if TYPE_CHECKING:
    from gputui.sampling.monitor import Monitor

EXIT_NO_SOURCE = 3
PROMETHEUS_INTERVAL_S = 15.0
#: `gputui doctor`'s exit statuses, as its --help prints them (numbers: exporters/doctor.py)
DOCTOR_EXIT_CODES = "; ".join(f"{status} {meaning}" for status, meaning in DOCTOR_EXITS)
EXIT_NO_TERMINAL = 2
EXIT_INTERNAL = 70  # EX_SOFTWARE: distinct from every status a command documents
COMMANDS = ("snapshot", "doctor", "record", "replay", "export")


def _interval(text: str) -> float:
    value = float(text)
    if not MIN_INTERVAL_S <= value <= MAX_INTERVAL_S:
        raise argparse.ArgumentTypeError(
            f"must be between {MIN_INTERVAL_S} and {MAX_INTERVAL_S} seconds"
        )
    return value


def _gpus(text: str) -> int:
    value = int(text)
    if not 1 <= value <= MAX_GPUS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_GPUS}")
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputui",
        description="A terminal GPU monitor that tells you why your training job is slow.",
        parents=[_source_options(for_command=False)],
    )
    parser.set_defaults(gpus=4, seed=0, interval=None, source=None, prometheus=None, match=None)
    common = _source_options(for_command=True)
    parser.add_argument("--version", action="version", version=f"gputui {__version__}")
    parser.add_argument(
        "--snapshot-dir",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where the app's snapshot key writes (default: current directory)",
    )
    _secrets_option(parser, for_command=False)
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
    _secrets_option(snap, for_command=True)
    _sampling_options(snap, samples=3)
    doctor = sub.add_parser(
        "doctor",
        parents=[common],
        help="sample for a while, then report the advisor's findings; exit 0/1/2/3/4",
        description="Sample the GPUs for --duration seconds, then print the devices and the "
        "advisor's findings with their evidence and remedies. A point-in-time test: a "
        "condition that held through the whole sampled window is reported even when the "
        "window is shorter than the live screen's hold, and its evidence says over how long. "
        "Rules that could not judge (too little history, a reading that should be there "
        "and is not) are listed as not judged; rules that do not apply to this board (a "
        "reading it does not offer) as not applicable. Exit status: "
        + DOCTOR_EXIT_CODES
        + ". Good for a cron job or a health gate before a training run: the default 30 s "
        "gives every rule its window.",
    )
    doctor.add_argument(
        "--duration", type=float, default=30.0, metavar="SECONDS", help="default 30"
    )
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    _secrets_option(doctor, for_command=True)
    _sampling_options(doctor, samples=2)
    rec = sub.add_parser(
        "record",
        parents=[common],
        help="record frames and findings to a JSON-lines file (.gz to compress)",
        description="Record every tick (readings, processes, findings) to a JSON-lines file, "
        "gzip-compressed with a .gz name, until --duration or Ctrl+C. Safe to stop at any "
        "moment: the file reads back up to its last complete line. Format: docs/record.md.",
    )
    rec.add_argument("-o", "--output", type=Path, required=True, help="run.jsonl or run.jsonl.gz")
    rec.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this long")
    rec.add_argument(
        "--rotate-mb",
        type=float,
        default=0.0,
        metavar="MB",
        help="start a new file past this size (run.1.jsonl, run.2.jsonl... keep the older)",
    )
    rec.add_argument("--keep", type=int, default=5, help="rotated files to keep (default 5)")
    _secrets_option(rec, for_command=True)
    replay = sub.add_parser(
        "replay",
        help="the monitor over a recording (pause, step, seek, speed)",
        description="Play a recording back in the app, advisor included. Keys: p pause, "
        ". step, [ ] seek one minute, { } ten minutes, < > speed. A file is checked as it is "
        "read (lines up to 16 MiB, 1,024 GPUs, values of the right kind, times in order); a "
        "damaged or foreign one is refused naming the line, exit 3.",
    )
    replay.add_argument("file", type=Path, help="a file written by gputui record")
    replay.add_argument("--speed", type=float, default=1.0, help="playback speed (default 1)")
    replay.add_argument(
        "--start",
        default="0",
        metavar="WHEN",
        help="where to start: seconds into the recording (90), or a clock time (14:05[:30])",
    )
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
        "names become readable to them); at most 32 connections at once, 10 s a request",
    )
    return parser


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
        type=int,
        default=samples,
        help=f"at least this many readings (>= 2 for rates; default {samples})",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="with --demo: simulated seconds of history before sampling (default 120)",
    )


def _normalise(argv: Sequence[str]) -> list[str]:
    """``--demo snapshot`` means the default mix, not a scenario called 'snapshot'."""
    out = list(argv)
    for i, token in enumerate(out[:-1]):
        if token == "--demo" and out[i + 1] in COMMANDS:
            out[i] = f"--demo={MIX}"
    return out


def make_source(args: argparse.Namespace, clock: Callable[[], float] = time.time) -> Source:
    if getattr(args, "prometheus", None) and args.demo is None:
        from gputui.sources.promapi import PrometheusSource

        return PrometheusSource(
            args.prometheus, args.match, timeout_s=min(5.0, max(0.5, args.interval)), clock=clock
        )
    if args.source and args.demo is None:
        from gputui.sources.remote import RemoteSource

        return RemoteSource(args.source, timeout_s=min(5.0, max(0.5, args.interval)), clock=clock)
    if args.demo is not None:
        from gputui.sources.simulated import SimulatedSource, resolve_scenarios

        return SimulatedSource(resolve_scenarios(args.demo, args.gpus), seed=args.seed, clock=clock)
    from gputui.sources.host import HostReader
    from gputui.sources.nvml import NvmlSource

    return NvmlSource(host=HostReader(), clock=clock)


def source_detail(args: argparse.Namespace) -> str | None:
    if getattr(args, "prometheus", None) and args.demo is None:
        return f"prometheus: {args.prometheus}" + (f" {args.match}" if args.match else "")
    if args.source and args.demo is None:
        return "sources: " + ", ".join(args.source)
    if args.demo is None:
        return None
    from gputui.sources.simulated import resolve_scenarios

    scenarios = resolve_scenarios(args.demo, args.gpus)
    return "scenarios: " + ", ".join(f"GPU{i} {s}" for i, s in enumerate(scenarios))


def _fail(message: str) -> int:
    print(f"gputui: {clean(message)}", file=sys.stderr)
    return EXIT_NO_SOURCE


def _collect(
    args: argparse.Namespace, seconds: float, fail: Callable[[str], int] = _fail
) -> Monitor | int:
    """Sample for ``seconds`` (at least ``--samples`` readings): the headless commands' core.

    A simulated source needs no waiting: its clock is stepped through ``--warmup`` seconds
    of history first, so the state is the scenario's, not its first second, and then
    through ``seconds``, all at once: nothing of it is sampled at the wall clock (the
    reports say so: ``simulated_warmup``). ``fail`` reports a source that cannot start.
    """
    from gputui.sampling.sampler import Sampler

    manual = ManualClock(time.time() - args.warmup - seconds) if args.demo is not None else None
    opened = _open_live(args, manual or time.time, fail)
    if isinstance(opened, int):
        return opened
    monitor, source = opened
    config = monitor.config
    sampler = Sampler(source, config.interval_s, on_frame=monitor.ingest)
    readings = max(args.samples, int(seconds / config.interval_s) + 1)
    if hasattr(source, "backfill"):
        # A Prometheus server: its history is already in, and its rates come computed; a
        # second reading would only wait for the same answer. The window asked for remains.
        readings = int(seconds / config.interval_s) + 1
    try:
        if manual is not None:
            readings = max(readings, int((args.warmup + seconds) / config.interval_s) + 1)
            for _ in range(readings):
                monitor.ingest(sampler.read_once())
                manual.advance(config.interval_s)
        else:
            for i in range(readings):
                if i:
                    time.sleep(config.interval_s)
                monitor.ingest(sampler.read_once())
    finally:
        source.close()
    return monitor


def simulated_warmup(args: argparse.Namespace) -> float | None:
    """The demo's simulated warm-up in seconds (None when the readings are live), so that a
    report calls its history simulated rather than sampled."""
    return float(args.warmup) if args.demo is not None else None


def _write(text: str, output: Path | None) -> int:
    if output is None:
        sys.stdout.write(text)
        return 0
    from gputui.exporters.files import write_atomic

    try:
        path = write_atomic(output, text)
    except OSError as exc:
        print(f"gputui: could not write {output}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"gputui: written to {path}", file=sys.stderr)
    return 0


def cmd_snapshot(args: argparse.Namespace) -> int:
    from gputui.exporters.markdown import markdown_report
    from gputui.formats.snapshot import dumps, snapshot_of

    monitor = _collect(args, 0.0)
    if isinstance(monitor, int):
        return monitor
    document = snapshot_of(monitor, keep_secrets=args.keep_secrets)
    fmt = args.format or (
        "markdown" if args.output is not None and args.output.suffix.lower() == ".md" else "json"
    )
    if fmt == "markdown":
        text = markdown_report(document, simulated_warmup_s=simulated_warmup(args))
    else:
        text = dumps(document)
    return _write(text, args.output)


def cmd_doctor(args: argparse.Namespace) -> int:
    import json

    from gputui.advisor import judgement_of, point_in_time_findings
    from gputui.advisor.nodes import is_cluster, node_dict, node_rows
    from gputui.exporters.doctor import exit_status, render_report
    from gputui.formats.snapshot import snapshot_of
    from gputui.formats.values import finding_dict

    reasons: list[str] = []

    def fail(message: str) -> int:
        reasons.append(clean(message))
        return _fail(message)

    monitor = _collect(args, args.duration, fail)
    if isinstance(monitor, int):
        if args.json:  # still one JSON document on stdout, saying why it holds no GPU
            print(json.dumps(_doctor_failure(reasons, monitor), indent=2, allow_nan=False))
        return monitor
    findings = point_in_time_findings(monitor)
    status = exit_status(findings, judgement_of(monitor))
    if args.json:
        document = snapshot_of(monitor, window_points=0, keep_secrets=args.keep_secrets)
        document["findings"] = [finding_dict(f, args.keep_secrets) for f in findings]
        document["exit_status"] = status
        if is_cluster(monitor.devices):  # each node, worst first
            rows = node_rows(monitor.devices, monitor.latest, findings)
            document["nodes"] = [node_dict(row) for row in rows]
        del document["history"]
        print(json.dumps(document, indent=2, allow_nan=False))
    else:
        render_report(monitor, simulated_warmup_s=simulated_warmup(args))
    return status


def _doctor_failure(reasons: Sequence[str], status: int) -> dict[str, object]:
    """``doctor --json``'s document when no GPU could be read: the same keys a report's
    findings and devices live under, empty, and the reason."""
    return {
        "error": "; ".join(reasons) or "no GPU could be read",
        "exit_status": status,
        "devices": [],
        "latest": None,
        "findings": [],
    }


def _open_live(
    args: argparse.Namespace,
    clock: Callable[[], float] = time.time,
    fail: Callable[[str], int] = _fail,
) -> tuple[Monitor, Source] | int:
    """The source opened and a monitor over it, or the exit status when it cannot start
    (``fail`` says why)."""
    from gputui.advisor import make_monitor
    from gputui.core.model import SourceInfo

    source = make_source(args, clock)
    try:
        devices = _open(source)
    except SourceUnavailable as exc:
        return fail(str(exc))
    config = Config(interval_s=args.interval)
    info = SourceInfo(source.label, source.kind, source_detail(args))
    monitor = make_monitor(devices, config, info)
    for frame in _history(source):
        monitor.ingest(frame)
    return monitor, source


def _history(source: Source) -> tuple[Frame, ...]:
    """The history a source already holds (a Prometheus server's window), oldest first."""
    backfill = getattr(source, "backfill", None)
    return tuple(backfill()) if backfill is not None else ()


def cmd_record(args: argparse.Namespace) -> int:
    from gputui.exporters.recorder import RecordWriter
    from gputui.formats.recording import Header
    from gputui.sampling.sampler import Sampler

    opened = _open_live(args)
    if isinstance(opened, int):
        return opened
    monitor, source = opened
    header = Header(monitor.source, monitor.devices, monitor.config.interval_s)
    try:
        writer = RecordWriter(
            args.output,
            header,
            max_bytes=int(args.rotate_mb * 1e6),
            keep=args.keep,
            keep_secrets=args.keep_secrets,
        )
    except OSError as exc:
        source.close()
        print(f"gputui: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    sampler = Sampler(source, monitor.config.interval_s, on_frame=monitor.ingest)
    deadline = None if args.duration is None else time.monotonic() + args.duration
    print(f"gputui: recording to {args.output} (Ctrl+C to stop)", file=sys.stderr)
    status = 0
    try:
        while deadline is None or time.monotonic() < deadline:
            started = time.monotonic()
            try:
                frame = sampler.read_once()
            except Exception as exc:  # a failed tick is skipped, the recording goes on
                print(f"gputui: a reading failed: {clean(str(exc))}", file=sys.stderr)
            else:
                writer.write(frame, monitor.ingest(frame))
            pause = monitor.config.interval_s - (time.monotonic() - started)
            if deadline is not None:
                pause = min(pause, deadline - time.monotonic())
            if pause > 0:
                time.sleep(pause)
    except KeyboardInterrupt:
        pass
    except OSError as exc:  # a full disk, a vanished directory: stop, keep what is written
        print(f"gputui: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        status = 1
    finally:
        try:
            writer.close()
        except OSError as exc:
            print(f"gputui: cannot finish {args.output}: {exc.strerror or exc}", file=sys.stderr)
            status = 1
        source.close()
    print(f"gputui: recorded {writer.lines - 1} ticks to {args.output}", file=sys.stderr)
    return status


def cmd_replay(args: argparse.Namespace) -> int:
    from gputui.formats.recording import RecordingError, read_recording

    try:
        recording = read_recording(args.file)
    except (OSError, RecordingError) as exc:
        return _fail(str(exc) if isinstance(exc, RecordingError) else f"{args.file}: {exc}")
    for notice in recording.notices:
        print(f"gputui: {clean(notice)}", file=sys.stderr)
    if not recording.ticks:
        return _fail(f"{args.file}: the recording holds no frames")
    try:
        start_s = _start_offset(args.start, recording.ticks[0].frame.time)
    except ValueError:
        print(f"gputui: --start wants seconds or HH:MM[:SS], not {args.start!r}", file=sys.stderr)
        return 2
    from gputui.launch import make_replay_app, run_owned

    return run_owned(
        make_replay_app(
            recording,
            speed=args.speed,
            start_s=start_s,
            snapshot_dir=args.snapshot_dir,
            notices=recording.notices,
            name=Path(args.file).name,
            owns_process=True,
        )
    )


def _start_offset(text: str, first: float) -> float:
    """Seconds after the recording's first frame: '90', or a clock time on its first day."""
    if ":" not in text:
        return max(0.0, float(text))
    parts = [int(p) for p in text.split(":")]
    if (
        len(parts) not in (2, 3)
        or not 0 <= parts[0] < 24
        or not all(0 <= p < 60 for p in parts[1:])
    ):
        raise ValueError(text)
    hour, minute, second = (*parts, 0)[:3]
    day = time.localtime(first)
    wanted = time.mktime((day.tm_year, day.tm_mon, day.tm_mday, hour, minute, second, 0, 0, -1))
    if wanted < first:
        wanted += 86400  # a time before the start means the next day
    return wanted - first


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cmd_export(args: argparse.Namespace) -> int:
    from prometheus_client.registry import CollectorRegistry

    from gputui.exporters.prometheus import GputuiCollector, serve_metrics
    from gputui.sampling.sampler import Sampler

    host, _, port = args.listen.rpartition(":")
    if not host or not port.isdigit():
        print(f"gputui: --listen wants HOST:PORT, not {clean(args.listen)!r}", file=sys.stderr)
        return 2
    if not _loopback(host.strip("[]")):
        if not args.allow_remote:
            print(
                f"gputui: {clean(host)} can be reached from other machines; add --allow-remote "
                "to serve there (or listen on 127.0.0.1 and let Prometheus scrape through a "
                "tunnel)",
                file=sys.stderr,
            )
            return 2
        print(
            f"gputui: warning: serving on {clean(host)}: anyone who reaches this port reads "
            "the GPU, host and finding names",
            file=sys.stderr,
        )
    opened = _open_live(args)
    if isinstance(opened, int):
        return opened
    monitor, source = opened
    registry = CollectorRegistry()
    registry.register(GputuiCollector(monitor))
    try:
        server, _thread = serve_metrics(registry, host.strip("[]"), int(port))
    except OSError as exc:
        source.close()
        print(f"gputui: cannot listen on {args.listen}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    sampler = Sampler(source, monitor.config.interval_s, on_frame=monitor.ingest)
    sampler.start()
    bound = f"{host}:{server.server_port}"
    print(f"gputui: serving http://{bound}/metrics (Ctrl+C to stop)", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        if sampler.stop(timeout=2.0):
            source.close()
    return 0


def _open(source: Source) -> tuple[DeviceInfo, ...]:
    """The source's GPUs; none readable is the same failure as no source (exit 3)."""
    devices = source.open()
    if not devices:
        source.close()
        raise SourceUnavailable("the source answered but reports no GPU that can be read")
    return devices


def _terminal_missing() -> str | None:
    """Which of stdin, stdout and stderr is not a terminal, if any: the monitor needs all
    three (keys in, screen out; Textual draws on stderr)."""
    for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout), ("stderr", sys.stderr)):
        if stream is None or not stream.isatty():
            return name
    return None


def cmd_app(args: argparse.Namespace) -> int:
    source = make_source(args)
    try:
        devices = _open(source)
    except SourceUnavailable as exc:
        return _fail(str(exc))
    missing = _terminal_missing()
    if missing is not None:
        source.close()
        print(
            f"gputui: the monitor needs a terminal, and {missing} is not one. For a log, "
            "cron or a pipe use `gputui snapshot`, `gputui doctor` or `gputui record`.",
            file=sys.stderr,
        )
        return EXIT_NO_TERMINAL
    history = _history(source)
    from gputui.launch import run_app  # Textual loads only once there is something to show

    return run_app(
        source,
        devices,
        Config(interval_s=args.interval),
        snapshot_dir=args.snapshot_dir,
        detail=source_detail(args),
        keep_secrets=args.keep_secrets,
        history=history,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_normalise(sys.argv[1:] if argv is None else argv))
    if args.interval is None:
        # A Prometheus server holds what exporters collected every 15-30 s: reading it every
        # second costs a query over the whole cluster for the same answer.
        remote = getattr(args, "prometheus", None) and getattr(args, "demo", None) is None
        args.interval = PROMETHEUS_INTERVAL_S if remote else DEFAULT_INTERVAL_S
    try:
        if args.command == "snapshot":
            return cmd_snapshot(args)
        if args.command == "doctor":
            return cmd_doctor(args)
        if args.command == "record":
            return cmd_record(args)
        if args.command == "replay":
            return cmd_replay(args)
        if args.command == "export":
            return cmd_export(args)
        return cmd_app(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug: say so plainly, and never with a status that means "ok"
        if os.environ.get("GPUTUI_DEBUG"):
            raise
        print(
            f"gputui: internal error ({type(exc).__name__}: {clean(str(exc))}); run again "
            "with GPUTUI_DEBUG=1 for the traceback, and please report it",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
