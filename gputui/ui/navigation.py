"""The keys and clicks that move through GPUs and findings and change what the panels
show (window, overview). Each is a pure step of ``view.choices.Choices``; the app
shows the result."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from gputui.ui.lines import LineView
from gputui.view.cells import CardsKey, FindingKey, GpuKey, KeysKey, PidKey

if TYPE_CHECKING:
    from gputui.ui.app import GpuTuiApp


class Navigation:
    def __init__(self, app: GpuTuiApp) -> None:
        self._app = app

    def _indices(self) -> list[int]:
        return [d.index for d in self._app.monitor.devices]

    def gpu(self, step: int) -> None:
        app = self._app
        app.choose(app.choices.step_gpu(self._indices(), step))

    def jump(self, index: int) -> None:
        app = self._app
        app.choose(app.choices.jump(self._indices(), index))

    def overview(self) -> None:
        self._app.choose(self._app.choices.toggle_overview())

    def finding(self, step: int) -> None:
        app = self._app
        app.process_keys.in_table = False
        app.choose(app.choices.step_finding(len(app.monitor.findings), step))

    def window(self) -> None:
        self._app.choose(self._app.choices.next_window())

    def goto_finding(self) -> None:
        app = self._app
        at = app.choices.finding_at(len(app.monitor.findings))
        gpu = app.monitor.findings[at].gpu if at is not None else None
        if gpu is not None:
            app.choose(app.choices.show_gpu(gpu))

    def clicked(self, message: LineView.Clicked) -> None:
        """The mouse, for those who reach for it: a row's key says what it stands for."""
        app, key = self._app, message.key
        if isinstance(key, GpuKey):
            app.choose(app.choices.jump(self._indices(), key.index))
        elif isinstance(key, FindingKey):
            app.process_keys.in_table = False
            app.choose(replace(app.choices, finding=key.position))
        elif isinstance(key, PidKey):
            app.process_keys.in_table = True
            app.choose(app.choices.with_procs(replace(app.choices.procs, pid=key.pid)))
        elif isinstance(key, CardsKey) and (gpu := key.gpu_at(message.x)) is not None:
            app.choose(app.choices.jump(self._indices(), gpu))
        elif isinstance(key, KeysKey) and (press := key.key_at(message.x)) is not None:
            app.simulate_key(press)  # the footer's key, pressed
