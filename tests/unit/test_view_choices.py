"""How each key moves through the screen, without an app: the app's actions only apply
these."""

from __future__ import annotations

from gputui.view.choices import Choices
from gputui.view.detail import WINDOWS_S
from gputui.view.header import Replaying, header_state, position_text
from tests.factories import START, demo_monitor

INDICES = [0, 1, 2, 3, 4, 5, 6, 7]


def test_gpu_keys_wrap_and_digits_name_gpus_by_index() -> None:
    c = Choices()
    assert c.step_gpu(INDICES, 1).selected == 1
    assert c.step_gpu(INDICES, -1).selected == 7  # wraps
    assert c.jump(INDICES, 3).selected == 3  # key 3 is GPU 3, as nvidia-smi numbers it
    assert c.jump(INDICES, 9) == c  # no GPU 9 here: nothing changes
    remote = [4, 5]  # a node whose GPUs are numbered from 4
    assert Choices(selected=4).step_gpu(remote, 1).selected == 5


def test_finding_keys_follow_a_list_that_shrinks() -> None:
    c = Choices(finding=5)
    assert c.step_finding(3, 1).finding == 0  # was past the end of a shorter list
    assert c.finding_at(3) == 2 and c.finding_at(0) is None
    assert Choices().step_finding(0, 1) == Choices()


def test_window_sort_and_overview_cycle() -> None:
    c = Choices()
    seen = [c.window_s]
    for _ in range(len(WINDOWS_S)):
        c = c.next_window()
        seen.append(c.window_s)
    assert seen == [*WINDOWS_S, WINDOWS_S[0]]
    assert Choices().procs.next_sort().sort == "sm_util"  # after GPU memory
    shown = Choices(overview=True).show_gpu(5)
    assert shown.selected == 5 and not shown.overview


def test_header_state_from_the_monitor() -> None:
    monitor = demo_monitor("thermal", 60, gpus=2)
    live = header_state(monitor, hostname="here", interval_s=1.0, age_s=0.2, paused=False)
    assert live.source == "SIMULATED" and live.gpus == 2 and not live.stale
    assert live.findings and live.critical == live.findings  # both GPUs throttle
    stale = header_state(
        monitor, hostname="here", interval_s=1.0, age_s=30.0, paused=False, error="lost"
    )
    assert stale.stale and stale.error == "lost" and stale.age_s == 30.0
    replay = Replaying(speed=2.0, interval_s=1.0, start=START, end=START + 3600)
    played = header_state(
        monitor, hostname="here", interval_s=0.5, age_s=None, paused=True, replay=replay
    )
    assert played.source == "REPLAY 2x" and played.interval_s == 1.0 and played.paused
    assert played.position == "59 s of 1 h 00 min"  # the demo's last frame, 59 s in
    assert position_text(replay, START + 90) == "1 min 30 s of 1 h 00 min"
    assert position_text(Replaying(1.0, 1.0, None, None), START) is None


def test_a_page_of_gpus_stops_at_the_first_and_the_last() -> None:
    many = list(range(64))
    assert Choices().move_gpu(many, 8).selected == 8
    assert Choices(selected=60).move_gpu(many, 8).selected == 63  # no wrap past the end
    assert Choices(selected=3).move_gpu(many, -8).selected == 0
    assert Choices(selected=5).move_gpu([4, 5, 6], 1).selected == 6  # by position, not index
    assert Choices().move_gpu([], 1) == Choices()
