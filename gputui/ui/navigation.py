"""The keys and clicks that move through GPUs and findings and change what the panels
show (window, sort, overview). Each is a pure step of ``view.choices.Choices``; the app
shows the result."""

from __future__ import annotations

from dataclasses import replace

from gputui.ui.lines import LineView
from gputui.ui.shell import Shell
from gputui.view.cells import CardsKey, FindingKey, GpuKey


class NavigationKeys(Shell):
    def _indices(self) -> list[int]:
        return [d.index for d in self.monitor.devices]

    def action_gpu(self, step: int) -> None:
        self._choose(self.choices.step_gpu(self._indices(), step))

    def action_jump(self, index: int) -> None:
        self._choose(self.choices.jump(self._indices(), index))

    def action_overview(self) -> None:
        self._choose(self.choices.toggle_overview())

    def action_finding(self, step: int) -> None:
        self._choose(self.choices.step_finding(len(self.monitor.findings), step))

    def action_window(self) -> None:
        self._choose(self.choices.next_window())

    def action_sort(self) -> None:
        self._choose(self.choices.next_sort())

    def action_goto_finding(self) -> None:
        at = self.choices.finding_at(len(self.monitor.findings))
        gpu = self.monitor.findings[at].gpu if at is not None else None
        if gpu is not None:
            self._choose(self.choices.show_gpu(gpu))

    def on_line_view_clicked(self, message: LineView.Clicked) -> None:
        """The mouse, for those who reach for it: a row's key says what it stands for."""
        key = message.key
        if isinstance(key, GpuKey):
            self._choose(self.choices.jump(self._indices(), key.index))
        elif isinstance(key, FindingKey):
            self._choose(replace(self.choices, finding=key.position))
        elif isinstance(key, CardsKey) and (gpu := key.gpu_at(message.x)) is not None:
            self._choose(self.choices.jump(self._indices(), gpu))
