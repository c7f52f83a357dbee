"""What the user picked with the keys (GPU, finding, window, overview, the process table),
and how each key changes it: pure, so navigation is tested without an app."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field, replace

from gputui.core.records import frozen
from gputui.view.detail import WINDOWS_S
from gputui.view.process_table import ProcessChoices


@frozen
class Choices:
    selected: int = 0  # a GPU index as NVML numbers it
    finding: int = 0  # a position in the advisor's list
    overview: bool = False
    window: int = 0  # into WINDOWS_S
    procs: ProcessChoices = field(default_factory=ProcessChoices)
    mask: bool = True  # credentials in command lines masked (--keep-secrets shows them)
    #: the user's last move was into the process table (↓ ↑, a click on a process): Enter
    #: then opens the selected process, as in nvitop, and PgUp PgDn page the processes
    in_table: bool = False

    @property
    def window_s(self) -> int:
        return WINDOWS_S[self.window]

    def step_gpu(self, indices: Sequence[int], step: int) -> Choices:
        """The next or previous GPU, wrapping around."""
        if not indices:
            return self
        at = indices.index(self.selected) if self.selected in indices else 0
        return replace(self, selected=indices[(at + step) % len(indices)])

    def move_gpu(self, indices: Sequence[int], step: int) -> Choices:
        """``step`` GPUs on in the list, stopping at the first and the last (a page key)."""
        if not indices:
            return self
        at = indices.index(self.selected) if self.selected in indices else 0
        return replace(self, selected=indices[max(0, min(len(indices) - 1, at + step))])

    def jump(self, indices: Sequence[int], index: int) -> Choices:
        """GPU ``index`` (key 3 is GPU 3); a GPU this machine lacks changes nothing."""
        return replace(self, selected=index) if index in indices else self

    def show_gpu(self, index: int) -> Choices:
        """That GPU in the detail view (from a finding, a node, a card)."""
        return replace(self, selected=index, overview=False)

    def step_finding(self, count: int, step: int) -> Choices:
        if not count:
            return self
        return replace(self, finding=(min(self.finding, count - 1) + step) % count)

    def finding_at(self, count: int) -> int | None:
        """The selected finding's position now (the list may have shrunk)."""
        return min(self.finding, count - 1) if count else None

    def toggle_overview(self) -> Choices:
        return replace(self, overview=not self.overview)

    def next_window(self) -> Choices:
        return replace(self, window=(self.window + 1) % len(WINDOWS_S))

    def with_procs(self, procs: ProcessChoices) -> Choices:
        return replace(self, procs=procs)
