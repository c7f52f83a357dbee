"""A synthetic cluster behind a real Prometheus: what gputui costs at 64 to 1,024 nodes.

Usage: python benchmarks/cluster.py [--nodes 64 256 1024] [--gpus 8] [--interval 15]
                                    [--history 900] [--ticks 10] [--modes screen doctor]
                                    [--rules] [--tree DIR] [--pin]

For each size, Debian's `prometheus` scrapes a synthetic dcgm-exporter page a node
(``tests/prom_cluster.py``: one local HTTP server plays every node, with thermal
throttling, a power cap, PCIe replays, an Xid and a clock held with no reason planted, and
a node whose exporter stopped an hour before the start), its history before the start
written at once with promtool. Then, each in a fresh process so its memory is its own:

- the screen's way (``follow``: every node ranked from the aggregating queries, the nodes
  on screen read in full): first frame (open, history, the first read, the monitor and
  the cluster view's rows), then ``--ticks`` reads: CPU a tick and as a share of a core
  at one tick every ``--interval`` s (the app's default for a Prometheus source),
  resident memory, requests and bytes a tick;
- doctor's way: ``gputui doctor --prometheus URL --json`` as a user runs it, its wall time,
  CPU and peak memory (the child's own resource usage), its exit status and what it found;
  ``--tree DIR`` runs another checkout's (``git archive`` of an earlier commit) on the same
  server.

``--rules``: the server evaluates ``gputui rules`` (at the interval); the time its last
evaluation of the group took and the alerts it fires are printed, and doctor reads their
verdict. Only gputui's own process is measured; the server and the exporters run beside
it, and the last two columns say what they cost meanwhile (% of one core over the run).
``--pin``: the server's threads and the exporters on the first CPU, doctor alone on the
second, as on a cluster whose server has cores of its own (on two shared cores the
server's evaluation of the rules is doctor's wall time otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gputui.core.model import Note
from tests.prom_cluster import HELD, POWER_CAP, REPLAYS, THERMAL, XID, Plan, start_prometheus


def _plan(nodes: int, gpus: int) -> Plan:
    names = [f"gpu-node-{i:04d}" for i in range(nodes)]
    planted = {
        (names[nodes // 3], 2): THERMAL,
        (names[nodes // 2], 5): THERMAL,
        (names[-3], 0): THERMAL,
        (names[nodes // 4], 1): POWER_CAP,
        (names[nodes // 5], 6 % gpus): REPLAYS,
        (names[-2], 3 % gpus): XID,
        (names[nodes // 6], 4 % gpus): HELD,
    }
    # a node whose exporter stopped an hour before the start: its target's scrapes fail
    return Plan(names, gpus=gpus, planted=planted, stopped={names[nodes // 7]: 3600.0})


def measure(url: str, follow: bool, ticks: int, interval: float) -> dict[str, float]:
    """In this process: the first frame and the ticks after it."""
    import psutil

    from gputui.advisor import make_monitor
    from gputui.advisor.nodes import node_rows
    from gputui.cli.opening import read_since_history
    from gputui.core.config import Config
    from gputui.core.model import SourceInfo
    from gputui.core.names import SourceKind
    from gputui.sources.prometheus.source import PrometheusSource
    from gputui.view.cluster import cluster_page, shown_nodes

    process = psutil.Process()
    wall, cpu = time.perf_counter(), time.process_time()
    source = PrometheusSource(url, timeout_s=30.0)
    shown: tuple[str, ...] = ()
    if follow:
        source.follow(lambda: shown)
    devices = source.open()
    monitor = make_monitor(devices, Config(interval_s=interval), SourceInfo("P", SourceKind.REMOTE))
    for frame in source.backfill():
        monitor.ingest(frame)
    if not follow:  # doctor's way: the stretch judging the history took, as doctor reads it
        read_since_history(monitor, source)
    first = source.read()
    monitor.ingest(first)
    rows = node_rows(monitor.devices, monitor.latest, monitor.findings)
    cluster_page(rows, len(devices), 0, 160)
    _said(first.notes)
    first_wall, first_cpu = time.perf_counter() - wall, time.process_time() - cpu
    first_rss = process.memory_info().rss
    queries, answered = source.queries, source.bytes
    cpu = time.process_time()
    for _ in range(ticks):
        shown = shown_nodes(monitor.devices, monitor.devices[0].index)
        monitor.ingest(source.read())
        rows = node_rows(monitor.devices, monitor.latest, monitor.findings)
        cluster_page(rows, len(devices), 0, 160)
    tick_cpu = (time.process_time() - cpu) / max(1, ticks)
    _said(monitor.latest.notes if monitor.latest is not None else ())
    print("found: " + ", ".join(sorted({f.rule.value for f in monitor.findings})), file=sys.stderr)
    advisor = monitor.advisor
    for rule, error in getattr(advisor, "rule_errors", {}).items():
        print(f"rule error: {rule}: {error[:200]}", file=sys.stderr)
    judgement = getattr(advisor, "judgement", None)
    undecided = getattr(judgement, "undecided", ())  # too few readings as well as no field
    unjudged = {f"{item.rule}: {item.missing} ({item.kind})" for item in undecided}
    planted = ("thermal-throttle", "power-cap", "pcie-errors")  # the windowed rules planted
    for line in sorted(unjudged, key=lambda t: (not t.startswith(planted), t))[:12]:
        print(f"not judged: {line[:200]}", file=sys.stderr)
    print(f"cadence: {getattr(advisor, 'cadence_s', None)}", file=sys.stderr)
    return {
        "gpus": float(len(devices)),
        "first_s": first_wall,
        "first_cpu_s": first_cpu,
        "tick_cpu_ms": 1000 * tick_cpu,
        "core_pct": 100 * tick_cpu / interval,
        "rss_mb": process.memory_info().rss / 2**20,
        "first_rss_mb": first_rss / 2**20,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "requests_tick": (source.queries - queries) / max(1, ticks),
        "kb_tick": (source.bytes - answered) / max(1, ticks) / 1024,
        "findings": float(len(monitor.findings)),
    }


def _said(notes: Sequence[Note]) -> None:
    """What was not read (pages that failed, history dropped), on stderr."""
    for note in notes:
        if any(word in note.text for word in ("not read", "could not", "refused", "dropped")):
            print(f"note: {note.text[:240]}", file=sys.stderr)


def _child(url: str, follow: bool, ticks: int, interval: float) -> dict[str, float]:
    command = [sys.executable, __file__, "--measure", url, "--ticks", str(ticks)]
    command += ["--interval", str(interval)] + (["--follow"] if follow else [])
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    sys.stderr.write(done.stderr[-1500:])
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


class _Beside:
    """The CPU the harness (this process: the synthetic exporters) and the server used
    while gputui's child ran, as shares of one core, so that a table says when they, not
    gputui, were what the machine was busy with."""

    def __init__(self, server_pid: int) -> None:
        import psutil

        self.server = psutil.Process(server_pid)
        self.wall, self.own, self.theirs = time.perf_counter(), self._own(), self._theirs()

    @staticmethod
    def _own() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    def _theirs(self) -> float:
        times = self.server.cpu_times()
        return float(times.user + times.system)

    def shares(self) -> dict[str, float]:
        wall = max(1e-9, time.perf_counter() - self.wall)
        return {
            "harness_pct": 100 * (self._own() - self.own) / wall,
            "server_pct": 100 * (self._theirs() - self.theirs) / wall,
        }


def _pin(server: int) -> None:
    """The server's threads and this process's (the exporters) on the first CPU: doctor
    gets the second to itself."""
    for task in os.listdir(f"/proc/{server}/task"):
        os.sched_setaffinity(int(task), {0})
    os.sched_setaffinity(0, {0})


def _doctor(url: str, tree: Path | None, pin: bool = False) -> dict[str, float]:
    """``gputui doctor --prometheus URL --json`` as a user runs it (of ``tree``, another
    checkout such as ``git archive`` of an earlier commit, when given): its wall time, CPU
    and peak memory from the child's own resource usage, its exit status and findings
    (``pin``: alone on the second CPU)."""
    env = dict(os.environ, PYTHONPATH=str(tree)) if tree is not None else None
    measure = (
        "import json, resource, subprocess, sys, time; t = time.perf_counter(); "
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "r = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(json.dumps({'wall': time.perf_counter() - t, 'cpu': r.ru_utime + r.ru_stime, "
        "'rss': r.ru_maxrss / 1024, 'status': done.returncode, 'out': done.stdout}))"
    )
    command = [sys.executable, "-c", measure, sys.executable, "-m", "gputui", "doctor"]
    command += ["--prometheus", url, "--json"]
    # python -m puts the working directory first on the path: the tree's own, or this one's
    if pin:
        command = ["taskset", "-c", "1", *command]
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env, cwd=tree)
    got = json.loads(done.stdout)
    document = json.loads(got["out"])
    found = sorted({f["rule"] for f in document["findings"]})
    print(f"doctor: exit {got['status']}, found: {', '.join(found)}", file=sys.stderr)
    for note in document["latest"]["notes"]:  # what doctor said of its reading
        print(f"  note: {str(note.get('text', note))[:300]}", file=sys.stderr)
    judged = document["judgement"]
    print(
        f"  judgement: complete {judged['complete']}, sampled {judged['sampled_s']} s, "
        f"not judged {len(judged['not_judged'])}",
        file=sys.stderr,
    )
    return {
        "gpus": float(len(document["devices"])),
        "first_s": got["wall"],
        "first_cpu_s": got["cpu"],
        "rss_mb": got["rss"],
        "peak_rss_mb": got["rss"],
        "findings": float(len(document["findings"])),
        "status": float(got["status"]),
    }


def _gputui_group(url: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The server's gputui rule group as /api/v1/rules lists it, and its active alerts."""
    with urllib.request.urlopen(f"{url}/api/v1/rules", timeout=30) as answer:
        groups = json.load(answer)["data"]["groups"]
    group: dict[str, Any] = next(g for g in groups if g["name"] == "gputui")
    return group, [a for r in group["rules"] for a in r.get("alerts", [])]


