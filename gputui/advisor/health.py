"""Hardware health: a lost GPU, uncorrectable memory errors, pending row remaps."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate
from gputui.advisor.rule import Rule
from gputui.names import Metric, RuleId, Severity
from gputui.units import fmt_duration
from gputui.xid import describe_xid, xid_origin

_DRAIN = (
    "Drain the node: stop scheduling jobs on it",
    "Check `dmesg` / `journalctl -k` for Xid messages on this GPU",
    "Reset the GPU when idle (nvidia-smi -r, root) or reboot; RMA if it recurs",
)


def gpu_errors(ctx: Context) -> Iterator[Candidate]:
    for sample in ctx.frame.gpus:
        if sample.lost:
            yield Candidate(
                rule=RuleId.GPU_ERRORS,
                severity=Severity.CRITICAL,
                gpu=sample.index,
                title="GPU lost: it no longer answers the driver",
                evidence=("NVML reports the GPU as lost (typically Xid 79: fell off the bus)",),
                remedies=_DRAIN,
                hold_s=0.0,
            )
            continue
        lines = []
        ecc = ctx.history.stats(sample.index, Metric.ECC_VOLATILE_UNCORRECTED, ctx.t.window_s)
        if ecc is not None and ecc.last > ecc.first:
            lines.append(
                f"uncorrectable ECC errors +{ecc.last - ecc.first:.0f} in the last "
                f"{fmt_duration(ecc.span_s)} (total {ecc.last:.0f} since the driver loaded)"
            )
        if sample.remapped_rows_pending:
            lines.append("a memory row remap is pending: it takes effect at the next GPU reset")
        xids = [
            x
            for x in ctx.history.xids(sample.index, ctx.t.xid_window_s)
            if xid_origin(x.code) != "benign"
        ]
        hardware_xid = any(xid_origin(x.code) == "hardware" for x in xids)
        for xid in xids[-3:]:
            lines.append(
                f"Xid {xid.code} ({describe_xid(xid.code)}), "
                f"{fmt_duration(max(0.0, ctx.frame.time - xid.time))} ago"
            )
        if xids and not hardware_xid:
            lines.append(
                "Xid 13/31/43 usually come from the application (a bad kernel or memory "
                "access): check its log before the hardware"
            )
        if not lines:
            continue
        rising = ecc is not None and ecc.last > ecc.first
        yield Candidate(
            rule=RuleId.GPU_ERRORS,
            severity=Severity.CRITICAL if rising or hardware_xid else Severity.WARNING,
            gpu=sample.index,
            title="Hardware errors on this GPU",
            evidence=tuple(lines),
            remedies=_DRAIN,
            hold_s=0.0,
        )


def not_reporting(ctx: Context) -> Iterator[Candidate]:
    """A GPU the source lists but did not read this tick, while others were read: on a
    remote source, its node's exporter or its scrape stopped."""
    read = {s.index for s in ctx.frame.gpus}
    if not read:
        return  # nothing at all this tick: the source's own failure, said in its notes
    for index, device in ctx.devices.items():
        if index in read:
            continue
        last = ctx.history.last_seen(index)
        since = (
            f"for {fmt_duration(ctx.frame.time - last)}" if last is not None else "since the start"
        )
        where = f" on node {device.node}" if device.node else ""
        yield Candidate(
            rule=RuleId.NOT_REPORTING,
            severity=Severity.WARNING,
            gpu=index,
            title=f"No readings from this GPU{where}",
            evidence=(f"no reading from GPU {index}{where} {since}, while others report",),
            remedies=(
                "Check the node's dcgm-exporter (its pod or service) and that Prometheus "
                "still scrapes it (up{job=...} == 1 for its target)",
                "On the node itself: nvidia-smi; a GPU that fell off the bus shows as lost",
            ),
        )


RULES = (
    Rule(
        RuleId.GPU_ERRORS,
        "hardware",
        "GPU lost, volatile uncorrectable ECC count, remapped rows pending, Xid events",
        "a GPU is lost, uncorrectable ECC errors rise or a hardware Xid was reported in the "
        "last {t.xid_window_s:g} s (critical); a row remap is pending or an application Xid "
        "(13, 31, 43) was reported (warning); at once, no waiting",
        "drain the node, check dmesg for Xid, reset or RMA",
        gpu_errors,
        needs_history="",
        never_claims="that a board without ECC reporting (most GeForce cards) is error-free",
    ),
    Rule(
        RuleId.NOT_REPORTING,
        "hardware / remote",
        "which GPUs the source read this tick, the last time each was read",
        "a GPU the source lists gave no reading while others did, for {t.start_after_s:g} s",
        "check the node's exporter and the Prometheus target",
        not_reporting,
        never_claims="that the GPU itself failed: only that its readings stopped arriving",
    ),
)
