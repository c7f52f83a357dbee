"""What the advisor could judge: "no findings" is a verdict only over what it saw.

Every rule declares the history it needs and the readings it cannot do without. Until a
GPU has that history every surface says it is still judging and for how long. A rule that
lacks a reading is one of three things, never a clean bill of health by silence:

- **not judged** (``Undecided.UNREADABLE``): the reading should be there and is not (no
  permission, a GPU that stopped answering, a source that cannot say): ``doctor`` exits 4;
- **not applicable** (``Undecided.NOT_OFFERED``): the board, driver or machine does not
  offer it at all (NVML's NotSupported, a NUMA node of -1): listed, calmly, not exit 4;
- **watching** (``Undecided.PENDING``): the rule's verdict needs a longer stretch than was
  sampled (an abandoned allocation after 5 minutes, a leak's growth over a minute, a hang
  after two): listed, and ``doctor`` exits 4: no all-clear over what was not watched.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from operator import attrgetter

from gputui.advisor.context import Context
from gputui.advisor.rule import Rule
from gputui.core.config import Thresholds
from gputui.core.dcgm import CARRIED
from gputui.core.judgement import Judgement, NotJudged, Undecided, grouped, not_offered
from gputui.core.model import DeviceInfo, Frame, GpuSample, HostSample
from gputui.core.names import PROCESS_ONLY, RULES_NEEDING_HOST, SETTINGS_ONLY, RuleId
from gputui.core.units import fmt_duration

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


#: what a source of exporter metrics (dcgm-exporter's pages, gputui export's, a Prometheus
#: server's) never carries, by the rules that read it beyond their ``needs``
_PROCESSES = "GPU processes or host readings"
NOT_EXPORTED: Mapping[RuleId, str] = {
    **{rule: _PROCESSES for rule in RULES_NEEDING_HOST},
    RuleId.GPU_SHARED: _PROCESSES,
    **{rule: "process environments or CUDA libraries" for rule in PROCESS_ONLY},
    **{rule: "job or host settings" for rule in SETTINGS_ONLY},
    RuleId.COMPUTE_MODE: "compute mode or processes waiting for a GPU",
    RuleId.MODE_PENDING: "pending MIG or ECC modes",
    RuleId.FABRIC_NOT_READY: "GPU fabric state",
    RuleId.PCIE_HOST_LIMITED: "maximum PCIe generation of the card alone",
}
#: how a remote source's blind rules are listed: one line names them all
THIS_SOURCE = "not applicable to this source: dcgm-exporter's metrics carry no "


def never_fed(rules: Sequence[Rule]) -> dict[RuleId, str]:
    """The rules a source of exporter metrics can never feed, and what it lacks for each:
    listed as not applicable to this source, never as "not judged" (no setting of the
    exporter would let them judge)."""
    out: dict[RuleId, str] = {}
    for rule in rules:
        lacks = [
            " or ".join(dict.fromkeys(WORDS.get(n, n) for n in options))
            for options in _options(rule)
            if not any(n in CARRIED for n in options)
        ]
        if rule.id in NOT_EXPORTED:
            lacks.insert(0, NOT_EXPORTED[rule.id])
        if lacks:
            out[rule.id] = ", ".join(dict.fromkeys(lacks))
    return out


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
) -> tuple[str, Undecided] | None:
    """What ``rule`` lacks on this GPU to judge it, in words, and whether that makes it not
    judged or not applicable; None if it has it all."""
    names = {name for options in _options(rule) for name in options}
    present = _readings_present(names, sample, device, host)
    return _missing(rule, present, not_offered(sample, device), device.mig_mode)


def _readings_present(
    names: Iterable[str], sample: GpuSample, device: DeviceInfo, host: HostSample | None
) -> frozenset[str]:
    return frozenset(name for name in names if _present(name, sample, device, host))


#: a set of reading names -> how to read them: per place (the GPU's sample, its facts, the
#: host), the names read there and one attrgetter for all of them; worked out once a set
_Reader = tuple[tuple[str, ...], Callable[[object], tuple[object, ...]]]
_READERS: dict[frozenset[str], tuple[_Reader, _Reader, _Reader]] = {}


def _reader(names: Sequence[str], attributes: Sequence[str]) -> _Reader:
    """``names`` and a getter of their ``attributes`` as one tuple."""
    if not attributes:
        return (), lambda _obj: ()
    if len(attributes) == 1:
        one = attrgetter(attributes[0])
        return tuple(names), lambda obj: (one(obj),)
    return tuple(names), attrgetter(*attributes)


def _readers(names: frozenset[str]) -> tuple[_Reader, _Reader, _Reader]:
    """Where ``_present`` looks for each name: a host reading, else the sample's attribute
    where it has one, else the GPU's facts' (a name found nowhere is never present)."""
    found = _READERS.get(names)
    if found is None:
        ordered = sorted(names)
        host = [n for n in ordered if n.startswith("host.") and hasattr(HostSample, n[5:])]
        gpu = [n for n in ordered if not n.startswith("host.") and hasattr(GpuSample, n)]
        facts = [
            n
            for n in ordered
            if not n.startswith("host.") and n not in gpu and hasattr(DeviceInfo, n)
        ]
        found = _READERS[names] = (
            _reader(gpu, gpu),
            _reader(facts, facts),
            _reader(host, [n[5:] for n in host]),
        )
    return found


def _present_of(
    names: frozenset[str], sample: GpuSample, device: DeviceInfo, host: HostSample | None
) -> frozenset[str]:
    """``_readings_present`` of a set of names, each place read in one call."""
    (gpu, of_sample), (facts, of_device), (hosted, of_host) = _readers(names)
    present = [n for n, v in zip(gpu, of_sample(sample), strict=True) if v is not None]
    present += [n for n, v in zip(facts, of_device(device), strict=True) if v is not None]
    if host is not None:
        present += [n for n, v in zip(hosted, of_host(host), strict=True) if v is not None]
    return frozenset(present)


def _missing(
    rule: Rule, present: frozenset[str], unsupported: frozenset[str], mig: bool | None
) -> tuple[str, Undecided] | None:
    missing: list[str] = []
    unreadable = utilisation = False
    for options in _options(rule):
        if not any(name in present for name in options):
            words = " or ".join(dict.fromkeys(WORDS.get(n, n) for n in options))
            if words not in missing:
                missing.append(words)
            unreadable |= not all(name in unsupported for name in options)
            utilisation |= "util_gpu" in options
    if not missing:
        return None
    text = ", ".join(missing)
    if mig and utilisation:  # MIG mode: the parent GPU's utilisation is not offered
        text += " (MIG mode)"
    if not unreadable:
        return f"{rule.id}: this board does not offer {text}", Undecided.NOT_OFFERED
    return f"{rule.id}: no {text}", Undecided.UNREADABLE


# (the rules, the readings a GPU has, those it does not offer, MIG mode) -> what each rule
# lacks. A GPU's readings are the same from one judgement to the next: the words are worked
# out once, not 28 x N times a judgement.
_Lacks = tuple[tuple[RuleId, str, Undecided], ...]
_GPU_MISSING: dict[tuple[tuple[RuleId, ...], frozenset[str], frozenset[str], bool], _Lacks] = {}


def _gpu_missing(
    rules: tuple[Rule, ...],
    ids: tuple[RuleId, ...],
    present: frozenset[str],
    unsupported: frozenset[str],
    mig: bool,
) -> _Lacks:
    """What each of ``rules`` (their ``ids``) lacks on a GPU with these readings."""
    key = (ids, present, unsupported, mig)
    found = _GPU_MISSING.get(key)
    if found is None:
        pairs = ((r.id, _missing(r, present, unsupported, mig)) for r in rules)
        found = tuple((rule_id, lack[0], lack[1]) for rule_id, lack in pairs if lack is not None)
        if len(_GPU_MISSING) > 256:
            _GPU_MISSING.clear()
        _GPU_MISSING[key] = found
    return found


def too_few_readings(
    rules: Sequence[Rule], ctx: Context, fired: Collection[tuple[RuleId, int | None]]
) -> list[NotJudged]:
    """Remote GPUs whose window holds too few distinct readings to judge, although the
    history is long enough (a node that answers in gaps, or slower than the others): every
    rule over the history that did not fire there could not judge it, and says so."""
    t = ctx.t
    if ctx.sampled_s(math.inf) + ctx.cadence_s < t.window_s:
        return []  # still gathering (the whole history, not this window's): said for all
    needed = max(2, math.ceil(t.min_points / 2))
    history_rules = [r for r in rules if r.needs_history]
    pace = f" (the source has a new one every {fmt_duration(ctx.cadence_s)})"
    pace = pace if ctx.cadence_s else ""
    text = f"too few readings to judge: fewer than {needed} in the last "
    text += f"{fmt_duration(t.window_s)}{pace}"
    out: list[NotJudged] = []
    remote = {sample.index for sample, device in ctx.samples() if device.node is not None}
    for gpu in sorted(remote):
        if ctx.readings(gpu)[0] >= needed:
            continue
        out += [
            NotJudged(rule.id, gpu, text, Undecided.UNREADABLE)
            for rule in history_rules
            if (rule.id, gpu) not in fired
        ]
    # More readings than that, but a window a rule asked for still held fewer than it
    # needs (a gap in the server's data, a slow read): that rule has not judged either.
    named = {(item.rule, item.gpu) for item in out}
    short = f"too few readings to judge: fewer than {t.min_points} in a window it needs{pace}"
    for rule_id, gpu in sorted(ctx.short, key=lambda k: (k[1], str(k[0]))):
        if rule_id is None or gpu not in remote or (rule_id, gpu) in fired:
            continue
        if (rule_id, gpu) not in named:
            out.append(NotJudged(rule_id, gpu, short, Undecided.UNREADABLE))
    return out


_Plan = tuple[
    Sequence[Rule],
    Thresholds,
    float,
    tuple[Rule, ...],
    tuple[Rule, ...],
    tuple[RuleId, ...],
    frozenset[str],
]
_PLANS: list[_Plan] = []


def _plan(rules: Sequence[Rule], t: Thresholds) -> _Plan:
    """What ``judge_coverage`` works out of its rules before looking at a GPU: the history
    they need (at ``t``), the host's rules, the GPUs' rules, their ids and the readings
    they name. An advisor asks with the same rules and, but where the cadence changes,
    the same thresholds every judgement: the last few kept, found by identity."""
    if not isinstance(rules, tuple):
        rules = tuple(rules)  # a list may change: a copy, never found again
    for plan in _PLANS:
        if plan[0] is rules and plan[1] is t:
            return plan
    host_rules = tuple(r for r in rules if r.needs and all(n.startswith("host.") for n in r.needs))
    gpu_rules = tuple(r for r in rules if r not in host_rules)
    plan = (
        rules,
        t,
        max((r.history_needed_s(t) for r in rules), default=0.0),
        host_rules,
        gpu_rules,
        tuple(r.id for r in gpu_rules),
        frozenset(name for rule in gpu_rules for options in _options(rule) for name in options),
    )
    _PLANS.insert(0, plan)
    del _PLANS[8:]
    return plan


def judge_coverage(
    rules: Sequence[Rule],
    devices: Mapping[int, DeviceInfo],
    frame: Frame | None,
    times: Sequence[float],
    t: Thresholds,
    undecided: Iterable[tuple[tuple[RuleId, int | None], tuple[str, Undecided]]] = (),
    sparse: Iterable[NotJudged] = (),
    never: Mapping[RuleId, str] | None = None,
) -> Judgement:
    """``never``: the rules the source can never feed (``never_fed``), left out of
    ``rules`` and listed once each as not applicable to it."""
    plan = _plan(rules, t)
    needed, host_rules, gpu_rules, ids, names = plan[2:]
    seen = times[-1] - times[0] if len(times) > 1 else 0.0
    items: dict[tuple[RuleId, int | None], NotJudged] = {}
    if frame is not None and any(not s.lost for s in frame.gpus):
        for rule in host_rules:  # judged once, for the host
            lack = missing_readings(rule, GpuSample(index=-1), DeviceInfo(-1, ""), frame.host)
            if lack is not None:
                items[(rule.id, None)] = NotJudged(rule.id, None, *lack)
    if frame is not None:
        for sample in frame.gpus:
            device = devices.get(sample.index)
            if device is None or sample.lost:
                continue
            present = _present_of(names, sample, device, frame.host)
            lacks = _gpu_missing(
                gpu_rules, ids, present, not_offered(sample, device), bool(device.mig_mode)
            )
            for rule_id, missing, kind in lacks:
                items[(rule_id, sample.index)] = NotJudged(rule_id, sample.index, missing, kind)
    for (rule_id, gpu), (why, kind) in undecided:
        items.setdefault((rule_id, gpu), NotJudged(rule_id, gpu, f"{rule_id}: {why}", kind))
    for item in sparse:
        items.setdefault((item.rule, item.gpu), item)
    for rule_id, what in (never or {}).items():
        text = f"{rule_id}: {THIS_SOURCE}{what}"
        items[(rule_id, None)] = NotJudged(rule_id, None, text, Undecided.NOT_OFFERED)
    return Judgement(
        seen_s=seen,
        needed_s=needed,
        undecided=tuple(items.values()),
        readings=len(times),
        step_s=seen / (len(times) - 1) if len(times) > 1 else 0.0,
    )


def describe(judgement: Judgement) -> list[str]:
    """What could not be judged, as lines for a report: readings that should be there and
    are not, and verdicts that need a longer watch than was sampled (the verdict says
    whether it is still judging; ``context_lines`` what does not apply here)."""
    lines = []
    for where, what in grouped(judgement.not_judged):
        lines.append(f"not judged ({where}): {what}")
    for where, what in grouped(judgement.watching):
        lines.append(f"watching ({where}): {what}")
    return lines


def context_lines(judgement: Judgement) -> list[str]:
    """What does not apply to this board: context, not problems."""
    lines = []
    offered = judgement.of(Undecided.NOT_OFFERED)
    for where, what in grouped([i for i in offered if THIS_SOURCE not in i.missing]):
        lines.append(f"not applicable ({where}): {what}")
    by_lack: dict[str, list[str]] = {}
    for item in offered:
        if THIS_SOURCE in item.missing:
            lack = item.missing.split(THIS_SOURCE, 1)[1]
            by_lack.setdefault(lack, []).append(str(item.rule))
    if by_lack:
        said = "; ".join(f"{lack} ({', '.join(rules)})" for lack, rules in by_lack.items())
        lines.append(f"{THIS_SOURCE}{said}")
    return lines
