"""The fan rule on synthetic histories: a fan held at 0 % on a hot or heating board, a fan
asked to turn that does not; calm on a zero-RPM fan stop at idle, a passively cooled board
and a fan that does its job."""

from __future__ import annotations

from dataclasses import replace

from gputui.core.judgement import Undecided
from gputui.core.model import DeviceInfo, GpuSample
from gputui.core.names import RuleId
from tests.advisor_kit import BUSY, IDLE, Sim

#: a workstation board with its own fan: RTX 6000 Ada class, limits at 87 / 93 °C
BOARD = DeviceInfo(
    index=0,
    name="NVIDIA RTX 6000 Ada Generation",
    max_sm_clock_mhz=2505,
    temp_slowdown_c=93.0,
    temp_shutdown_c=96.0,
    temp_gpu_max_c=87.0,
    power_limit_w=300.0,
    power_default_limit_w=300.0,
)
LOADED = replace(BUSY, power_w=270.0, power_limit_w=300.0, sm_clock_mhz=2400)


def heating(start: float, per_min: float, fan: float, rpm: float | None) -> object:
    def sample(i: int) -> GpuSample:
        return replace(LOADED, temp_c=round(start + per_min * i / 60, 1), fan_pct=fan, fan_rpm=rpm)

    return sample


def fan_findings(sim: Sim) -> list[str]:
    return [f.title for f in sim.findings if f.rule == RuleId.FAN_FAULT]


def test_a_fan_at_0_percent_on_a_board_climbing_past_78_c_is_a_fault() -> None:
    sim = Sim((BOARD,))
    sim.run(60, heating(76.0, 4.0, fan=0.0, rpm=0.0))  # type: ignore[arg-type]
    (f,) = [f for f in sim.findings if f.rule == "fan-fault"]
    assert f.severity == "warning"
    assert f.title == "Fan stopped on a hot board: it will throttle, then shut down"
    text = " | ".join(f.evidence)
    assert "fan held at 0 % for" in text and "the tachometer at 0 RPM" in text
    assert "from the board's max operating temperature (87 °C)" in text
    assert "temperature trend +4.0 °C/min" in text
    assert any("nvidia-settings -a GPUFanControlState=0" in r for r in f.remedies)
    # the precise cause hides the vaguer "running hot" on the same GPU
    assert "thermal-hot" not in sim.rules()


def test_a_stopped_fan_within_a_few_degrees_of_the_limit_is_critical() -> None:
    sim = Sim((BOARD,))
    sim.run(40, replace(LOADED, temp_c=85.0, fan_pct=0.0))
    (f,) = [f for f in sim.findings if f.rule == "fan-fault"]
    assert f.severity == "critical"


def test_warm_and_heating_under_load_with_the_fan_off_is_a_fault_before_it_is_hot() -> None:
    sim = Sim((BOARD,))
    sim.run(60, heating(66.0, 2.0, fan=0.0, rpm=None))  # type: ignore[arg-type]
    assert fan_findings(sim)


def test_a_zero_rpm_fan_stop_at_idle_is_calm() -> None:
    sim = Sim((BOARD,))
    sim.run(400, replace(IDLE, temp_c=41.0, fan_pct=0.0, fan_rpm=0.0), processes=())
    assert not fan_findings(sim)
    assert not [n for n in sim.advisor.judgement.undecided if n.rule == RuleId.FAN_FAULT]


def test_a_warm_idle_board_cooling_down_with_its_fan_stopped_is_calm() -> None:
    """A job ended: 62 °C and falling, the fan stops as the board settles."""
    sim = Sim((BOARD,))
    sim.run(120, heating(62.0, -3.0, fan=0.0, rpm=0.0), processes=())  # type: ignore[arg-type]
    assert not fan_findings(sim)


def test_a_fan_that_runs_is_calm_however_hot_the_board() -> None:
    sim = Sim((BOARD,))
    sim.run(120, replace(LOADED, temp_c=84.0, fan_pct=100.0, fan_rpm=3400.0))
    assert not fan_findings(sim)


def test_a_fan_asked_to_turn_that_reads_0_rpm_has_failed() -> None:
    sim = Sim((BOARD,))
    sim.run(60, replace(LOADED, temp_c=74.0, fan_pct=62.0, fan_rpm=0.0))
    (f,) = [f for f in sim.findings if f.rule == "fan-fault"]
    assert f.title.startswith("Fan not turning though the driver asks it to")
    assert any("fan asked to turn at 62 %" in e and "0 RPM" in e for e in f.evidence)
    assert any("look at GPU 0's fan" in r for r in f.remedies)


def test_a_tachometer_that_reads_while_the_percentage_says_0_is_no_stopped_fan() -> None:
    sim = Sim((BOARD,))
    sim.run(60, replace(LOADED, temp_c=80.0, fan_pct=0.0, fan_rpm=1900.0))
    assert not fan_findings(sim)


def test_a_passively_cooled_board_does_not_apply_calmly() -> None:
    sim = Sim()
    sim.run(60, replace(BUSY, temp_c=84.0), processes=())
    assert not fan_findings(sim)
    assert not [n for n in sim.advisor.judgement.undecided if n.rule == RuleId.FAN_FAULT]
    passive = replace(BUSY, temp_c=84.0, unsupported=("fan_pct", "fan_rpm"))
    sim = Sim()
    sim.run(60, passive, processes=())
    (said,) = [n for n in sim.advisor.judgement.undecided if n.rule == RuleId.FAN_FAULT]
    assert said.kind is Undecided.NOT_OFFERED and "passively cooled" in said.missing


def test_a_fan_pinned_low_while_a_hot_board_keeps_heating_does_not_follow() -> None:
    sim = Sim((BOARD,))
    sim.run(60, heating(76.0, 2.0, fan=25.0, rpm=900.0))  # type: ignore[arg-type]
    (f,) = [f for f in sim.findings if f.rule == "fan-fault"]
    assert f.title.startswith("Fan held low on a heating board")
    assert any("fan at 25 % for" in e for e in f.evidence)


def test_a_low_fan_on_a_board_that_holds_its_temperature_is_calm() -> None:
    sim = Sim((BOARD,))
    sim.run(120, replace(LOADED, temp_c=76.0, fan_pct=25.0, fan_rpm=900.0))
    assert not fan_findings(sim)