def _rules_cost(url: str) -> str:
    """How long the server's last evaluation of the gputui group took, and its alerts."""
    group, alerts = _gputui_group(url)
    by_state = {
        state: sorted({a["labels"]["alertname"] for a in alerts if a.get("state") == state})
        for state in ("firing", "pending")
    }
    firing, pending = (", ".join(by_state[state]) or "none" for state in ("firing", "pending"))
    took = group["evaluationTime"]
    return f"rules: one evaluation {took:.2f} s; firing: {firing}; pending: {pending}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--interval", type=float, default=15.0)
    parser.add_argument("--history", type=float, default=900.0, help="seconds written at start")
    parser.add_argument("--ticks", type=int, default=10)
    parser.add_argument(
        "--modes", nargs="+", choices=("screen", "doctor"), default=["screen", "doctor"]
    )
    parser.add_argument(
        "--rules",
        action="store_true",
        help="the server evaluates `gputui rules` (doctor reads them)",
    )
    parser.add_argument("--tree", type=Path, help="doctor of another checkout, on the same server")
    parser.add_argument(
        "--pin",
        action="store_true",
        help="the server and the exporters on the first CPU, doctor alone on the second (as "
        "on a cluster, where the server has cores of its own)",
    )
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--follow", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.follow, args.ticks, args.interval)))
        return 0
    print(
        f"{'nodes':>6} {'GPUs':>6} {'mode':<7} {'first s':>8} {'CPU s':>6} {'tick ms':>8} "
        f"{'% core':>7} "
        f"{'RSS MB':>7} {'peak MB':>8} {'req/tick':>8} {'KB/tick':>8} {'findings':>8} "
        f"{'harness %':>9} {'server %':>8}"
    )
    for nodes in args.nodes:
        with tempfile.TemporaryDirectory(prefix="gputui-cluster-") as work:
            started = time.perf_counter()
            rules = _rules_file(Path(work), args.interval) if args.rules else None
            plan = _plan(nodes, args.gpus)
            server = start_prometheus(
                plan, args.interval, Path(work), history_s=args.history, rules=rules
            )
            ready = time.perf_counter() - started
            try:
                if rules is not None:
                    _wait_alerts(server.url, 600.0)
                    print(_rules_cost(server.url), file=sys.stderr)
                if args.pin:
                    _pin(server.process.pid)
                for mode in args.modes:
                    beside = _Beside(server.process.pid)
                    if mode == "doctor":
                        r = dict.fromkeys(("tick_cpu_ms", "core_pct", "requests_tick"), 0.0)
                        r |= {"kb_tick": 0.0, **_doctor(server.url, args.tree, args.pin)}
                    else:
                        r = _child(server.url, True, args.ticks, args.interval)
                    r.update(beside.shares())
                    print(
                        f"{nodes:>6} {r['gpus']:>6.0f} {mode:<7} "
                        f"{r['first_s']:>8.2f} {r['first_cpu_s']:>6.2f} {r['tick_cpu_ms']:>8.1f} "
                        f"{r['core_pct']:>7.2f} "
                        f"{r['rss_mb']:>7.0f} {r['peak_rss_mb']:>8.0f} "
                        f"{r['requests_tick']:>8.1f} {r['kb_tick']:>8.0f} {r['findings']:>8.0f} "
                        f"{r['harness_pct']:>9.1f} {r['server_pct']:>8.1f}",
                        flush=True,
                    )
            finally:
                server.stop()
            print(f"        (server up with {args.history:g} s of history in {ready:.0f} s)")
    return 0


