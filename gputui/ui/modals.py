"""The keys that open a screen over the panels: help, the rules, a finding, the cluster,
every process, the topology. The panels beneath do no work while one is open and catch
up when it closes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputui.ui import keys
from gputui.ui.processes import AllProcessesScreen, ProcessScreen, SignalScreen
from gputui.ui.screens import (
    ClusterScreen,
    FindingScreen,
    HelpScreen,
    RulesScreen,
    TopologyScreen,
)

if TYPE_CHECKING:
    from gputui.ui.app import GpuTuiApp

#: screens under which the panels are not drawn at all
MODALS = HelpScreen | RulesScreen | FindingScreen | TopologyScreen | SignalScreen
#: screens that follow the frames themselves while shown
LIVE_SCREENS = ClusterScreen | AllProcessesScreen | ProcessScreen


class Modals:
    def __init__(self, app: GpuTuiApp) -> None:
        self._app = app

    def _after(self, _result: object) -> None:
        self._app.redraw()

    def open_finding(self) -> None:
        app = self._app
        at = app.choices.finding_at(len(app.monitor.findings))
        if at is not None:
            app.push_screen(FindingScreen(app.monitor.findings[at], app.palette), self._after)

    def help(self) -> None:
        app = self._app
        help_screen = HelpScreen(keys.BINDINGS, app.palette, replay=app.replay is not None)
        app.push_screen(help_screen, self._after)

    def cluster(self) -> None:
        """Every node as a row, worst first (remote sources); Enter opens its GPUs."""
        app = self._app
        app.push_screen(ClusterScreen(app.monitor, app.palette), self._after_cluster)

    def _after_cluster(self, gpu: int | None) -> None:
        app = self._app
        app.choose(app.choices if gpu is None else app.choices.show_gpu(gpu))

    def all_processes(self) -> None:
        app = self._app
        app.push_screen(AllProcessesScreen(app), self._after)

    def topology(self) -> None:
        app = self._app
        app.push_screen(TopologyScreen(app.monitor, app.palette), self._after)

    def rules(self) -> None:
        app = self._app
        app.push_screen(RulesScreen(app.monitor.thresholds, app.palette), self._after)
