"""The keys and clicks that move through GPUs and findings and change what the panels
show (window, overview). Each is a pure step of ``view.choices.Choices``; the app
shows the result."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from gputui.ui.lines import LineView
from gputui.view.cells import CardsKey, FindingKey, GpuKey, KeysKey, PidKey
from gputui.view.choices import Choices
from gputui.view.screen import gpu_lines

if TYPE_CHECKING:
    from gputui.ui.app import GpuTuiApp

#: a digit typed within this long after the last one adds to it: 1 then 2 is GPU 12
DIGITS_WITHIN_S = 0.6
#: a page of GPUs before the panels are first laid out
PAGE_WITHOUT_LIST = 8


class Navigation:
    def __init__(self, app: GpuTuiApp) -> None:
        self._app = app
        self.clock: Callable[[], float] = time.monotonic
        self._digits = ""  # the digits typed so far, while more may follow
        self._digit_at = 0.0
        self.paging = False  # PgUp PgDn page the GPUs (the app's check_action asks)

    def _indices(self) -> list[int]:
        return [d.index for d in self._app.monitor.devices]

    def _choose_gpu(self, choices: Choices) -> None:
        """A move in the GPU list: the keys that follow the last move (Enter, PgUp PgDn)
        now mean the GPUs, not the process table."""
        app = self._app
        app.process_keys.in_table = False
        app.choose(choices)

    def gpu(self, step: int) -> None:
        self._choose_gpu(self._app.choices.step_gpu(self._indices(), step))

    def jump(self, index: int) -> None:
        """Key N: GPU N. A digit typed within ``DIGITS_WITHIN_S`` of the one before adds to
        it where the node has such a GPU (1 then 2: GPU 12); else it is a GPU of its own,
        so a node of ten GPUs or fewer answers every key at once, as before."""
        indices, now = self._indices(), self.clock()
        typed = str(index)
        if 0 <= index <= 9 and self._digits and now - self._digit_at <= DIGITS_WITHIN_S:
            longer = self._digits + typed
            if not longer.startswith("0") and int(longer) in indices:
                typed = longer
        self._digits, self._digit_at = typed, now
        self._choose_gpu(self._app.choices.jump(indices, int(typed)))

    def edge(self, step: int) -> None:
        """Home, End: the first or the last GPU."""
        indices = self._indices()
        if indices:
            self._choose_gpu(self._app.choices.jump(indices, indices[-1 if step > 0 else 0]))

    def page(self, step: int) -> None:
        """PgUp, PgDn: as many GPUs on as the list shows between its two cut markers."""
        laid_out = self._app.panels.laid_out
        rows = laid_out.gpus.inner[1] - 3 if laid_out is not None else PAGE_WITHOUT_LIST
        moved = self._app.choices.move_gpu(self._indices(), step * max(1, rows))
        self._choose_gpu(moved)

    def update_paging(self) -> bool:
        """Whether PgUp PgDn page the GPUs now: the list hides some and the last move was
        not in the process table. True when that changed (the footer shows it)."""
        app = self._app
        laid_out = app.panels.laid_out
        cut = laid_out is not None and gpu_lines(app.monitor) > laid_out.gpus.inner[1] - 1
        paging = cut and not app.process_keys.in_table
        changed, self.paging = paging != self.paging, paging
        return changed

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
            self._choose_gpu(app.choices.jump(self._indices(), key.index))
        elif isinstance(key, FindingKey):
            app.process_keys.in_table = False
            app.choose(replace(app.choices, finding=key.position))
        elif isinstance(key, PidKey):
            app.process_keys.in_table = True
            app.choose(app.choices.with_procs(replace(app.choices.procs, pid=key.pid)))
        elif isinstance(key, CardsKey) and (gpu := key.gpu_at(message.x)) is not None:
            self._choose_gpu(app.choices.jump(self._indices(), gpu))
        elif isinstance(key, KeysKey) and (press := key.key_at(message.x)) is not None:
            app.simulate_key(press)  # the footer's key, pressed
