"""The main screen: the panels' keys and clicks. Each action asks a Textual-free key group
in ``gputui.view`` (navigation, process_keys, replay_keys, snapshot_key) for the new choices
or an effect, and the shell (the app) carries it out. The panels themselves are the app's:
it draws them on every frame."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from textual.binding import Binding, BindingType
from textual.command import Provider
from textual.screen import Screen

from gputui.ui import compat, keys
from gputui.ui.lines import LineView
from gputui.ui.paint import TEXTUAL_THEMES
from gputui.ui.process_actions import ProcessActions
from gputui.ui.shell import Shell
from gputui.view import navigation, process_keys, snapshot_key
from gputui.view.effects import OpenFinding, OpenPage, Page
from gputui.view.replay_keys import ReplayKeys
from gputui.view.screen import gpu_lines


def _commands() -> type[Provider]:
    """gputui's palette commands, loaded when the palette first opens."""
    from gputui.ui.commands import GpuTuiCommands

    return GpuTuiCommands


# The screen is covered edge to edge by the panels (placed on it, no containers between):
# it has nothing of its own to show, yet the compositor asks it for every repainted row,
# and a plain widget answers through the styles cache. compat.blank sets Textual's BLANK,
# its way of saying "only my background", answered at once (unless
# GPUTUI_TEXTUAL_PUBLIC=1). Nothing here takes focus: Tab and Shift+Tab move between GPUs,
# as ← and → do; the screen's own focus keys are not inherited, and its copy key comes
# first: Ctrl+C copies text selected with the mouse, and quits where there is none.
@compat.blank
class MainScreen(ProcessActions, Screen[int], inherit_bindings=False):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c,super+c", "screen.copy_text", "copy selected text", show=False),
        *keys.SCREEN_BINDINGS,
    ]
    COMMANDS: ClassVar[set[type[Provider] | Any]] = {_commands}

    def __init__(
        self,
        shell: Shell,
        *,
        snapshot_dir: Path,
        keep_secrets: bool,
        replay_keys: ReplayKeys | None,
    ) -> None:
        super().__init__(id="_default")
        self.shell = shell
        self.navigation = navigation.Navigation()
        self.snapshot_dir = snapshot_dir
        self.keep_secrets = keep_secrets
        self.replay_keys = replay_keys
        self.paging = False  # PgUp PgDn page the GPUs (check_action asks)

    def update_paging(self) -> bool:
        """Whether PgUp PgDn page the GPUs now: the list hides some and the last move was
        not in the process table. True when that changed (the footer shows it)."""
        shell = self.shell
        now = navigation.paging(gpu_lines(shell.monitor), shell.laid_out, shell.choices)
        changed, self.paging = now != self.paging, now
        return changed

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # PgUp PgDn: the GPU list's pages while it hides GPUs, else the process table's
        if action in ("gpu_page", "skip"):
            return self.paging is (action == "gpu_page")
        return keys.in_mode(action, replay=self.replay_keys is not None)

    def on_line_view_clicked(self, message: LineView.Clicked) -> None:
        shell = self.shell
        shell.apply(
            navigation.clicked(shell.choices, shell.monitor.devices, message.key, message.x)
        )

    # -- GPUs, findings, what the panels show ----------------------------------------------
    def action_gpu(self, step: int) -> None:
        shell = self.shell
        shell.choose(self.navigation.gpu(shell.choices, shell.monitor.devices, step))

    def action_jump(self, index: int) -> None:
        shell = self.shell
        shell.choose(self.navigation.jump(shell.choices, shell.monitor.devices, index))

    def action_gpu_page(self, step: int) -> None:
        shell = self.shell
        shell.choose(navigation.page(shell.choices, shell.monitor.devices, shell.laid_out, step))

    def action_gpu_edge(self, step: int) -> None:
        shell = self.shell
        shell.choose(navigation.edge(shell.choices, shell.monitor.devices, step))

    def action_overview(self) -> None:
        self.shell.choose(self.shell.choices.toggle_overview())

    def action_finding(self, step: int) -> None:
        shell = self.shell
        shell.choose(navigation.finding(shell.choices, len(shell.monitor.findings), step))

    def action_goto_finding(self) -> None:
        shell = self.shell
        shell.choose(navigation.goto_finding(shell.choices, shell.monitor.findings))

    def action_window(self) -> None:
        self.shell.choose(self.shell.choices.next_window())

    def action_open_finding(self) -> None:
        """Enter: the selected process's page right after a move in the process table,
        else the selected finding in full."""
        shell = self.shell
        choices, findings = shell.choices, shell.monitor.findings
        if choices.in_table and process_keys.selected(choices, self._processes(), False):
            self.action_inspect()
            return
        at = choices.finding_at(len(findings))
        if at is not None:
            shell.apply(OpenFinding(findings[at]))

    # -- the process table (the rest in ProcessActions) ------------------------------------
    def action_all_gpus(self) -> None:
        self.shell.choose(process_keys.toggle_all(self.shell.choices))

    def action_clear(self) -> None:
        self.shell.choose(process_keys.clear(self.shell.choices))

    # -- pages over the panels -------------------------------------------------------------
    def action_help(self) -> None:
        self.shell.apply(OpenPage(Page.HELP))

    def action_rules(self) -> None:
        self.shell.apply(OpenPage(Page.RULES))

    def action_topology(self) -> None:
        self.shell.apply(OpenPage(Page.TOPOLOGY))

    def action_cluster(self) -> None:
        self.shell.apply(navigation.cluster(self.shell.monitor.devices))

    def action_all_processes(self) -> None:
        self.shell.apply(OpenPage(Page.ALL_PROCESSES))

    def action_snapshot(self) -> None:
        shell = self.shell
        saved = snapshot_key.save(shell.monitor, self.snapshot_dir, self._svg, self.keep_secrets)
        shell.apply(saved)

    def _svg(self) -> str:
        """The screen as SVG for a file that travels: credentials masked, local fonts only."""
        from gputui.ui.svg import local_fonts_only

        shell = self.shell
        shown = shell.choices
        shell.choose(replace(shown, mask=not self.keep_secrets))
        try:
            svg = self.app.export_screenshot(title="gputui snapshot")
        finally:
            shell.choose(shown)
        return local_fonts_only(svg)

    # -- the app's own keys ----------------------------------------------------------------
    def action_quit(self) -> None:
        self.app.exit(0)

    def action_theme(self) -> None:
        """b: Textual's light theme, or back to its dark one; the panels follow the theme
        (the app repaints them in its colours when it changes)."""
        app = self.app
        app.theme = TEXTUAL_THEMES["dark" if not app.current_theme.dark else "light"]

    def action_pause(self) -> None:
        self.shell.toggle_pause()

    def action_interval(self, step: int) -> None:
        self.shell.change_interval(step)

    def action_command_palette(self) -> None:
        self.app.action_command_palette()

    # -- a recording's keys (check_action offers them only in a replay) -------------------
    def action_step(self) -> None:
        if self.replay_keys is not None:
            self.replay_keys.step()

    def action_seek(self, seconds: float) -> None:
        if self.replay_keys is not None:
            self.replay_keys.seek_by(seconds)

    def action_speed(self, factor: float) -> None:
        if self.replay_keys is not None:
            self.replay_keys.speed(factor)
