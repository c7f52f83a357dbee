"""A whole cluster's GPUs read from a Prometheus server's HTTP API (Prometheus, Thanos,
VictoriaMetrics, Mimir: anything that serves /api/v1/query and /api/v1/query_range).

One instant query for the current state of every node, and at open one range query for
the history window, both for all DCGM fields of the whole cluster at once (never one per
node); the range step is never finer than the exporter's collect interval. Each answer is
bounded like a scraped page (sources/remote.py: the whole request within the timeout,
10 MB, series and GPU caps); a node whose newest sample is older than ``stale_after_s``
stopped reporting and is said so.
"""

from __future__ import annotations

import base64
import json
import math
import os
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gputui.core.dcgm import BY_NAME
from gputui.core.model import DeviceInfo, Frame, GpuSample, Note
from gputui.core.names import RULES_NEEDING_HOST, NoteKind, SourceKind
from gputui.sources.base import SourceUnavailable
from gputui.sources.remote import (
    MAX_SERIES,
    NodeSeries,
    ScrapeError,
    _device,
    _sample,
    _with_xid,
    blind_note,
    fetch,
)

#: the exporter's default collect interval (dcgm-exporter -c 30000): a finer step only
#: repeats readings
DEFAULT_STEP_S = 30.0
DEFAULT_STALE_S = 300.0
TOKEN_ENV = "GPUTUI_PROMETHEUS_TOKEN"
TOKEN_FILE_ENV = "GPUTUI_PROMETHEUS_TOKEN_FILE"
USER_ENV = "GPUTUI_PROMETHEUS_USER"
PASSWORD_ENV = "GPUTUI_PROMETHEUS_PASSWORD"

Fetcher = Callable[[str, float, dict[str, str]], str]


def auth_headers(env: dict[str, str] | None = None) -> dict[str, str]:
    """Credentials from the environment or a file, never the command line (``ps`` shows it)."""
    env = dict(os.environ) if env is None else env
    token = (env.get(TOKEN_ENV) or "").strip()  # a secret from a file or k8s: a newline
    if not token and env.get(TOKEN_FILE_ENV):
        try:
            token = Path(env[TOKEN_FILE_ENV]).read_text().strip()
        except OSError as exc:
            raise SourceUnavailable(
                f"cannot read the token file named by {TOKEN_FILE_ENV}: {exc.strerror or exc}"
            ) from exc
    if token:
        return {"Authorization": f"Bearer {token}"}
    if env.get(USER_ENV):
        pair = f"{env[USER_ENV]}:{env.get(PASSWORD_ENV, '')}".encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode()}
    return {}


def selector(match: str | None, names: str | None = None) -> str:
    """``{__name__=~"DCGM_FI_...|..."}`` with the user's label matchers added."""
    names = names or "|".join(sorted(BY_NAME))
    extra = (match or "").strip().removeprefix("{").removesuffix("}").strip()
    return "{" + f'__name__=~"{names}"' + (f",{extra}" if extra else "") + "}"


def node_of(labels: dict[str, str]) -> str | None:
    return labels.get("Hostname") or labels.get("hostname") or labels.get("instance")


@dataclass
class _Node:
    name: str
    first_index: int = 0
    gpus: tuple[int, ...] = ()
    blind: Note | None = None
    xid: dict[int, int] = field(default_factory=dict)


def _decode(text: str, kind: str) -> list[dict[str, Any]]:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ScrapeError("the answer is not JSON: not a Prometheus API") from exc
    if not isinstance(document, dict):
        raise ScrapeError("the answer is not a Prometheus API object")
    if document.get("status") != "success":
        kind_ = str(document.get("errorType", "error"))[:64]
        message = str(document.get("error", "no message"))[:512]
        raise ScrapeError(f"the server refused the query ({kind_}: {message})")
    data = document.get("data")
    if not isinstance(data, dict) or data.get("resultType") != kind:
        raise ScrapeError(f"the server did not answer a {kind}")
    result = data.get("result")
    if not isinstance(result, list):
        raise ScrapeError("the server's result is not a list")
    if len(result) > MAX_SERIES:
        raise ScrapeError(f"more than {MAX_SERIES:,} series: refused")
    return [r for r in result if isinstance(r, dict)]


def _point(pair: Any) -> tuple[float, float] | None:
    if not isinstance(pair, list) or len(pair) != 2:
        return None
    try:
        when, value = float(pair[0]), float(pair[1])
    except (TypeError, ValueError, OverflowError):
        return None
    return (when, value) if math.isfinite(when) else None


def _labels(series: dict[str, Any]) -> dict[str, str] | None:
    metric = series.get("metric")
    if not isinstance(metric, dict):
        return None
    return {str(k): str(v) for k, v in metric.items()}


