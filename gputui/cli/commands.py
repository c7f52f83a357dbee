"""The commands: snapshot, doctor, replay, export, and the app (record: ``cli/record``)."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from gputui.cli.exits import EXIT_NO_TERMINAL, EXIT_USAGE
from gputui.cli.opening import (
    backfilled,
    collect,
    fail,
    glance_frames,
    make_source,
    open_devices,
    open_live,
    simulated_warmup,
    source_detail,
    terminal_missing,
    write_output,
)
from gputui.core.config import Config
from gputui.core.sanitize import clean
from gputui.core.source import Follows, SourceUnavailable, TopologyLater
from gputui.core.units import fmt_duration

if TYPE_CHECKING:
    from gputui.core.model import Finding
    from gputui.sampling.monitor import Monitor


def cmd_snapshot(args: SimpleNamespace) -> int:
    from gputui.exporters.markdown import markdown_report
    from gputui.formats.snapshot import dumps, snapshot_of

    monitor = collect(args, 0.0)
    if isinstance(monitor, int):
        return monitor
    # a file for a ticket, taken in a few seconds: what held through all of them counts,
    # as for doctor (the live pane's hold would leave a throttling GPU unsaid)
    findings = monitor.point_in_time_findings()
    document = snapshot_of(monitor, keep_secrets=args.keep_secrets, findings=findings)
    into_directory = args.output is not None and args.output.is_dir()
    fmt = args.format or (
        "markdown"
        if args.output is not None and not into_directory and args.output.suffix.lower() == ".md"
        else "json"
    )
    if fmt == "markdown":
        text = markdown_report(document, simulated_warmup_s=simulated_warmup(args))
    else:
        text = dumps(document)
    if into_directory:
        return _write_new_snapshot(
            monitor, args.output, ".md" if fmt == "markdown" else ".json", text
        )
    return write_output(text, args.output)


def _write_new_snapshot(monitor: Monitor, directory: Path, suffix: str, text: str) -> int:
    """``snapshot -o DIR``: a new file there, named as the app's ``s`` key names its own
    (gputui-snapshot-<time>, then -2, -3... in the same second): never an earlier one
    replaced."""
    from gputui.exporters.snapshot_files import snapshot_stem, unique_files

    try:
        base = unique_files(directory, snapshot_stem(monitor), ((suffix, text),))
    except OSError as exc:
        where = clean(str(directory))
        print(f"gputui: could not write in {where}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"gputui: written to {clean(str(base))}{suffix}", file=sys.stderr)
    return 0


def cmd_doctor(args: SimpleNamespace) -> int:
    import json

    from gputui.advisor import judgement_of, point_in_time_findings
    from gputui.advisor.nodes import is_cluster, node_dict, node_rows
    from gputui.exporters.doctor import render_report, run_status
    from gputui.formats.snapshot import snapshot_of
    from gputui.formats.values import finding_dict

    reasons: list[str] = []

    def fail_noted(message: str) -> int:
        reasons.append(clean(message))
        return fail(message)

    if args.config:
        return _doctor_config(args, fail_noted, reasons)
    monitor = collect(args, args.duration, fail_noted)
    if isinstance(monitor, int):
        if args.json:  # still one JSON document on stdout, saying why it holds no GPU
            print(json.dumps(_doctor_failure(reasons, monitor), indent=2, allow_nan=False))
        return monitor
    findings = point_in_time_findings(monitor)
    status = run_status(monitor, findings, judgement_of(monitor))
    if args.json:
        document = snapshot_of(monitor, keep_secrets=args.keep_secrets, with_history=False)
        document["findings"] = [finding_dict(f, args.keep_secrets) for f in findings]
        document["exit_status"] = status
        if is_cluster(monitor.devices):  # each node, worst first
            rows = node_rows(monitor.devices, monitor.latest, findings)
            document["nodes"] = [node_dict(row) for row in rows]
        document["configuration"] = _configuration(monitor, findings)
        _dump(document)
    else:
        render_report(monitor, simulated_warmup_s=simulated_warmup(args))
    return status


def _dump(document: dict[str, object]) -> None:
    """The document on stdout as it is encoded, a few thousand pieces a write: a
    cluster's is tens of MB as one string, and millions of writes one piece each."""
    import json

    encoder = json.JSONEncoder(indent=2, allow_nan=False)
    pieces: list[str] = []
    for piece in encoder.iterencode(document):
        pieces.append(piece)
        if len(pieces) >= 4096:
            sys.stdout.write("".join(pieces))
            pieces.clear()
    sys.stdout.write("".join(pieces) + "\n")


