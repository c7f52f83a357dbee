"""The step line: slow steps against the baseline, and which cause on which GPU they went
with; the GPUs a rank watches."""

from __future__ import annotations

import pytest

from gputui.api.gpus import NoSuchGpu, choose, local_rank, visible
from gputui.api.steps import Baseline, Timeline, attribute, clock_causes
from gputui.core.model import DeviceInfo

THERMAL = ("thermal-throttle", 1)
CAP = ("power-cap", 0)


def _steps(durations: list[float], start: float = 100.0) -> list[tuple[float, float]]:
    out = []
    for duration in durations:
        out.append((start, start + duration))
        start += duration
    return out


def test_slow_steps_name_the_cause_active_while_they_ran_and_its_share() -> None:
    baseline = Baseline()
    calm = _steps([0.1] * 20)
    line = attribute(calm, [100.0], [set()], baseline)
    assert line.slow_steps == 0 and line.baseline_s == pytest.approx(0.1)
    # ten slow steps, eight of them while GPU 1 throttled: 80 % of the excess
    slow = _steps([0.15] * 10, start=102.0)
    times = [102.0, slow[8][0] + 0.01]  # the steps that ended before it: throttled
    line = attribute(slow, times, [{THERMAL}, set()], baseline)
    assert line.slow_steps == 10 and line.slowdown_pct == pytest.approx(50.0)
    (cause,) = line.causes
    assert (cause.rule, cause.gpu, cause.slow_steps) == ("thermal-throttle", 1, 8)
    assert cause.share_pct == pytest.approx(80.0)
    assert "thermal-throttle on GPU 1 in 8 of them (80% of the slowdown)" in line.text()


def test_a_cause_present_in_most_fast_steps_is_the_norm_not_the_cause() -> None:
    """A GPU always at its power cap: steps slowed by something else are not blamed on it."""
    baseline = Baseline()
    attribute(_steps([0.1] * 20), [100.0], [{CAP}], baseline)
    durations = [0.1] * 10 + [0.2] * 5
    line = attribute(_steps(durations, 102.0), [102.0], [{CAP}], baseline)
    assert line.slow_steps == 5 and line.causes == ()
    assert "no cause gputui sees was active" in line.text()


def test_the_baseline_is_calm_steps_not_the_slow_ones() -> None:
    baseline = Baseline()
    attribute(_steps([0.1] * 10), [100.0], [set()], baseline)
    # a long slow stretch (every step) does not move the baseline
    for k in range(5):
        line = attribute(_steps([0.3] * 50, 200.0 + 20 * k), [200.0], [{THERMAL}], baseline)
    assert line.baseline_s == pytest.approx(0.1) and line.slow_steps == 50


def test_no_steps_no_line() -> None:
    line = attribute([], [], [], Baseline())
    assert line.steps == 0 and line.text() == "steps: none since the last line"


def test_a_finding_marks_the_ticks_since_its_condition_began() -> None:
    timeline = Timeline(keep=10)
    for t in range(5):
        timeline.add(float(t), set(), {})
    timeline.add(5.0, set(), {THERMAL: 3.0})
    times, causes = timeline.copy()
    assert times == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert [THERMAL in c for c in causes] == [False, False, False, True, True, True]


def test_clock_reasons_name_the_rules_they_show() -> None:
    assert clock_causes(3, ("sw_thermal", "gpu_idle")) == {("thermal-throttle", 3)}
    assert clock_causes(0, ("sw_power_cap", "hw_slowdown")) == {
        ("power-cap", 0),
        ("hw-slowdown", 0),
    }
    assert clock_causes(0, ("applications_clocks",)) == set()


DEVICES = [DeviceInfo(i, "H100", uuid=f"GPU-{i}aaa-bbbb") for i in range(4)]


def test_a_rank_watches_its_own_visible_gpu() -> None:
    env = {"LOCAL_RANK": "1", "CUDA_VISIBLE_DEVICES": "3,2"}
    assert local_rank(env) == 1
    assert choose(DEVICES, "auto", env) == (2,)
    assert choose(DEVICES, "own", {"CUDA_VISIBLE_DEVICES": "GPU-3aa"}) == (3,)
    assert choose(DEVICES, "visible", {"CUDA_VISIBLE_DEVICES": "1,9,2"}) == (1,)  # CUDA stops
    assert choose(DEVICES, "auto", {}) == (0, 1, 2, 3)
    with pytest.raises(NoSuchGpu, match="local rank 2 has no GPU of its own"):
        choose(DEVICES, "own", {"LOCAL_RANK": "2", "CUDA_VISIBLE_DEVICES": "0,1"})


def test_the_node_is_its_first_ranks() -> None:
    assert choose(DEVICES, "node", {"LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": "0"}) == (
        0,
        1,
        2,
        3,
    )
    assert choose(DEVICES, "node", {"LOCAL_RANK": "3"}) == ()
    assert choose(DEVICES, "node", {}, rank=1) == ()
    assert choose(DEVICES, [2, 0, 2]) == (2, 0)
    with pytest.raises(NoSuchGpu):
        choose(DEVICES, [7])
    assert visible(DEVICES, {"CUDA_VISIBLE_DEVICES": ""}) == []