def _bounded(fetcher: Fetcher, url: str, timeout: float, headers: dict[str, str]) -> str:
    """``fetcher`` on a daemon thread, waited for at most ``timeout`` and a grace second:
    the fetch bounds connect, headers and body itself, but not the host name's lookup,
    which a slow resolver can hold for as long as it likes."""
    done: list[str | BaseException] = []
    worker = threading.Thread(
        target=lambda: done.append(_call(fetcher, url, timeout, headers)),
        name="gputui-prometheus",
        daemon=True,
    )
    worker.start()
    worker.join(timeout + 1.0)
    if not done:
        raise ScrapeError(f"no answer within {timeout:g} s (the host name's lookup?)")
    if isinstance(done[0], BaseException):
        raise done[0]
    return done[0]


def _call(
    fetcher: Fetcher, url: str, timeout: float, headers: dict[str, str]
) -> str | BaseException:
    try:
        return fetcher(url, timeout, headers)
    except Exception as exc:  # raised again on the caller's thread
        return exc


class PrometheusSource:
    label = "PROMETHEUS"
    kind = SourceKind.REMOTE

    def __init__(
        self,
        url: str,
        match: str | None = None,
        timeout_s: float = 5.0,
        clock: Callable[[], float] = time.time,
        fetcher: Fetcher = fetch,
        step_s: float = DEFAULT_STEP_S,
        history_s: float = 600.0,
        stale_after_s: float = DEFAULT_STALE_S,
        headers: dict[str, str] | None = None,
        at: float | None = None,
    ) -> None:
        base = url if "://" in url else f"http://{url}"
        self._base = base.rstrip("/")
        self._selector = selector(match)
        self._clock_selector = selector(match, "DCGM_FI_DEV_GPU_TEMP")
        self._timeout = timeout_s
        self._clock = clock
        self._fetch = fetcher
        self._step = step_s
        self._history = history_s
        self._stale = stale_after_s
        self._headers = auth_headers() if headers is None else headers
        #: open() lists the GPUs as they were at this moment (None: now): a report's end
        self._at = at
        self._nodes: dict[str, _Node] = {}
        self._devices: list[DeviceInfo] = []
        self.queries = 0  # how many API requests were made (the benchmark reads it)

    def _get(self, path: str, params: dict[str, str], kind: str) -> list[dict[str, Any]]:
        url = f"{self._base}{path}?{urllib.parse.urlencode(params)}"
        self.queries += 1
        try:
            text = _bounded(self._fetch, url, self._timeout, self._headers)
        except ScrapeError as exc:
            raise ScrapeError(f"{self._base}: {exc}") from exc
        return _decode(text, kind)

    def _sampled_at(self) -> dict[str, float]:
        """Each node's newest sample time, as Prometheus stored it: an instant query's own
        timestamps are the time it was evaluated, not the time the exporter was read, so
        they say nothing of a node whose series froze (remote-write, Thanos...)."""
        # One field every exporter carries: timestamp() drops the metric name, and the
        # series of several names would collide into one label set (an error 422).
        query = f"max by (Hostname, hostname, instance) (timestamp({self._clock_selector}))"
        out: dict[str, float] = {}
        for series in self._get("/api/v1/query", {"query": query}, "vector"):
            labels = _labels(series)
            point = _point(series.get("value"))
            name = node_of(labels) if labels else None
            if name is not None and point is not None and math.isfinite(point[1]):
                out[name[:256]] = max(out.get(name[:256], 0.0), point[1])
        return out

    def _instant(self) -> tuple[dict[str, NodeSeries], dict[str, float], int]:
        params = {"query": self._selector}
        if self._at is not None:
            params["time"] = f"{self._at:.3f}"
        result = self._get("/api/v1/query", params, "vector")
        nodes: dict[str, NodeSeries] = {}
        newest: dict[str, float] = {}
        refused: set[str] = set()  # a node past the caps: dropped alone, the others stay
        unlabelled = 0
        for series in result:
            labels = _labels(series)
            point = _point(series.get("value"))
            name = node_of(labels) if labels else None
            if labels is None or point is None or name is None or "gpu" not in labels:
                unlabelled += 1
                continue
            name = name[:256]
            if name in refused:
                continue
            node = nodes.setdefault(name, NodeSeries())
            try:
                node.add(labels.get("__name__", ""), labels, point[1])
            except ScrapeError:
                refused.add(name)
                del nodes[name]
                continue
            newest[name] = max(newest.get(name, 0.0), point[0])
        return nodes, newest, unlabelled

    def open(self) -> tuple[DeviceInfo, ...]:
        try:
            nodes, _newest, unlabelled = self._instant()
        except ScrapeError as exc:
            raise SourceUnavailable(f"the Prometheus server cannot be read: {exc}.") from exc
        devices: list[DeviceInfo] = []
        for name in sorted(nodes):
            try:
                _host, gpus = nodes[name].finish()
            except ScrapeError:
                continue
            node = self._nodes[name] = _Node(name, first_index=len(devices))
            node.gpus = tuple(sorted(gpus))
            for number in node.gpus:
                devices.append(_device(len(devices), name, gpus[number]))
            node.blind = blind_note(name, gpus.values())
        if not devices:
            why = (
                f" ({unlabelled} series without gpu and Hostname/instance labels)"
                if unlabelled
                else ""
            )
            raise SourceUnavailable(
                f"the Prometheus server at {self._base} has no DCGM series matching "
                f"{self._selector}{why}."
            )
        self._devices = devices
        return tuple(devices)

    def _frame(
        self, now: float, nodes: dict[str, NodeSeries], notes: list[Note], xid: bool = True
    ) -> Frame:
        samples: list[GpuSample] = []
        for name, node in self._nodes.items():
            series = nodes.get(name)
            if series is None:
                continue
            try:
                _host, gpus = series.finish()
            except ScrapeError as exc:
                notes.append(Note(NoteKind.NODE_DOWN, f"node {name}: {exc}"))
                continue
            for offset, number in enumerate(node.gpus):
                entry = gpus.get(number)
                if entry is not None:
                    sample = _sample(node.first_index + offset, entry)
                    if xid:
                        sample = _with_xid(sample, entry, name, node.xid, now, notes)
                    samples.append(sample)
        return Frame(time=now, gpus=tuple(samples), notes=tuple(notes))

    def read(self) -> Frame:
        now = self._clock()
        notes: list[Note] = []
        try:
            nodes, evaluated, unlabelled = self._instant()
            sampled = self._sampled_at()
        except ScrapeError as exc:
            notes.append(Note(NoteKind.NODE_DOWN, f"the Prometheus server: {exc}"))
            return Frame(time=now, gpus=(), notes=tuple(notes))
        for name, node in self._nodes.items():
            # Staleness by the server's own clock: its evaluation time against the node's
            # newest stored sample, so a skewed local clock hides no node and flags none.
            age = (evaluated.get(name, 0.0) - sampled[name]) if name in sampled else None
            if name not in nodes:
                notes.append(Note(NoteKind.NODE_DOWN, f"node {name} stopped reporting"))
            elif age is not None and age > self._stale:
                notes.append(
                    Note(NoteKind.NODE_DOWN, f"node {name} stopped reporting {age:.0f} s ago")
                )
                del nodes[name]
            elif node.blind is not None:
                notes.append(node.blind)
        if unlabelled:
            notes.append(
                Note(
                    NoteKind.GENERAL,
                    f"{unlabelled} series without gpu and Hostname/instance labels ignored",
                )
            )
        notes.append(
            Note(
                NoteKind.RULES_BLIND,
                "Prometheus source: no process or host readings, so these rules cannot run: "
                + ", ".join(RULES_NEEDING_HOST),
            )
        )
        return self._frame(now, nodes, notes)

    def backfill(self) -> tuple[Frame, ...]:
        """The history window as frames, from one range query for the whole cluster."""
        end = self._clock()
        try:
            frames = self.range_frames(end - self._history, end, self._step)
        except ScrapeError:
            return ()
        return tuple(frame for frame in frames if frame.time < end)

    def range_frames(self, start: float, end: float, step: float) -> tuple[Frame, ...]:
        """The frames from ``start`` to ``end``, ``step`` apart: one range query for the
        whole cluster (the caller keeps it within one answer's bounds). Raises ScrapeError
        naming the server."""
        result = self._get(
            "/api/v1/query_range",
            {
                "query": self._selector,
                "start": f"{start:.3f}",
                "end": f"{end:.3f}",
                "step": f"{step:g}",
            },
            "matrix",
        )
        by_time: dict[float, dict[str, NodeSeries]] = {}
        points = 0
        for series in result:
            labels = _labels(series)
            name = node_of(labels) if labels else None
            values = series.get("values")
            if labels is None or name is None or not isinstance(values, list):
                continue
            for pair in values:
                point = _point(pair)
                if point is None:
                    continue
                points += 1
                if points > MAX_SERIES * 4:
                    raise ScrapeError(f"more than {MAX_SERIES * 4:,} values in one answer")
                nodes = by_time.setdefault(point[0], {})
                node = nodes.setdefault(name[:256], NodeSeries())
                try:
                    node.add(labels.get("__name__", ""), labels, point[1])
                except ScrapeError:  # a node past the caps: its history is left out
                    continue
        return tuple(self._frame(when, by_time[when], [], xid=False) for when in sorted(by_time))

    def close(self) -> None:
        pass
