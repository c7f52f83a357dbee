"""What the advisor could judge: "no findings" is a verdict only over what it saw.

Every rule declares the history it needs and the readings it cannot do without. Until a
GPU has that history every surface says "gathering: 4 s of 10 s"; a rule that lacks a
reading (not supported on this board, MIG mode, a remote source) or could not decide is
listed as "not judged: <what is missing>" rather than counted as a clean bill of health.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gputui.advisor.rule import Rule
from gputui.config import Thresholds
from gputui.model import DeviceInfo, Frame, GpuSample, HostSample
from gputui.names import RuleId
from gputui.units import fmt_duration

#: readings in words, for "not judged: <what is missing>"
WORDS: Mapping[str, str] = {
    "util_gpu": "utilisation",
    "sm_activity": "SM activity",
    "sm_clock_mhz": "SM clock",
    "temp_c": "temperature",
    "clock_reasons": "clock-event reasons",
    "power_w": "power draw",
    "power_limit_w": "power limit",
    "power_default_limit_w": "default power limit",
    "app_sm_clock_mhz": "application clocks",
    "mem_used": "VRAM used",
    "mem_total": "VRAM total",
    "pcie_gen": "PCIe link",
    "pcie_width": "PCIe link width",
    "pcie_max_gen": "PCIe maximum",
    "pcie_max_width": "PCIe maximum width",
    "pcie_rx_bps": "PCIe throughput",
    "pcie_tx_bps": "PCIe throughput",
    "pcie_replay_count": "PCIe replay counter",
    "violation_board_s": "violation counters",
    "cuda_driver_version": "driver CUDA version",
    "persistence_mode": "persistence mode",
    "max_sm_clock_mhz": "maximum SM clock",
    "host.mem_available": "host memory",
    "host.iowait_pct": "host iowait",
    "host.cpu_percent": "host CPU",
    "pcie_topology": "PCIe topology",
    "nvlink_remote": "NVLink layout",
}


@dataclass(frozen=True, slots=True)
class NotJudged:
    rule: RuleId
    gpu: int | None  # None: the host
    missing: str

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule.value, "gpu": self.gpu, "missing": self.missing}


@dataclass(frozen=True, slots=True)
class Judgement:
    """How far the advisor's verdict reaches at one moment."""

    seen_s: float  # history actually sampled
    needed_s: float  # the history the rules need before "nothing found" means anything
    not_judged: tuple[NotJudged, ...] = ()
    readings: int = 0

    @property
    def gathering(self) -> bool:
        return self.readings == 0 or self.seen_s < self.needed_s

    @property
    def complete(self) -> bool:
        """Everything was judged: enough history, and every rule on every GPU decided."""
        return not self.gathering and not self.not_judged

    def gathering_text(self) -> str:
        """'gathering: 4 s of 10 s'."""
        return f"gathering: {fmt_duration(self.seen_s)} of {fmt_duration(self.needed_s)}"

    def missing_on(self, gpu: int) -> str | None:
        """'not judged: utilisation (MIG mode)' for a GPU that some rule could not judge."""
        missing: list[str] = []
        for item in self.not_judged:
            if item.gpu == gpu and item.missing not in missing:
                missing.append(item.missing)
        return "not judged: " + "; ".join(missing) if missing else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "complete": self.complete,
            "gathering": self.gathering,
            "sampled_s": round(self.seen_s, 3),
            "needed_s": self.needed_s,
            "not_judged": [item.to_dict() for item in self.not_judged],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Judgement:
        return cls(
            seen_s=float(data.get("sampled_s", 0.0)),
            needed_s=float(data.get("needed_s", 0.0)),
            not_judged=tuple(
                NotJudged(RuleId(i["rule"]), i.get("gpu"), str(i.get("missing", "")))
                for i in data.get("not_judged", ())
            ),
            readings=1 if data.get("sampled_s") is not None else 0,
        )


def _present(name: str, sample: GpuSample, device: DeviceInfo, host: HostSample | None) -> bool:
    if name.startswith("host."):
        return host is not None and getattr(host, name[5:], None) is not None
    if hasattr(sample, name):
        return getattr(sample, name) is not None
    return getattr(device, name, None) is not None


_PARSED: dict[RuleId, tuple[tuple[str, ...], ...]] = {}


def _options(rule: Rule) -> tuple[tuple[str, ...], ...]:
    """``rule.needs`` as alternatives ("a|b": either will do), parsed once per rule."""
    parsed = _PARSED.get(rule.id)
    if parsed is None:
        parsed = _PARSED[rule.id] = tuple(tuple(need.split("|")) for need in rule.needs)
    return parsed


