"""The screens over the panels: which hide them, which follow the frames while shown, and
how each opens from the effect a key returned (help, the rules, a finding, the cluster,
every process, the topology, a process, a signal's confirmation, the filter). The panels
beneath do no work while one is open and catch up when it closes. The pages' modules load
with the first of them (the first frame does not need them)."""

from __future__ import annotations

from functools import cache
from typing import Any, Protocol

from textual.screen import Screen

from gputui.ui import keys
from gputui.ui.shell import Shell
from gputui.view.effects import AskSignal, AskSignals, OpenFinding, OpenPage, OpenProcess, Page


class Following(Protocol):
    """A screen that follows the frames itself while shown."""

    def refresh_rows(self) -> None: ...


@cache
def overlays() -> tuple[tuple[type[Screen[Any]], ...], tuple[type[Following], ...]]:
    """The screens under which the panels are not drawn at all, and those that follow the
    frames themselves while shown."""
    from gputui.ui.processes import (
        AllProcessesScreen,
        ProcessScreen,
        SignalScreen,
        SignalsScreen,
    )
    from gputui.ui.screens import (
        ClusterScreen,
        FindingScreen,
        HelpScreen,
        RulesScreen,
        TopologyScreen,
    )

    hiding = (HelpScreen, RulesScreen, FindingScreen, TopologyScreen, SignalScreen, SignalsScreen)
    return hiding, (ClusterScreen, AllProcessesScreen, ProcessScreen)


def open_page(
    shell: Shell, effect: OpenPage | OpenFinding | OpenProcess | AskSignal | AskSignals
) -> None:
    """The page ``effect`` asks for, over the current screen; the panels are drawn again
    when it closes."""
    if isinstance(effect, OpenFinding):
        from gputui.ui.screens import FindingScreen

        shell.push_screen(FindingScreen(effect.finding, shell.palette), _redraw(shell))
    elif isinstance(effect, OpenProcess):
        from gputui.ui.processes import ProcessScreen

        shell.push_screen(ProcessScreen(shell, effect.pid, effect.started), _redraw(shell))
    elif isinstance(effect, AskSignal):
        _ask(shell, effect)
    elif isinstance(effect, AskSignals):
        _ask_each(shell, effect)
    else:
        _open(shell, effect.page)


def _redraw(shell: Shell) -> Any:
    return lambda _result: shell.redraw()


def _open(shell: Shell, page: Page) -> None:
    from gputui.ui import processes, screens

    after = _redraw(shell)
    if page is Page.HELP:
        shell.push_screen(screens.HelpScreen(keys.BINDINGS, shell.palette, shell.replaying), after)
    elif page is Page.RULES:
        shell.push_screen(screens.RulesScreen(shell.monitor.thresholds, shell.palette), after)
    elif page is Page.TOPOLOGY:
        shell.push_screen(screens.TopologyScreen(shell.monitor, shell.palette), after)
    elif page is Page.CLUSTER:  # every node as a row, worst first; Enter opens its GPUs

        def opened(gpu: int | None) -> None:
            shell.choose(shell.choices if gpu is None else shell.choices.show_gpu(gpu))

        shell.push_screen(screens.ClusterScreen(shell.monitor, shell.palette), opened)
    elif page is Page.ALL_PROCESSES:
        shell.push_screen(processes.AllProcessesScreen(shell), after)
    else:
        shell.push_screen(processes.FilterScreen(shell))


def _ask(shell: Shell, request: AskSignal) -> None:
    """The confirmation; the answer goes through the access it was asked of."""
    from gputui.ui.processes import SignalScreen
    from gputui.view.process_keys import answer

    access = shell.process_access
    if access is None:  # ask_signal asks only where there is one
        return

    def answered(send: bool | None) -> None:
        shell.apply(answer(request, send, access))

    root, mask = access.is_root, shell.choices.mask
    screen = SignalScreen(request.process, request.name, root, shell.palette, mask)
    shell.push_screen(screen, answered)


def _ask_each(shell: Shell, request: AskSignals) -> None:
    """The one confirmation for every tagged process; on yes each is sent the signal
    through the access, and the tags are spent."""
    from gputui.ui.processes import SignalsScreen
    from gputui.view.process_keys import answer_each, untag_all

    access = shell.process_access
    if access is None:  # ask_signals asks only where there is one
        return

    def answered(send: bool | None) -> None:
        shell.apply(answer_each(request, send, access))
        if send:
            shell.choose(untag_all(shell.choices))

    screen = SignalsScreen(request, access.is_root, shell.palette, shell.choices.mask)
    shell.push_screen(screen, answered)
