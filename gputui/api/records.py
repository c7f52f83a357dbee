"""The public API's records: plain, immutable values a caller can keep, compare, print and
turn into JSON (``to_dict``), decoupled from gputui's internal model so that the model can
change without breaking a caller (``gputui.api`` follows semantic versioning).

Units: MHz, °C, W, bytes, percent 0-100, seconds; ``None`` is a reading the GPU or the
source does not give, never a made-up 0. Every text field passed gputui's sanitiser.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from gputui.core import clock_events as ce
from gputui.core.model import DeviceInfo, GpuSample
from gputui.core.model import Finding as CoreFinding
from gputui.core.records import frozen

#: the clock-event reasons that slow a GPU below the clock it would run at: the ones
#: "seconds throttled" counts (idle, application and display clocks, sync boost do not)
SLOWING_BITS = ce.SW_POWER_CAP | ce.HW_SLOWDOWN | ce.SW_THERMAL | ce.HW_THERMAL | ce.HW_POWER_BRAKE


def _share(part: float | None, whole: float | None) -> float | None:
    if part is None or not whole:
        return None
    return 100.0 * part / whole


@frozen
class Device:
    """One GPU's facts that do not change while it is watched."""

    index: int  # NVML's index (nvidia-smi's), not CUDA's
    name: str
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_total: int | None = None
    max_sm_clock_mhz: int | None = None
    power_limit_w: float | None = None
    temp_slowdown_c: float | None = None
    driver_version: str | None = None

    @classmethod
    def of(cls, info: DeviceInfo) -> Device:
        return cls(
            index=info.index,
            name=info.name,
            uuid=info.uuid,
            pci_bus_id=info.pci_bus_id,
            memory_total=info.memory_total,
            max_sm_clock_mhz=info.max_sm_clock_mhz,
            power_limit_w=info.power_limit_w,
            temp_slowdown_c=info.temp_slowdown_c,
            driver_version=info.driver_version,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@frozen
class Reading:
    """One GPU's readings that explain its speed, at one tick."""

    gpu: int
    time: float  # seconds since the epoch, by the source's clock
    lost: bool = False
    util_pct: float | None = None
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    temp_c: float | None = None
    #: degrees left before the GPU slows itself down (the driver's margin, or the slowdown
    #: threshold less the temperature)
    temp_margin_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    vram_used: int | None = None
    vram_total: int | None = None
    #: the clock-event reasons set now, as identifiers ("sw_thermal", "sw_power_cap")
    reasons: tuple[str, ...] = ()
    #: whether a reason that slows the GPU (heat, the power cap, a hardware slowdown) is set
    throttled: bool = False

    @property
    def sm_clock_pct(self) -> float | None:
        """The SM clock as a share of the board's maximum."""
        return _share(self.sm_clock_mhz, self.sm_clock_max_mhz)

    @property
    def power_pct(self) -> float | None:
        """The power draw as a share of the enforced limit."""
        return _share(self.power_w, self.power_limit_w)

    @property
    def vram_pct(self) -> float | None:
        return _share(self.vram_used, self.vram_total)

    @classmethod
    def of(cls, sample: GpuSample, device: DeviceInfo | None, time: float) -> Reading:
        if sample.lost:
            return cls(gpu=sample.index, time=time, lost=True)
        margin = sample.temp_margin_c
        slowdown = device.temp_slowdown_c if device is not None else None
        if margin is None and slowdown is not None and sample.temp_c is not None:
            margin = slowdown - sample.temp_c
        limit = sample.power_limit_w
        if limit is None and device is not None:
            limit = device.power_limit_w
        mask = sample.clock_reasons
        return cls(
            gpu=sample.index,
            time=time,
            util_pct=sample.util_gpu,
            sm_clock_mhz=None if sample.sm_clock_mhz is None else float(sample.sm_clock_mhz),
            sm_clock_max_mhz=(
                float(device.max_sm_clock_mhz)
                if device is not None and device.max_sm_clock_mhz
                else None
            ),
            temp_c=sample.temp_c,
            temp_margin_c=margin,
            power_w=sample.power_w,
            power_limit_w=limit,
            vram_used=sample.mem_used,
            vram_total=sample.mem_total,
            reasons=sample.reason_names,
            throttled=bool(mask and mask & SLOWING_BITS),
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["reasons"] = list(self.reasons)
        out.update(sm_clock_pct=self.sm_clock_pct, power_pct=self.power_pct, vram_pct=self.vram_pct)
        return out


@frozen
class Finding:
    """What the advisor says about a GPU (``gpu`` None: the host or the job): a condition
    that held long enough, since when, the numbers that prove it and what to do."""

    rule: str  # the rule's id, as docs/advisor.md lists them: "thermal-throttle"
    severity: str  # "info", "warning" or "critical"
    gpu: int | None
    title: str
    evidence: tuple[str, ...]
    remedies: tuple[str, ...]
    since: float  # when the condition started to hold (the source's clock)
    updated: float  # the last time it held

    @classmethod
    def of(cls, finding: CoreFinding) -> Finding:
        return cls(
            rule=finding.rule.value,
            severity=finding.severity.value,
            gpu=finding.gpu,
            title=finding.title,
            evidence=finding.evidence,
            remedies=finding.remedies,
            since=finding.since,
            updated=finding.updated,
        )

    @property
    def where(self) -> str:
        return "the host" if self.gpu is None else f"GPU {self.gpu}"

    def text(self) -> str:
        """The finding in a few plain lines: what, the evidence, the first remedy."""
        lines = [f"{self.where}: {self.severity}: {self.title}"]
        lines += [f"  {line}" for line in self.evidence]
        lines += [f"  fix: {line}" for line in self.remedies[:1]]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["evidence"] = list(self.evidence)
        out["remedies"] = list(self.remedies)
        return out


@frozen
class Tick:
    """One reading of every watched GPU, and the advisor's findings after it."""

    time: float
    readings: tuple[Reading, ...]
    findings: tuple[Finding, ...]

    def reading(self, gpu: int) -> Reading | None:
        return next((r for r in self.readings if r.gpu == gpu), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "readings": [r.to_dict() for r in self.readings],
            "findings": [f.to_dict() for f in self.findings],
        }