def missing_readings(
    rule: Rule, sample: GpuSample, device: DeviceInfo, host: HostSample | None
) -> str | None:
    """What ``rule`` lacks on this GPU to judge it, in words; None if it has it all."""
    names = {name for options in _options(rule) for name in options}
    return _missing(rule, _readings_present(names, sample, device, host), device.mig_mode)


def _readings_present(
    names: Iterable[str], sample: GpuSample, device: DeviceInfo, host: HostSample | None
) -> frozenset[str]:
    return frozenset(name for name in names if _present(name, sample, device, host))


def _missing(rule: Rule, present: frozenset[str], mig: bool | None) -> str | None:
    missing: list[str] = []
    for options in _options(rule):
        if not any(name in present for name in options):
            words = " or ".join(dict.fromkeys(WORDS.get(n, n) for n in options))
            if words not in missing:
                missing.append(words)
    if not missing:
        return None
    text = ", ".join(missing)
    if mig and "utilisation" in text:
        text += " (MIG mode)"
    return f"{rule.id}: no {text}"


# (the rules, the readings a GPU has, MIG mode) -> what each rule lacks. A GPU's readings
# are the same from one judgement to the next: the words are worked out once, not 28 x N
# times a judgement.
_Lacks = tuple[tuple[RuleId, str], ...]
_GPU_MISSING: dict[tuple[tuple[RuleId, ...], frozenset[str], bool], _Lacks] = {}


def _gpu_missing(
    rules: tuple[Rule, ...], ids: tuple[RuleId, ...], present: frozenset[str], mig: bool
) -> _Lacks:
    """What each of ``rules`` (their ``ids``) lacks on a GPU with these readings."""
    key = (ids, present, mig)
    found = _GPU_MISSING.get(key)
    if found is None:
        pairs = ((r.id, _missing(r, present, mig)) for r in rules)
        found = tuple((rule_id, text) for rule_id, text in pairs if text is not None)
        if len(_GPU_MISSING) > 256:
            _GPU_MISSING.clear()
        _GPU_MISSING[key] = found
    return found


def judge_coverage(
    rules: Sequence[Rule],
    devices: Mapping[int, DeviceInfo],
    frame: Frame | None,
    times: Sequence[float],
    t: Thresholds,
    undecided: Iterable[tuple[tuple[RuleId, int | None], str]] = (),
) -> Judgement:
    needed = max((r.history_needed_s(t) for r in rules), default=0.0)
    seen = times[-1] - times[0] if len(times) > 1 else 0.0
    items: dict[tuple[RuleId, int | None], NotJudged] = {}
    host_rules = [r for r in rules if r.needs and all(n.startswith("host.") for n in r.needs)]
    if frame is not None and any(not s.lost for s in frame.gpus):
        for rule in host_rules:  # judged once, for the host
            missing = missing_readings(rule, GpuSample(index=-1), DeviceInfo(-1, ""), frame.host)
            if missing is not None:
                items[(rule.id, None)] = NotJudged(rule.id, None, missing)
    if frame is not None:
        gpu_rules = tuple(r for r in rules if r not in host_rules)
        ids = tuple(r.id for r in gpu_rules)
        names = {name for rule in gpu_rules for options in _options(rule) for name in options}
        for sample in frame.gpus:
            device = devices.get(sample.index)
            if device is None or sample.lost:
                continue
            present = _readings_present(names, sample, device, frame.host)
            for rule_id, missing in _gpu_missing(gpu_rules, ids, present, bool(device.mig_mode)):
                items[(rule_id, sample.index)] = NotJudged(rule_id, sample.index, missing)
    for (rule_id, gpu), why in undecided:
        items.setdefault((rule_id, gpu), NotJudged(rule_id, gpu, f"{rule_id}: {why}"))
    return Judgement(
        seen_s=seen, needed_s=needed, not_judged=tuple(items.values()), readings=len(times)
    )


def describe(judgement: Judgement) -> list[str]:
    """The judgement as lines for a report: what was sampled, what could not be judged."""
    lines = []
    if judgement.gathering:
        lines.append(
            f"{judgement.gathering_text()}: too little history to judge yet "
            f"(the rules need {fmt_duration(judgement.needed_s)})"
        )
    for item in judgement.not_judged:
        where = "host" if item.gpu is None else f"GPU {item.gpu}"
        lines.append(f"not judged ({where}): {item.missing}")
    return lines