def _configuration(monitor: Monitor, findings: Sequence[Finding]) -> dict[str, object]:
    from gputui.advisor import judgement_of
    from gputui.advisor.config_check import check_states, configuration_rules, unread_checks
    from gputui.exporters.configuration import config_document

    unread = unread_checks(monitor.latest, monitor.devices)
    checks = check_states(configuration_rules(), findings, judgement_of(monitor), unread)
    return config_document(monitor.devices, monitor.latest, checks)


def _doctor_config(args: SimpleNamespace, fail: Callable[[str], int], reasons: list[str]) -> int:
    """`doctor --config`: one reading, every configuration check once, no window."""
    import json

    from gputui.advisor.config_check import check_once
    from gputui.exporters.configuration import config_document
    from gputui.exporters.doctor import (
        TextConsole,
        config_report_lines,
        exit_status,
        render_lines,
    )
    from gputui.formats.values import finding_dict, frame_dict, record

    started = time.monotonic()
    source = make_source(args)
    try:
        devices = open_devices(source)
        frame = source.read()
    except SourceUnavailable as exc:
        status = fail(str(exc))
        if args.json:
            print(json.dumps(_doctor_failure(reasons, status), indent=2, allow_nan=False))
        return status
    finally:
        source.close()
    verdict = check_once(devices, frame)
    elapsed = time.monotonic() - started
    status = exit_status(verdict.findings, verdict.judgement)
    if args.json:
        document = {
            "source": source.label,
            "devices": [record(d) for d in devices],
            "latest": frame_dict(frame, args.keep_secrets),
            "configuration": {
                **config_document(devices, frame, verdict.checks),
                "elapsed_s": elapsed,
            },
            "findings": [finding_dict(f, args.keep_secrets) for f in verdict.findings],
            "judgement": verdict.judgement.to_dict(),
            "exit_status": status,
        }
        print(json.dumps(document, indent=2, allow_nan=False))
    else:
        console = TextConsole()
        render_lines(
            config_report_lines(source.label, devices, frame, verdict, elapsed, console.width),
            console,
        )
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


