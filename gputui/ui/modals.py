"""The keys that open a screen over the panels: help, the rules, a finding, the cluster,
every process, the topology. The panels beneath do no work while one is open and catch
up when it closes."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from textual.screen import Screen

from gputui.ui import keys

if TYPE_CHECKING:
    from gputui.ui.app import GpuTuiApp


class Following(Protocol):
    """A screen that follows the frames itself while shown."""

    def refresh_rows(self) -> None: ...


@cache
def overlays() -> tuple[tuple[type[Screen[Any]], ...], tuple[type[Following], ...]]:
    """The screens under which the panels are not drawn at all, and those that follow the
    frames themselves while shown. Their modules load with the first screen over the
    panels (the first frame does not need them)."""
    from gputui.ui.processes import AllProcessesScreen, ProcessScreen, SignalScreen
    from gputui.ui.screens import (
        ClusterScreen,
        FindingScreen,
        HelpScreen,
        RulesScreen,
        TopologyScreen,
    )

    hiding = (HelpScreen, RulesScreen, FindingScreen, TopologyScreen, SignalScreen)
    return hiding, (ClusterScreen, AllProcessesScreen, ProcessScreen)


class Modals:
    def __init__(self, app: GpuTuiApp) -> None:
        self._app = app

    def _after(self, _result: object) -> None:
        self._app.redraw()

    def open_finding(self) -> None:
        from gputui.ui.screens import FindingScreen

        app = self._app
        at = app.choices.finding_at(len(app.monitor.findings))
        if at is not None:
            app.push_screen(FindingScreen(app.monitor.findings[at], app.palette), self._after)

    def help(self) -> None:
        from gputui.ui.screens import HelpScreen

        app = self._app
        help_screen = HelpScreen(keys.BINDINGS, app.palette, replay=app.replay is not None)
        app.push_screen(help_screen, self._after)

    def cluster(self) -> None:
        """Every node as a row, worst first (remote sources); Enter opens its GPUs."""
        from gputui.ui.screens import ClusterScreen

        app = self._app
        app.push_screen(ClusterScreen(app.monitor, app.palette), self._after_cluster)

    def _after_cluster(self, gpu: int | None) -> None:
        app = self._app
        app.choose(app.choices if gpu is None else app.choices.show_gpu(gpu))

    def all_processes(self) -> None:
        from gputui.ui.processes import AllProcessesScreen

        app = self._app
        app.push_screen(AllProcessesScreen(app), self._after)

    def topology(self) -> None:
        from gputui.ui.screens import TopologyScreen

        app = self._app
        app.push_screen(TopologyScreen(app.monitor, app.palette), self._after)

    def rules(self) -> None:
        from gputui.ui.screens import RulesScreen

        app = self._app
        app.push_screen(RulesScreen(app.monitor.thresholds, app.palette), self._after)
