"""The command palette (Ctrl+P): gputui's actions by name, next to the two of Textual's
own commands that work here (the theme, quit).

Each command runs the very action its key runs (gputui/ui/keys.py) on the main screen,
through ``run_action``: the palette adds names, never behaviour of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, Final, NamedTuple

from textual.actions import parse
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape
from textual.types import IgnoreReturnCallbackType

from gputui.core.model import DeviceInfo
from gputui.ui.keys import BINDINGS, binding_keys
from gputui.ui.shell import OnShell


class PaletteCommand(NamedTuple):
    """A command as the palette lists it: its name, the action it runs, a line of help."""

    name: str
    action: str
    help: str


#: (name, action) in the palette's order; "Go to GPU N" rows go after the first
_BEFORE_GPUS: Final = (("Snapshot: save JSON, Markdown, SVG and the report", "snapshot"),)
_AFTER_GPUS: Final = (
    ("Next finding", "finding(1)"),
    ("Previous finding", "finding(-1)"),
    ("Open the selected finding", "open_finding"),
    ("History window: next", "window"),
    ("Sort processes: next", "sort"),
    ("Advisor rules", "rules"),
    ("Topology", "topology"),
    ("Cluster view", "cluster"),
    ("Overview", "overview"),
    ("Pause / resume", "pause"),
    ("All processes", "all_processes"),
    ("Help", "help"),
)


def _bound_to(action: str) -> Binding | None:
    return next((b for b in BINDINGS if b.action == action), None)


def _key_help(action: str) -> str:
    """'key s: snapshot', from the binding of ``action`` (escaped: the palette reads markup)."""
    binding = _bound_to(action)
    if binding is None:
        return ""
    keys = " / ".join(binding_keys(binding))
    return escape(f"key {keys}: {binding.description}" if binding.description else f"key {keys}")


def palette_commands(devices: Sequence[DeviceInfo]) -> list[PaletteCommand]:
    """Every command of the palette, for a monitor of ``devices``.

    "Go to GPU N" runs ``jump(N)``, N the GPU's index (as key N does for GPUs 0 to 9): the
    app selects the device of that index in the monitor's list, and ignores one it lacks."""
    commands = [PaletteCommand(name, action, _key_help(action)) for name, action in _BEFORE_GPUS]
    for device in devices:
        action = f"jump({device.index})"
        where = f" on {device.node}" if device.node else ""  # remote: GPUs of every node
        help_text = escape(f"{device.name}{where}")  # outside text: never markup
        if _bound_to(action) is not None:
            help_text += f" · {_key_help(action)}"
        commands.append(PaletteCommand(f"Go to GPU {device.index}", action, help_text))
    commands += [PaletteCommand(name, action, _key_help(action)) for name, action in _AFTER_GPUS]
    return commands


def system_commands(app: App[Any]) -> list[SystemCommand]:
    """Textual's palette commands that fit gputui. Left out: Screenshot (it writes to
    ~/Downloads, which a server may lack; gputui's snapshot, s, writes the screen's SVG
    and more), Keys (Textual's key panel, over gputui's own help, ?), and Maximize /
    Minimize (a page's scrolling panel, already as large as the screen allows)."""
    return [
        SystemCommand("Theme", "Change the colours: every panel follows", app.action_change_theme),
        SystemCommand("Quit", _key_help("quit") or "Quit gputui", lambda: app.exit(0)),
    ]


class GpuTuiCommands(Provider):
    """gputui's actions in the command palette (the main screen's ``COMMANDS``)."""

    def _commands(self) -> list[PaletteCommand]:
        screen = self.screen  # the main screen: its commands are these (MainScreen.COMMANDS)
        devices: Sequence[DeviceInfo] = ()
        if isinstance(screen, OnShell):
            devices = screen.shell.monitor.devices
        offered = []
        for command in palette_commands(devices):
            _, name, parameters = parse(command.action)
            # Not offered: what the screen refuses now (check_action False: hidden, None:
            # disabled), and an action it does not have (it would do nothing).
            if hasattr(screen, f"action_{name}") and screen.check_action(name, parameters):
                offered.append(command)
        return offered

    def _run(self, action: str) -> IgnoreReturnCallbackType:
        return partial(self.screen.run_action, action)

    async def search(self, query: str) -> Hits:
        """The commands that fuzzy-match ``query``, best first (the palette sorts)."""
        matcher = self.matcher(query)
        for command in self._commands():
            score = matcher.match(command.name)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(command.name),
                    self._run(command.action),
                    text=command.name,
                    help=command.help,
                )

    async def discover(self) -> Hits:
        """Every command, in the palette's order, before anything is typed."""
        for command in self._commands():
            yield DiscoveryHit(
                command.name, self._run(command.action), text=command.name, help=command.help
            )
