"""The key groups without an app: each key's new choices, or the effect it asks the screen
for (a message, a page, a signal's confirmation), from the choices and the monitor's state."""

from __future__ import annotations

from dataclasses import replace

from gputui.core.model import ProcessSample
from gputui.core.names import RuleId
from gputui.core.process_access import Outcome, ProcessDetails, SignalResult
from gputui.view import navigation, process_keys
from gputui.view.cells import FindingKey, GpuKey, KeysKey, PidKey
from gputui.view.choices import Choices
from gputui.view.effects import AskSignal, Notify, OpenProcess, PressKey
from gputui.view.layout import layout
from tests.factories import demo_monitor

MONITOR = demo_monitor("healthy", 5, gpus=16)
DEVICES = MONITOR.devices


class Access:
    """This machine's processes as a test sees them: every signal recorded, none sent."""

    def __init__(self, refuse: str | None = None) -> None:
        self.sent: list[tuple[int, float | None, int]] = []
        self._refuse = refuse

    @property
    def is_root(self) -> bool:
        return False

    def refusal(self, pid: int, started: float | None) -> str | None:
        return self._refuse

    def send(self, pid: int, started: float | None, signum: int) -> SignalResult:
        self.sent.append((pid, started, signum))
        return SignalResult(Outcome.SENT, f"sent {signum} to PID {pid}")

    def details(self, pid: int, started: float | None) -> ProcessDetails:
        raise AssertionError("not asked here")


def _process(pid: int, gpu: int, started: float = 100.0, gib: int = 1) -> ProcessSample:
    memory = gib << 30
    return ProcessSample(pid, gpu, gpu_memory=memory, command="python train.py", started=started)


# sorted by GPU memory, the most first: 11, 12, then 21
PROCESSES = (_process(11, 0, gib=3), _process(12, 0, gib=2), _process(21, 1))


def test_digits_typed_quickly_reach_gpu_ten_and_up_and_moves_leave_the_table() -> None:
    now = [50.0]
    keys = navigation.Navigation(clock=lambda: now[0])
    in_table = Choices(in_table=True)
    twelve = keys.jump(keys.jump(in_table, DEVICES, 1), DEVICES, 2)
    assert twelve.selected == 12 and not twelve.in_table
    now[0] += navigation.DIGITS_WITHIN_S + 0.1  # too late to add to the 2
    assert keys.jump(twelve, DEVICES, 3).selected == 3
    assert keys.gpu(Choices(selected=15), DEVICES, 1).selected == 0  # wraps


def test_pgdn_pages_the_gpus_only_while_the_list_hides_some_and_the_table_was_not_last() -> None:
    small = layout(80, 24, 17, 0, True, 0, 2)  # 16 GPUs and a node line in a short list
    assert navigation.paging(17, small, Choices())
    assert not navigation.paging(17, small, Choices(in_table=True))
    assert not navigation.paging(3, small, Choices())  # every GPU shows
    assert not navigation.paging(17, None, Choices())  # not laid out yet
    paged = navigation.page(Choices(), DEVICES, small, 1)
    assert paged.selected == small.gpus.inner[1] - 3
    assert navigation.page(Choices(selected=15), DEVICES, small, 1).selected == 15  # stops


def test_a_click_means_what_its_row_stands_for() -> None:
    c = Choices(in_table=True)
    assert navigation.clicked(c, DEVICES, GpuKey(5), 0) == Choices(selected=5)
    finding = FindingKey(2, RuleId.THERMAL_THROTTLE, 1)
    assert navigation.clicked(c, DEVICES, finding, 0) == Choices(finding=2)
    on_process = navigation.clicked(Choices(), DEVICES, PidKey(12), 0)
    assert isinstance(on_process, Choices) and on_process.procs.pid == 12
    assert on_process.in_table
    footer = KeysKey(((0, 10, "o"),))
    assert navigation.clicked(c, DEVICES, footer, 3) == PressKey("o")


def test_process_moves_select_in_table_order_and_esc_clears() -> None:
    moved = process_keys.move(Choices(), PROCESSES, 1, page=False)
    assert moved.in_table and moved.procs.pid == 11  # GPU 0's processes only, the first
    everyone = process_keys.move(Choices(), PROCESSES, -1, page=True)
    assert everyone.procs.pid == 21  # the page lists every GPU's: the last one
    cleared = process_keys.clear(replace(moved, procs=replace(moved.procs, text="x")))
    assert cleared.procs.pid is None and cleared.procs.text == "" and not cleared.in_table


def test_inspect_and_signal_need_a_selected_process() -> None:
    assert process_keys.inspect(Choices(), PROCESSES, False) == process_keys.SELECT_FIRST
    chosen = process_keys.move(Choices(), PROCESSES, 1, page=False)
    pid = chosen.procs.pid
    assert process_keys.inspect(chosen, PROCESSES, False) == OpenProcess(pid or 0, 100.0)
    nothing = process_keys.signal(Choices(), PROCESSES, 15, False, Access(), "LIVE")
    assert nothing == process_keys.SELECT_FIRST


def test_a_signal_is_asked_for_then_sent_only_on_yes_to_the_process_it_named() -> None:
    access = Access()
    asked = process_keys.ask_signal(PROCESSES, 12, 100.0, 15, access, "LIVE")
    assert isinstance(asked, AskSignal) and asked.name == "SIGTERM"
    assert asked.process.pid == 12
    no = process_keys.answer(asked, False, access)
    assert "Cancelled" in no.text and access.sent == []
    yes = process_keys.answer(asked, True, access)
    assert access.sent == [(12, 100.0, 15)] and yes.tone == "information"


def test_no_signal_to_a_reused_pid_a_gone_process_or_another_machines() -> None:
    access = Access()
    reused = (_process(12, 0, started=300.0),)  # PID 12 is another process now
    said = process_keys.ask_signal(reused, 12, 100.0, 9, access, "LIVE")
    assert isinstance(said, Notify) and "another process" in said.text
    gone = process_keys.ask_signal((), 12, 100.0, 9, access, "LIVE")
    assert isinstance(gone, Notify) and "no longer on a GPU" in gone.text
    remote = process_keys.ask_signal(PROCESSES, 12, 100.0, 9, None, "REMOTE")
    assert isinstance(remote, Notify) and "remote processes" in remote.text
    refused = process_keys.ask_signal(PROCESSES, 12, 100.0, 9, Access("not yours"), "LIVE")
    assert isinstance(refused, Notify) and refused.text == "Not sent: not yours"
    assert refused.tone == "warning" and access.sent == []
