"""The process table's actions, for every screen with a process table: the main screen
(the selected GPU's processes, or every GPU's with ``v``) and the every-process page. The
choices and effects come from ``view.process_keys``; the shell carries them out."""

from __future__ import annotations

from typing import ClassVar

from gputui.core.model import ProcessSample
from gputui.ui.shell import Shell
from gputui.view import process_keys
from gputui.view.effects import OpenPage, Page


class ProcessActions:
    shell: Shell
    #: the table lists every GPU's processes whatever the main screen's choice (a page)
    every_gpu: ClassVar[bool] = False

    def _processes(self) -> tuple[ProcessSample, ...]:
        frame = self.shell.monitor.latest
        return frame.processes if frame is not None else ()

    def action_process(self, step: int) -> None:
        shell = self.shell
        shell.choose(process_keys.move(shell.choices, self._processes(), step, self.every_gpu))

    def action_skip(self, step: int) -> None:
        self.action_process(step)

    def action_sort(self) -> None:
        choices = self.shell.choices
        self.shell.choose(choices.with_procs(choices.procs.next_sort()))

    def action_sort_by(self, key: str) -> None:
        choices = self.shell.choices
        self.shell.choose(choices.with_procs(choices.procs.sort_by(key)))

    def action_user(self) -> None:
        self.shell.choose(process_keys.next_user(self.shell.choices, self._processes()))

    def action_filter(self) -> None:
        self.shell.apply(OpenPage(Page.FILTER))

    def action_inspect(self) -> None:
        shell = self.shell
        shell.apply(process_keys.inspect(shell.choices, self._processes(), self.every_gpu))

    def action_tag(self) -> None:
        shell = self.shell
        shell.apply(process_keys.tag(shell.choices, self._processes(), self.every_gpu))

    def action_signal(self, signum: int) -> None:
        shell = self.shell
        access, label = shell.process_access, shell.monitor.source.label
        processes = self._processes()
        asked = process_keys.signal(shell.choices, processes, signum, self.every_gpu, access, label)
        shell.apply(asked)
