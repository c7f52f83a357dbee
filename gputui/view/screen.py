"""The whole main screen as view-model contents: the monitor's state and what the user
chose (GPU, finding, window, sort) in, one Panel per panel out, for the layout's sizes."""

from __future__ import annotations

from collections.abc import Sequence

from gputui.core.judgement import grouped
from gputui.core.model import DeviceInfo, Frame
from gputui.core.names import NoteKind
from gputui.core.records import frozen
from gputui.core.units import fmt_age
from gputui.sampling.monitor import Monitor
from gputui.view.advisor import advisor
from gputui.view.cells import Panel, Row
from gputui.view.choices import Choices
from gputui.view.detail import View, detail
from gputui.view.gpu_list import critical_count, gpu_list
from gputui.view.host_line import host_row
from gputui.view.layout import Layout, layout
from gputui.view.process_table import Line, listing
from gputui.view.processes import namespace_note, processes, reads_processes, workload_of
from gputui.view.timeline import Timeline


@frozen
class Contents:
    layout: Layout
    host: Row | None
    gpus: Panel | None = None
    detail: Panel | None = None
    advisor: Panel | None = None
    procs: Panel | None = None
    overview: Panel | None = None


def gpu_lines(monitor: Monitor) -> int:
    """The GPU list's rows: a line per GPU and one per node heading."""
    nodes = {d.node for d in monitor.devices if d.node is not None}
    return len(monitor.devices) + len(nodes)


def listed(monitor: Monitor, choices: Choices) -> list[Line]:
    """The process table's lines for the latest frame: they size its panel and fill it."""
    frame = monitor.latest
    gpu = None if choices.procs.all_gpus else choices.selected
    return listing(frame.processes, choices.procs, gpu) if frame is not None else []


def screen_layout(
    monitor: Monitor, choices: Choices, width: int, height: int, processes: int
) -> Layout:
    """The panels' sizes; ``processes``: the lines the process table lists."""
    frame = monitor.latest
    host = frame is not None and frame.host is not None
    findings = monitor.findings
    critical = critical_count(findings)
    return layout(width, height, gpu_lines(monitor), len(findings), host, critical, processes)


class ScreenView:
    """Builds the contents; holds only the bucketed history it can reuse between ticks."""

    def __init__(self) -> None:
        self.timeline = Timeline()
        self._advisor_memo: tuple[object, Panel] | None = None

    def contents(
        self, monitor: Monitor, choices: Choices, interval_s: float, width: int, height: int
    ) -> Contents:
        t = monitor.thresholds
        frame = monitor.latest
        lines = listed(monitor, choices)
        box = screen_layout(monitor, choices, width, height, len(lines))
        host = host_row(frame.host, frame.time, t) if box.host and frame is not None else None
        if choices.overview:
            from gputui.view.overview import overview  # loads when first asked for

            w, h = box.overview.inner
            panel = overview(
                frame,
                monitor.devices,
                monitor.findings,
                monitor.history,
                self.timeline,
                monitor.judgement,
                choices.selected,
                w,
                h,
                t,
                choices.window_s,
                interval_s,
            )
            return Contents(box, host, overview=panel)
        device = next((d for d in monitor.devices if d.index == choices.selected), None)
        return Contents(
            box,
            host,
            gpus=gpu_list(
                frame, monitor.devices, monitor.findings, choices.selected, *box.gpus.inner, t
            ),
            detail=self._detail(monitor, device, choices, interval_s, *box.detail.inner),
            advisor=self._advisor(monitor, choices, *box.advisor.inner),
            procs=self._procs(monitor, frame, device, choices, lines, *box.procs.inner),
        )

    def _detail(
        self,
        monitor: Monitor,
        device: DeviceInfo | None,
        choices: Choices,
        interval_s: float,
        width: int,
        height: int,
    ) -> Panel | None:
        if device is None:
            return None
        view = View(choices.window_s, interval_s, width, height)
        return detail(
            monitor.latest, device, monitor.history, self.timeline, view, monitor.thresholds
        )

    def _advisor(self, monitor: Monitor, choices: Choices, width: int, height: int) -> Panel:
        frame = monitor.latest
        notes = tuple(
            n.text for n in (frame.notes if frame else ()) if n.kind is not NoteKind.PID_NAMESPACE
        )
        waiting = frame is None or len(monitor.history) < monitor.thresholds.min_points
        judgement = monitor.judgement
        gathering = judgement.gathering_text() if judgement.gathering else None
        unjudged = tuple(
            f"not judged ({where}): {what}" for where, what in grouped(judgement.not_judged)
        ) + tuple(f"watching ({where}): {what}" for where, what in grouped(judgement.watching))
        findings = monitor.findings
        now = frame.time if frame else None
        # The advisor judges every few seconds and ages are coarse: most ticks the pane
        # would be built only to find it unchanged.
        ages = tuple(fmt_age(now - f.since) for f in findings) if now is not None else None
        key = (findings, choices.finding, ages, waiting, width, height, notes, gathering, unjudged)
        memo = self._advisor_memo
        if memo is not None and memo[0] == key:
            return memo[1]
        panel = advisor(
            findings,
            choices.finding,
            now,
            waiting,
            width,
            height,
            notes=notes,
            gathering=gathering,
            unjudged=unjudged,
        )
        self._advisor_memo = (key, panel)
        return panel

    def _procs(
        self,
        monitor: Monitor,
        frame: Frame | None,
        device: DeviceInfo | None,
        choices: Choices,
        lines: Sequence[Line],
        width: int,
        height: int,
    ) -> Panel:
        return processes(
            frame.processes if frame else (),
            namespace_note(lines),
            choices.selected,
            choices.procs,
            frame.time if frame else None,
            width,
            height,
            monitor.thresholds,
            mask=choices.mask,
            lines=lines,
            workload=workload_of(device),
            reads_processes=reads_processes(frame),
        )