def _wait_alerts(url: str, seconds: float) -> None:
    """Until the server's alerts have settled: the same active alerts after two evaluations
    of the group in a row (a server that has just started writes its ALERTS series an
    evaluation or two after it sends them, and at 1,024 nodes an evaluation takes longer
    than the interval, so the alerts with the longer holds come evaluations later)."""
    deadline = time.monotonic() + seconds
    evaluations = 0
    last: tuple[str, frozenset[tuple[str, ...]]] | None = None
    while time.monotonic() < deadline:
        group, alerts = _gputui_group(url)
        active = frozenset(
            tuple(a["labels"].get(k, "") for k in ("alertname", "Hostname", "instance", "gpu"))
            for a in alerts
        )
        if last is None or last[0] != group["lastEvaluation"]:
            evaluations += 1
            settled = last is not None and active and active == last[1]
            if evaluations >= 3 and settled:
                return
            last = (group["lastEvaluation"], active)
        time.sleep(2)


def _rules_file(work: Path, interval: float) -> Path:
    from gputui.advisor.promrules import Terms, engine
    from gputui.exporters.rules_file import rules_yaml

    terms = Terms(interval)
    path = work / "gputui-rules.yml"
    path.write_text(rules_yaml(engine(terms), terms))
    return path


if __name__ == "__main__":
    raise SystemExit(main())
