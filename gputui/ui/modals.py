"""The keys that open a screen over the panels: help, the rules, a finding, the cluster,
every process, the topology. The panels beneath do no work while one is open and catch
up when it closes."""

from __future__ import annotations

from gputui.ui import keys
from gputui.ui.processes import AllProcessesScreen
from gputui.ui.screens import ClusterScreen, FindingScreen, HelpScreen, RulesScreen
from gputui.ui.shell import Shell
from gputui.ui.topology import TopologyScreen

#: screens under which the panels are not drawn at all
MODALS = HelpScreen | RulesScreen | FindingScreen | TopologyScreen
#: screens that follow the frames themselves while shown
LIVE_SCREENS = ClusterScreen | AllProcessesScreen


class ModalKeys(Shell):
    def action_open_finding(self) -> None:
        at = self.choices.finding_at(len(self.monitor.findings))
        if at is not None:
            self.push_screen(FindingScreen(self.monitor.findings[at]), self._after_modal)

    def action_help(self) -> None:
        self.push_screen(
            HelpScreen(keys.BINDINGS, replay=self.replay is not None), self._after_modal
        )

    def action_cluster(self) -> None:
        """Every node as a row, worst first (remote sources); Enter opens its GPUs."""
        p = self.palette
        colours = {"ok": p.ok, "warn": p.warn, "crit": p.crit, "dim": "dim"}
        self.push_screen(ClusterScreen(self.monitor, colours), self._after_cluster)

    def _after_cluster(self, gpu: int | None) -> None:
        self._choose(self.choices if gpu is None else self.choices.show_gpu(gpu))

    def action_all_processes(self) -> None:
        self.push_screen(AllProcessesScreen(self.monitor, self.palette), self._after_modal)

    def action_topology(self) -> None:
        self.push_screen(TopologyScreen(self.monitor), self._after_modal)

    def action_rules(self) -> None:
        self.push_screen(RulesScreen(self.monitor.advisor.thresholds), self._after_modal)