def cmd_replay(args: SimpleNamespace) -> int:
    from gputui.formats.recording import RecordingError, read_recording

    try:
        recording = read_recording(args.file)
    except (OSError, RecordingError) as exc:
        return fail(str(exc) if isinstance(exc, RecordingError) else f"{args.file}: {exc}")
    for notice in recording.notices:
        print(f"gputui: {clean(notice)}", file=sys.stderr)
    if not recording.ticks:
        return fail(f"{args.file}: the recording holds no frames")
    first, last = recording.ticks[0].frame.time, recording.ticks[-1].frame.time
    try:
        start_s = _start_offset(args.start, first, last)
    except ValueError:
        print(
            "gputui: --start wants seconds into the recording (90, 5m), back from its end "
            f"(-5m) or a clock time (HH:MM[:SS]), not {clean(args.start)!r}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    notices = list(recording.notices)
    if start_s < 0:
        before = (
            f"--start {clean(args.start)} reaches back past the recording's first frame "
            f"(it is {fmt_duration(last - first)} long): starting at its first moment"
        )
        print(f"gputui: {before}", file=sys.stderr)
        notices.append(before)
        start_s = 0.0
    if _no_terminal("a replay", "`gputui report` (a recording's findings and charts)"):
        return EXIT_NO_TERMINAL
    from gputui.launch import make_replay_app, run_owned

    return run_owned(
        make_replay_app(
            recording,
            speed=args.speed,
            start_s=start_s,
            snapshot_dir=args.snapshot_dir,
            notices=notices,
            name=Path(args.file).name,
            owns_process=True,
            theme=args.theme,
        )
    )


def _no_terminal(what: str, instead: str) -> bool:
    """Whether stdin or stdout is no terminal (cron, a pipe, a log), said with what to use
    instead: a screen there would wait for keys that never come."""
    missing = terminal_missing()
    if missing is None:
        return False
    print(
        f"gputui: {what} needs a terminal, and {missing} is not one. For a log, cron or a "
        f"pipe use {instead}.",
        file=sys.stderr,
    )
    return True


def _start_offset(text: str, first: float, last: float) -> float:
    """Seconds after the recording's first frame (``first``): '90' or '5m' (s, m, h, d)
    into it, a negative one back from its last frame (``last``; '-5m': its last five
    minutes, as ``report --since=-8h`` counts back from now), or a clock time on its
    first day. Below 0 where a negative one reaches back past the first frame."""
    if ":" not in text:
        from gputui.cli.report import duration_s  # report's own parser, loaded when asked

        seconds = duration_s(text)
        seconds = float(text) if seconds is None else seconds
        if not math.isfinite(seconds):
            raise ValueError(text)
        # '-0' is the end too: the sign, not the value, says which way to count
        return last - first + seconds if text.strip().startswith("-") else seconds
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


def cmd_export(args: SimpleNamespace) -> int:
    from prometheus_client.registry import CollectorRegistry

    from gputui.exporters.prometheus import GputuiCollector, serve_metrics
    from gputui.sampling.sampler import Sampler

    host, _, port = args.listen.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        print(f"gputui: --listen wants HOST:PORT, not {clean(args.listen)!r}", file=sys.stderr)
        return EXIT_USAGE
    if not _loopback(host.strip("[]")):
        if not args.allow_remote:
            print(
                f"gputui: {clean(host)} can be reached from other machines; add --allow-remote "
                "to serve there (or listen on 127.0.0.1 and let Prometheus scrape through a "
                "tunnel)",
                file=sys.stderr,
            )
            return EXIT_USAGE
        print(
            f"gputui: warning: serving on {clean(host)}: anyone who reaches this port reads "
            "the GPU, host and finding names",
            file=sys.stderr,
        )
    opened = open_live(args)
    if isinstance(opened, int):
        return opened
    monitor, source = opened
    registry = CollectorRegistry()
    registry.register(GputuiCollector(monitor))
    try:
        server, _thread = serve_metrics(registry, host.strip("[]"), int(port))
    except OSError as exc:
        source.close()
        print(
            f"gputui: cannot listen on {clean(args.listen)}: {exc.strerror or exc}",
            file=sys.stderr,
        )
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


def cmd_app(args: SimpleNamespace) -> int:
    source = make_source(args)
    if isinstance(source, Follows):  # the screen reads in full only the nodes it shows
        source.follow(tuple)  # (said before opening: it lists the cluster for less)
    if isinstance(source, TopologyLater):  # the first paint waits for no GPU-pair query
        source.topology_later()
    try:
        devices = open_devices(source)
    except SourceUnavailable as exc:
        return fail(str(exc))
    if _no_terminal("the monitor", "`gputui snapshot`, `gputui doctor` or `gputui record`"):
        source.close()
        return EXIT_NO_TERMINAL
    history = backfilled(source)
    first = () if history else glance_frames(source)
    from gputui.launch import run_app  # Textual loads only once there is something to show

    return run_app(
        source,
        devices,
        Config(interval_s=args.interval),
        snapshot_dir=args.snapshot_dir,
        detail=source_detail(args),
        keep_secrets=args.keep_secrets,
        history=history,
        first=first,
        readonly=args.readonly,
        theme=args.theme,
    )
