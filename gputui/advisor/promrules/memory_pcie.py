"""Memory and the PCIe link in the engine: VRAM growing toward full or at its ceiling
while the work stalls, memory held by an idle GPU, a degraded or saturated link, replays."""

from __future__ import annotations

from gputui.advisor.memory import LEAK_REMEDIES, VRAM_REMEDIES
from gputui.advisor.promrules.alert import GPU, Alert, on_node, value
from gputui.advisor.promrules.heat import make
from gputui.advisor.promrules.promql import Terms, duration, number
from gputui.core.dcgm import MIB
from gputui.core.names import RuleId, Severity
from gputui.core.units import fmt_duration


def vram(terms: Terms) -> list[Alert]:
    t = terms.t
    used, free = terms.sel("mem_used"), terms.sel("mem_free")
    total = f"({used} + {free} + ({terms.sel('mem_reserved')} or {used} * 0))"
    growth, recent = t.vram_growth_s, max(t.judge_min_s, t.vram_growth_s / 4)
    rate = f"deriv({used}[{duration(recent)}])"
    fast = number(t.vram_growth_bps / MIB)  # MiB/s
    growing = f"({rate} >= {fast})"
    if duration(growth) != duration(recent):  # over the window, and lately
        growing = f"(deriv({used}[{duration(growth)}]) >= {fast}) and {growing}"
    to_full = f"({free} / {rate})"
    texts = (
        "GPU memory growing toward full: out-of-memory errors ahead",
        f"full in about {value()} s at the rate of the last {fmt_duration(recent)}, growing "
        f">= {t.vram_growth_bps / 1e6:g} MB/s over the last {fmt_duration(growth)} and lately",
        LEAK_REMEDIES,
    )
    critical = f"({to_full} <= {number(t.vram_full_critical_s)}) and {growing}"
    soon = make(
        terms,
        RuleId.VRAM_PRESSURE,
        "GputuiVramFullSoon",
        Severity.CRITICAL,
        critical,
        texts,
        hold_s=growth,
    )
    later = make(
        terms,
        RuleId.VRAM_PRESSURE,
        "GputuiVramGrowing",
        Severity.WARNING,
        f"({to_full} <= {number(t.vram_full_warning_s)}) and {growing} unless ({critical})",
        texts,
        hold_s=growth,
    )
    return [soon, later, _ceiling(terms, used, total), _idle_held(terms, used)]


def _ceiling(terms: Terms, used: str, total: str) -> Alert:
    t = terms.t
    moved_s = max(t.vram_moved_s, t.vram_growth_s)
    share = f"100 * {terms.mean('mem_used', t.vram_mean_s)} / {total}"
    moved = (
        f"(max_over_time({used}[{duration(moved_s)}]) - min_over_time({used}[{duration(moved_s)}])"
        f" >= {number(t.vram_moved_pct / 100)} * {total})"
    )
    util = terms.sel("util_gpu")
    stalled = terms.subquery(
        f"{util} <= bool {number(t.starved_idle_util_pct)}", "avg_over_time", terms.window
    )
    work = f"({stalled} >= {number(t.starved_idle_fraction)})"
    recent = t.judge_min_s
    if t.vram_growth_s > recent:  # an earlier stretch to compare the last one with
        earlier = (
            f"avg_over_time({util}[{duration(t.vram_growth_s - recent)}] offset {duration(recent)})"
        )
        fell = f"{earlier} - avg_over_time({util}[{duration(recent)}])"
        work = f"({work} or ({fell} >= {number(t.vram_util_drop_pct)}))"
    return make(
        terms,
        RuleId.VRAM_PRESSURE,
        "GputuiVramCeiling",
        Severity.CRITICAL,
        f"({share} >= {number(t.vram_critical_pct)}) and {moved} and {work}",
        (
            "GPU memory at its ceiling while the GPU's work falls or stalls",
            f"{value()} % of the memory used, moved by >= {t.vram_moved_pct:g} % of it in the "
            f"last {fmt_duration(moved_s)}, while utilisation stalled (<= "
            f"{t.starved_idle_util_pct:g} %) in >= {100 * t.starved_idle_fraction:g} % of the "
            f"readings of the last {fmt_duration(terms.window)}",
            VRAM_REMEDIES,
        ),
    )


