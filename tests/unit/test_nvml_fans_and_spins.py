"""Fans and GPUs busy without work through the NVML source, over the fake driver: the
readings the cooling and hang rules judge come through nvidia-ml-py as a real driver gives
them (the fan's asked speed and its tachometer; utilisation, power, memory and GPM SM
activity, PCIe and NVLink traffic), and the rules judge what came through."""

from __future__ import annotations

import pytest

from gputui.advisor import make_advisor
from gputui.core.model import Finding, Frame
from gputui.sampling.history import History
from tests.nvml_double import FakeGpu, FakeNvLink, FakeNvmlLib
from tests.unit.test_nvml_drivers import Rig

#: a workstation board with its own fan: limits at 87 (max operating) and 93 °C
WORKSTATION = {
    "name": "NVIDIA RTX 6000 Ada Generation",
    "thresholds": {0: 96, 1: 93, 3: 87},
    "enforced_limit_mw": 300_000,
    "default_limit_mw": 300_000,
    "limit_constraints_mw": (150_000, 300_000),
    "power_mw": 270_000,
}


class Run(Rig):
    """The fake driver's source, its frames judged by the advisor each second."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, lib: FakeNvmlLib) -> None:
        super().__init__(monkeypatch, lib)
        self.history = History(4000)
        self.advisor = make_advisor(self.devices)
        self.frames: list[Frame] = []

    def seconds(self, n: int, each: object = None) -> tuple[Finding, ...]:
        for i in range(n):
            if callable(each):
                each(i)
            frame = self.source.read()
            self.source.wait_windows()
            self.frames.append(frame)
            self.history.add(frame)
            self.advisor.update(self.history)
            self.tick()
        return self.advisor.findings


def test_a_stopped_fan_on_a_heating_board_reads_through_and_is_a_fault(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpu = FakeGpu(fan=0, fan_rpm=0, temperature=76, util=(98, 45), **WORKSTATION)  # type: ignore[arg-type]
    run = Run(monkeypatch, FakeNvmlLib([gpu]))

    def heat(i: int) -> None:
        gpu.temperature = 76 + i // 15  # four degrees a minute

    found = run.seconds(60, heat)
    sample = run.frames[-1].gpus[0]
    assert (sample.fan_pct, sample.fan_rpm) == (0.0, 0.0)  # 0 %, and the tachometer agrees
    (f,) = [f for f in found if f.rule == "fan-fault"]
    assert f.title.startswith("Fan stopped on a hot board")
    assert any("the tachometer at 0 RPM" in e for e in f.evidence)
    run.close()


def test_a_fan_asked_to_turn_whose_tachometer_reads_0_is_a_failed_fan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpu = FakeGpu(fan=64, fan_rpm=0, temperature=74, **WORKSTATION)  # type: ignore[arg-type]
    run = Run(monkeypatch, FakeNvmlLib([gpu]))
    found = run.seconds(60)
    assert [f.title for f in found if f.rule == "fan-fault"] == [
        "Fan not turning though the driver asks it to: it has failed or is blocked"
    ]
    run.close()


def test_a_zero_rpm_stop_at_idle_reads_through_and_is_calm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpu = FakeGpu(
        fan=0,
        fan_rpm=0,
        temperature=40,
        util=(0, 0),
        processes=[],
        **WORKSTATION,  # type: ignore[arg-type]
    )
    gpu.power_mw = 22_000
    run = Run(monkeypatch, FakeNvmlLib([gpu]))
    assert not [f for f in run.seconds(120) if f.rule == "fan-fault"]
    run.close()


def test_a_passive_board_has_no_fan_reading_and_the_rule_does_not_apply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lib = FakeNvmlLib([FakeGpu(temperature=84)])  # an H100: no fan, the chassis cools it
    run = Run(monkeypatch, lib)
    run.seconds(40)
    sample = run.frames[-1].gpus[0]
    assert sample.fan_pct is None and sample.fan_rpm is None
    assert {"fan_pct", "fan_rpm"} <= set(sample.unsupported)
    assert "nvmlDeviceGetFanSpeedRPM" not in lib.calls  # no fan, no tachometer to ask
    said = [n for n in run.advisor.judgement.undecided if n.rule == "fan-fault"]
    assert [n.kind.value for n in said] == ["not-applicable"]
    run.close()


def test_a_driver_without_the_rpm_call_still_gives_the_asked_speed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lib = FakeNvmlLib([FakeGpu(fan=40, fan_rpm=1500)], missing={"nvmlDeviceGetFanSpeedRPM"})
    run = Run(monkeypatch, lib)
    run.seconds(25)
    sample = run.frames[-1].gpus[0]
    assert sample.fan_pct == 40.0 and sample.fan_rpm is None
    assert "fan_rpm" in sample.unsupported and "fan_pct" not in sample.unsupported
    run.close()


def test_the_rpm_call_is_made_with_its_versioned_struct(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = FakeNvmlLib([FakeGpu(fan=40, fan_rpm=1500)])
    run = Run(monkeypatch, lib)
    run.seconds(25)
    assert run.frames[-1].gpus[0].fan_rpm == 1500.0
    # the double answers a wrong version with ARGUMENT_VERSION_MISMATCH, as drivers do
    assert lib.calls["nvmlDeviceGetFanSpeedRPM"] <= 3  # with the slow readings, every 10 s
    run.close()


def _spinning(**extra: object) -> FakeGpu:
    """A rank in NCCL's all-reduce: 100 % at 131 W of 700, no memory traffic, GPM SM
    activity 12 %, PCIe and NVLink counters still."""
    return FakeGpu(
        util=(100, 0),
        power_mw=131_000,
        gpm=True,
        gpm_values=(12.0, 0.0),
        pcie_throughput_kib=(40, 20),
        nvlinks=[FakeNvLink() for _ in range(4)],
        **extra,  # type: ignore[arg-type]
    )


def test_a_gpu_busy_without_work_reads_through_and_is_called_after_minutes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lib = FakeNvmlLib([_spinning()])
    run = Run(monkeypatch, lib)
    found = run.seconds(200)
    sample = run.frames[-1].gpus[0]
    assert (sample.util_gpu, sample.power_w, sample.util_mem) == (100.0, 131.0, 0.0)
    assert sample.sm_activity == 12.0
    assert "busy-no-work" not in {f.rule for f in found}
    assert [n.rule for n in run.advisor.judgement.watching] == ["busy-no-work"]
    found = run.seconds(110)
    (f,) = [f for f in found if f.rule == "busy-no-work"]
    assert any("SM activity 12 % (GPM)" in e and "NVLink 0.0 GB/s" in e for e in f.evidence)
    assert any("pid 4242" in e for e in f.evidence)
    run.close()


def test_memory_bound_decode_reads_through_as_work(monkeypatch: pytest.MonkeyPatch) -> None:
    decoding = FakeGpu(util=(100, 78), power_mw=300_000, gpm=True, gpm_values=(52.0, 8.0))
    run = Run(monkeypatch, FakeNvmlLib([decoding]))
    found = run.seconds(320)
    assert "busy-no-work" not in {f.rule for f in found}
    assert not run.advisor.judgement.watching
    run.close()
