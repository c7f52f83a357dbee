"""Cause 4 of the article: the PCIe link. Degraded, saturated, or erroring."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.advisor.context import Context, gb
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.names import Metric, RuleId, Severity
from gputui.pcie import link_bandwidth
from gputui.units import fmt_duration


def _link(gen: int | None, width: int | None) -> str:
    capacity = link_bandwidth(gen, width)
    text = f"Gen{gen or '?'} x{width or '?'}"
    return f"{text} ({gb(capacity)})" if capacity else text


def link_degraded(ctx: Context) -> Iterator[Candidate]:
    for sample, device in ctx.samples():
        # Links downshift at idle to save power: only a busy GPU's link is judged.
        if ctx.busy(sample.index) is None:
            continue
        gen = ctx.stats(sample.index, Metric.PCIE_GEN)
        width = ctx.stats(sample.index, Metric.PCIE_WIDTH)
        max_gen, max_width = device.pcie_max_gen, device.pcie_max_width
        if gen is None or width is None or max_gen is None or max_width is None:
            continue
        cur_gen, cur_width = int(gen.max), int(width.max)
        slot_limited = device.pcie_gpu_max_gen is not None and device.pcie_gpu_max_gen > max_gen
        if cur_gen >= max_gen and cur_width >= max_width and not slot_limited:
            continue
        lines = [
            f"link {_link(cur_gen, cur_width)} under load; the card and slot support "
            f"{_link(max_gen, max_width)}"
        ]
        now, best = link_bandwidth(cur_gen, cur_width), link_bandwidth(max_gen, max_width)
        if now and best:
            lines.append(f"{100 * now / best:.0f} % of the bandwidth it could have")
        if slot_limited:
            lines.append(
                f"the GPU itself supports Gen{device.pcie_gpu_max_gen}: the slot or platform "
                f"limits it to Gen{max_gen}"
            )
        yield Candidate(
            rule=RuleId.PCIE_LINK_DEGRADED,
            severity=Severity.WARNING,
            gpu=sample.index,
            title="PCIe link below what the card supports",
            evidence=tuple(lines),
            remedies=(
                "Reseat the card in a full x16 slot wired to the CPU; check `nvidia-smi topo -m`",
                "Check risers and cables; set the slot to its maximum generation in the BIOS",
                "Check whether lanes are shared with other devices (NVMe, NICs) on this slot",
            ),
        )


def pcie_saturated(ctx: Context) -> Iterator[Candidate]:
    for sample, _device in ctx.samples():
        capacity = link_bandwidth(sample.pcie_gen, sample.pcie_width)
        if not capacity:
            continue
        for metric, direction in (
            (Metric.PCIE_RX_BPS, "host to GPU"),
            (Metric.PCIE_TX_BPS, "GPU to host"),
        ):
            rate = ctx.stats(sample.index, metric)
            if rate is None or rate.mean < ctx.t.pcie_saturated * capacity:
                continue
            yield Candidate(
                rule=RuleId.PCIE_SATURATED,
                severity=Severity.WARNING,
                gpu=sample.index,
                title=f"PCIe link saturated ({direction})",
                evidence=(
                    f"{direction} {gb(rate.mean)} of {gb(capacity)} on "
                    f"{_link(sample.pcie_gen, sample.pcie_width)} "
                    f"({100 * rate.mean / capacity:.0f} %) "
                    f"over the last {fmt_duration(rate.span_s)}",
                ),
                remedies=(
                    "Use pinned memory (pin_memory=True) and .to(device, non_blocking=True)",
                    "Keep data on the GPU between steps; move fewer, larger tensors",
                    "Do augmentation on the GPU (e.g. NVIDIA DALI, torchvision v2 on CUDA)",
                ),
            )
            break


def pcie_errors(ctx: Context) -> Iterator[Candidate]:
    for sample, _device in ctx.samples():
        replays = ctx.stats(sample.index, Metric.PCIE_REPLAY_COUNT, ctx.t.pcie_replay_window_s)
        if replays is None or replays.span_s <= 0:
            continue
        rise = replays.last - replays.first
        per_min = rise * 60.0 / replays.span_s
        if rise <= 0 or per_min < ctx.t.pcie_replays_per_min:
            continue
        yield Candidate(
            rule=RuleId.PCIE_ERRORS,
            severity=Severity.CRITICAL
            if per_min >= ctx.t.pcie_replays_critical_per_min
            else Severity.WARNING,
            gpu=sample.index,
            title="PCIe replay errors: the link retransmits data",
            evidence=(
                f"replay counter +{rise:.0f} in {fmt_duration(replays.span_s)} "
                f"({per_min:.0f} per minute), total {replays.last:.0f}",
            ),
            remedies=(
                "Signal integrity problem: reseat the card, check the riser or cable",
                "Try another slot; check `dmesg` for AER errors on this bus id",
            ),
        )


RULES = (
    Rule(
        RuleId.PCIE_LINK_DEGRADED,
        "4 PCIe",
        "current and maximum PCIe generation and width (GPU and slot)",
        "under load, the link's generation or width below the maximum over the whole window "
        "(an idle link downshifts to save power and is never judged)",
        "reseat in a full x16 slot, risers, BIOS PCIe settings, shared lanes",
        link_degraded,
    ),
    Rule(
        RuleId.PCIE_SATURATED,
        "4 PCIe / 5 software",
        "PCIe RX/TX throughput, current link capacity",
        "RX or TX >= {t.pcie_saturated:share} of the current link's capacity over the last "
        "{t.window_s:g} s",
        "pinned memory + non_blocking copies, keep data on the GPU, fewer larger transfers, "
        "GPU-side augmentation",
        pcie_saturated,
    ),
    Rule(
        RuleId.PCIE_ERRORS,
        "4 PCIe",
        "PCIe replay counter over the last {t.pcie_replay_window_s:g} s",
        "the counter rises by >= {t.pcie_replays_per_min:g} per minute (critical at "
        ">= {t.pcie_replays_critical_per_min:g} per minute)",
        "reseat, check riser/cable, another slot",
        pcie_errors,
    ),
)