def _idle_held(terms: Terms, used: str) -> Alert:
    t = terms.t
    span = duration(t.idle_allocated_s)
    util = terms.sel("util_gpu")
    readings = 0.9 * t.idle_allocated_s / terms.scrape_s
    return make(
        terms,
        RuleId.IDLE_ALLOCATED,
        "GputuiIdleAllocated",
        Severity.WARNING,
        f"(min_over_time({used}[{span}]) / 1024 >= {number(t.idle_allocated_bytes / 2**30)}) "
        f"and (max_over_time({util}[{span}]) <= {number(t.idle_util_pct)}) "
        f"and (count_over_time({util}[{span}]) >= {number(readings)})",
        (
            "GPU memory held while the GPU does nothing",
            f"{value(1)} GiB of its memory held while utilisation stayed <= "
            f"{t.idle_util_pct:g} % for {fmt_duration(t.idle_allocated_s)}",
            (
                on_node(
                    f"a hung or finished job may still hold it: nvidia-smi -i {GPU} shows the "
                    "process; py-spy dump --pid PID shows where it waits"
                ),
                "End it if it is done, so others can use the GPU",
            ),
        ),
    )


def pcie(terms: Terms) -> list[Alert]:
    t = terms.t
    # the best link the window trained to, and what card and host allow: recorded once
    # (a term a generation over every GPU) for both link rules
    gen = terms.record("pcie_gen_max", terms.over("max_over_time", "pcie_gen", terms.window))
    width = terms.record("pcie_width_max", terms.over("max_over_time", "pcie_width", terms.window))
    top_gen, top_width = terms.sel("pcie_max_gen"), terms.sel("pcie_max_width")
    now = terms.record("pcie_link_bytes", terms.link_bytes(gen, width))
    best = terms.record("pcie_best_bytes", terms.link_bytes(top_gen, top_width))
    degraded = make(
        terms,
        RuleId.PCIE_LINK_DEGRADED,
        "GputuiPcieLinkDegraded",
        Severity.WARNING,
        terms.not_idle(
            f"(100 * {now} / {best}) and (({gen} < {top_gen}) or ({width} < {top_width}))"
        ),
        (
            "PCIe link below what the card and host allow",
            f"the best link the last {fmt_duration(terms.window)} trained to carries "
            f"{value()} % of the bandwidth the card and host allow together, while not idle",
            (
                "Reseat the card in a full x16 slot wired to the CPU; check `nvidia-smi topo -m`",
                "Check risers and cables; set the slot to its maximum generation in the BIOS",
                "Check whether lanes are shared with other devices (NVMe, NICs) on this slot",
            ),
        ),
    )
    full = number(100 * t.pcie_saturated)
    saturated = make(
        terms,
        RuleId.PCIE_SATURATED,
        "GputuiPcieSaturated",
        Severity.WARNING,
        f"(100 * {terms.mean('pcie_rx_bps')} / {now} >= {full}) "
        f"or (100 * {terms.mean('pcie_tx_bps')} / {now} >= {full})",
        (
            "PCIe link saturated",
            f"{value()} % of the link's capacity in one direction over the last "
            f"{fmt_duration(terms.window)} (>= {100 * t.pcie_saturated:g} %)",
            (
                "Use pinned memory (pin_memory=True) and .to(device, non_blocking=True)",
                "Keep data on the GPU between steps; move fewer, larger tensors",
                "Do augmentation on the GPU (e.g. NVIDIA DALI, torchvision v2 on CUDA)",
            ),
        ),
    )
    return [degraded, saturated, *_replays(terms)]


def _replays(terms: Terms) -> list[Alert]:
    t = terms.t
    per_min = f"60 * rate({terms.sel('pcie_replay_count')}[{duration(t.pcie_replay_window_s)}])"
    texts = (
        "PCIe replay errors: the link retransmits data",
        f"the replay counter rises by {value()} a minute over the last "
        f"{fmt_duration(t.pcie_replay_window_s)}",
        (
            "Signal integrity problem: reseat the card, check the riser or cable",
            "Try another slot; check `dmesg` for AER errors on this bus id",
        ),
    )
    critical = f"{per_min} >= {number(t.pcie_replays_critical_per_min)}"
    return [
        make(
            terms, RuleId.PCIE_ERRORS, "GputuiPcieReplaysHigh", Severity.CRITICAL, critical, texts
        ),
        make(
            terms,
            RuleId.PCIE_ERRORS,
            "GputuiPcieReplays",
            Severity.WARNING,
            f"({per_min} >= {number(t.pcie_replays_per_min)}) unless ({critical})",
            texts,
        ),
    ]
