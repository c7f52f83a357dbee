"""Cause 4 of the article: the PCIe link. Degraded, saturated, or erroring."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.advisor.context import Context, gb
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.core.model import DeviceInfo, GpuSample
from gputui.core.names import Metric, RuleId, Severity
from gputui.core.pcie import link_bandwidth
from gputui.core.units import fmt_duration


def _link(gen: int | None, width: int | None) -> str:
    capacity = link_bandwidth(gen, width)
    text = f"Gen{gen or '?'} x{width or '?'}"
    return f"{text} ({gb(capacity)})" if capacity else text


def _link_state(ctx: Context, sample: GpuSample, device: DeviceInfo) -> tuple[int, int] | None:
    """The best link the window saw under load (an idle link downshifts: never judged)."""
    if ctx.under_load(sample.index) is False:
        return None
    gen, width = _best_link(ctx, sample.index)
    if gen is None or width is None or device.pcie_max_gen is None or not device.pcie_max_width:
        return None
    return gen, width


def _best_link(ctx: Context, index: int) -> tuple[int | None, int | None]:
    """The best generation and width the link trained to in the window; None where the
    window did not read it."""
    gen = ctx.stats(index, Metric.PCIE_GEN)
    width = ctx.stats(index, Metric.PCIE_WIDTH)
    return (
        int(gen.max) if gen is not None else None,
        int(width.max) if width is not None else None,
    )


def link_degraded(ctx: Context) -> Iterator[Candidate]:
    for sample, device in ctx.samples():
        link = _link_state(ctx, sample, device)
        if link is None:
            continue
        cur_gen, cur_width = link
        # pcie_max_gen is what the card and the host allow together: the ceiling to judge
        # against. A newer card in an older host is limited by the host, not degraded.
        max_gen, max_width = device.pcie_max_gen or 0, device.pcie_max_width or 0
        if cur_gen >= max_gen and cur_width >= max_width:
            continue
        lines = [
            f"link {_link(cur_gen, cur_width)} under load over the last "
            f"{fmt_duration(ctx.sampled_s())}; the card and host together allow "
            f"{_link(max_gen, max_width)}"
        ]
        now, best = link_bandwidth(cur_gen, cur_width), link_bandwidth(max_gen, max_width)
        if now and best:
            lines.append(f"{100 * now / best:.0f} % of the bandwidth it could have")
        if cur_width < max_width:
            lines.append(f"width x{cur_width} of x{max_width}: lanes missing or shared")
        if cur_gen < max_gen:
            lines.append(f"trained to Gen{cur_gen} below the Gen{max_gen} it could run")
        replays = ctx.stats(sample.index, Metric.PCIE_REPLAY_COUNT, ctx.t.pcie_replay_window_s)
        if replays is not None and replays.last > replays.first:
            lines.append(f"replay counter +{replays.last - replays.first:.0f}: errors on this link")
        yield Candidate(
            rule=RuleId.PCIE_LINK_DEGRADED,
            severity=Severity.WARNING,
            gpu=sample.index,
            title="PCIe link below what the card and host allow",
            evidence=tuple(lines),
            remedies=(
                "Reseat the card in a full x16 slot wired to the CPU; check `nvidia-smi topo -m`",
                "Check risers and cables; set the slot to its maximum generation in the BIOS",
                "Check whether lanes are shared with other devices (NVMe, NICs) on this slot",
            ),
        )


def host_limited(ctx: Context) -> Iterator[Candidate]:
    for sample, device in ctx.samples():
        card, system = device.pcie_gpu_max_gen, device.pcie_max_gen
        if card is None or system is None or card <= system:
            continue
        link = _link_state(ctx, sample, device)
        if link is None or link[0] < system or link[1] < (device.pcie_max_width or 0):
            continue  # below even the host's ceiling: pcie-link-degraded says it
        yield Candidate(
            rule=RuleId.PCIE_HOST_LIMITED,
            severity=Severity.INFO,
            gpu=sample.index,
            title=f"The host limits this link to Gen{system}",
            evidence=(
                f"link {_link(*link)} under load: the most this host allows",
                f"the card itself supports Gen{card} ({_link(card, link[1])})",
            ),
            remedies=(
                "Nothing is degraded. A Gen-newer host (or slot) would double the bandwidth, "
                "which matters only if pcie-saturated shows up",
            ),
        )


def _carried_on(ctx: Context, sample: GpuSample) -> tuple[int | None, int | None]:
    """The link the window's traffic went over: the best it trained to in the window (an
    idle link downshifts to Gen1 at once, while the window's mean still holds the busy
    traffic); this tick's where the window did not read it."""
    gen, width = _best_link(ctx, sample.index)
    return (
        gen if gen is not None else sample.pcie_gen,
        width if width is not None else sample.pcie_width,
    )


def pcie_saturated(ctx: Context) -> Iterator[Candidate]:
    for sample, _device in ctx.samples():
        gen, width = _carried_on(ctx, sample)
        capacity = link_bandwidth(gen, width)
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
                    f"{_link(gen, width)} "
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
        "current PCIe generation and width, the maximum of card and host together",
        "not idle, the link's generation or width below what card and host allow over the "
        "whole window (warning), replays named when the counter rose",
        "reseat in a full x16 slot, risers, BIOS PCIe settings, shared lanes",
        link_degraded,
        needs=("pcie_gen", "pcie_width", "pcie_max_gen", "pcie_max_width"),
        never_claims="a degraded link on an idle GPU (links train down to save power), or "
        "when a newer card runs at the most an older host allows (pcie-host-limited)",
    ),
    Rule(
        RuleId.PCIE_HOST_LIMITED,
        "4 PCIe",
        "the card's own maximum generation, the maximum of card and host together, the link",
        "info: under load at the host's maximum, while the card supports a newer generation",
        "nothing degraded; a newer host only if the link saturates",
        host_limited,
        needs=("pcie_gen", "pcie_max_gen"),
        never_claims="a problem",
    ),
    Rule(
        RuleId.PCIE_SATURATED,
        "4 PCIe / 5 software",
        "PCIe RX/TX throughput, the link's generation and width over the window",
        "RX or TX >= {t.pcie_saturated:share} over the last {t.window_s:g} s of the capacity "
        "of the best link the window trained to (the one its traffic went over: an idle link "
        "downshifts at once)",
        "pinned memory + non_blocking copies, keep data on the GPU, fewer larger transfers, "
        "GPU-side augmentation",
        pcie_saturated,
        needs=("pcie_rx_bps|pcie_tx_bps", "pcie_gen"),
    ),
    Rule(
        RuleId.PCIE_ERRORS,
        "4 PCIe",
        "PCIe replay counter over the last {t.pcie_replay_window_s:g} s",
        "the counter rises by >= {t.pcie_replays_per_min:g} per minute (critical at "
        ">= {t.pcie_replays_critical_per_min:g} per minute)",
        "reseat, check riser/cable, another slot",
        pcie_errors,
        needs=("pcie_replay_count",),
    ),
)
