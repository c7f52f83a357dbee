"""The keys and clicks that move through GPUs and findings and change what the panels
show (window, overview): each takes the user's choices and the monitor's state and returns
the new choices (or, for a click on the footer, the key it stands for). Textual-free: the
screen carries the result out."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from gputui.core.model import DeviceInfo, Finding
from gputui.view.cells import CardsKey, FindingKey, GpuKey, KeysKey, PidKey, RowKey
from gputui.view.choices import Choices
from gputui.view.effects import Notify, OpenPage, Page, PressKey
from gputui.view.layout import Layout

#: a digit typed within this long after the last one adds to it: 1 then 2 is GPU 12
DIGITS_WITHIN_S = 0.6
#: a page of GPUs before the panels are first laid out
PAGE_WITHOUT_LIST = 8


def _indices(devices: tuple[DeviceInfo, ...]) -> list[int]:
    return [d.index for d in devices]


def in_gpus(choices: Choices) -> Choices:
    """A move in the GPU list or the findings: the keys that follow the last move (Enter,
    PgUp PgDn) now mean them, not the process table."""
    return replace(choices, in_table=False) if choices.in_table else choices


def paging(gpu_lines: int, laid_out: Layout | None, choices: Choices) -> bool:
    """Whether PgUp PgDn page the GPUs: the list (``gpu_lines`` rows) hides some and the
    last move was not in the process table."""
    cut = laid_out is not None and gpu_lines > laid_out.gpus.inner[1] - 1
    return cut and not choices.in_table


class Navigation:
    """The GPU keys. It remembers only the digits typed so far, while more may follow."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._digits = ""
        self._digit_at = 0.0

    def gpu(self, choices: Choices, devices: tuple[DeviceInfo, ...], step: int) -> Choices:
        """← →: the previous or next GPU, wrapping round."""
        return in_gpus(choices.step_gpu(_indices(devices), step))

    def jump(self, choices: Choices, devices: tuple[DeviceInfo, ...], index: int) -> Choices:
        """Key N: GPU N. A digit typed within ``DIGITS_WITHIN_S`` of the one before adds to
        it where the node has such a GPU (1 then 2: GPU 12); else it is a GPU of its own,
        so a node of ten GPUs or fewer answers every key at once."""
        indices, now = _indices(devices), self.clock()
        typed = str(index)
        if 0 <= index <= 9 and self._digits and now - self._digit_at <= DIGITS_WITHIN_S:
            longer = self._digits + typed
            if not longer.startswith("0") and int(longer) in indices:
                typed = longer
        self._digits, self._digit_at = typed, now
        return in_gpus(choices.jump(indices, int(typed)))


def edge(choices: Choices, devices: tuple[DeviceInfo, ...], step: int) -> Choices:
    """Home, End: the first or the last GPU."""
    indices = _indices(devices)
    if not indices:
        return in_gpus(choices)
    return in_gpus(choices.jump(indices, indices[-1 if step > 0 else 0]))


def page(
    choices: Choices, devices: tuple[DeviceInfo, ...], laid_out: Layout | None, step: int
) -> Choices:
    """PgUp, PgDn: as many GPUs on as the list shows between its two cut markers."""
    rows = laid_out.gpus.inner[1] - 3 if laid_out is not None else PAGE_WITHOUT_LIST
    return in_gpus(choices.move_gpu(_indices(devices), step * max(1, rows)))


#: what ``c`` says where there is one node: nothing to rank, and how to get several
ONE_NODE = Notify(
    "One node here: the cluster page ranks the nodes of --source URL (several) or --prometheus URL",
    title="Cluster",
    timeout=6,
)


def cluster(devices: tuple[DeviceInfo, ...]) -> OpenPage | Notify:
    """c: every node as a row, worst first; on one node, why there is no such page."""
    from gputui.advisor.nodes import is_cluster  # the advisor loads after the first frame

    if not is_cluster(devices):
        return ONE_NODE
    return OpenPage(Page.CLUSTER)


def finding(choices: Choices, findings: int, step: int) -> Choices:
    """n N: the next or previous finding."""
    return in_gpus(choices.step_finding(findings, step))


def goto_finding(choices: Choices, findings: tuple[Finding, ...]) -> Choices:
    """g: the selected finding's GPU in the detail view."""
    at = choices.finding_at(len(findings))
    gpu = findings[at].gpu if at is not None else None
    return choices if gpu is None else choices.show_gpu(gpu)


def clicked(
    choices: Choices, devices: tuple[DeviceInfo, ...], key: RowKey, x: int
) -> Choices | PressKey:
    """The mouse, for those who reach for it: a row's key says what it stands for."""
    indices = _indices(devices)
    if isinstance(key, GpuKey):
        return in_gpus(choices.jump(indices, key.index))
    if isinstance(key, FindingKey):
        return replace(choices, finding=key.position, in_table=False)
    if isinstance(key, PidKey):
        return replace(choices.with_procs(replace(choices.procs, pid=key.pid)), in_table=True)
    if isinstance(key, CardsKey) and (gpu := key.gpu_at(x)) is not None:
        return in_gpus(choices.jump(indices, gpu))
    if isinstance(key, KeysKey) and (press := key.key_at(x)) is not None:
        return PressKey(press)  # the footer's key, pressed
    return choices
